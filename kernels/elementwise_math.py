"""The math functions of OneFlow's `math_unary_elementwise` and `math_binary_elementwise` op families that the
basic elementwise kernels (elementwise.py) do not cover: inverse and hyperbolic trigonometry, tan, erf/erfc, lgamma,
rint, reciprocal_no_nan; atan2, floordiv, xdivy, xlogy; and each one's gradient.

A gradient kernel takes (dy, x) — binary ones (x, y, dz) — and returns dy times the derivative, as OneFlow's
`<op>_grad` / `<op>_x_grad` / `<op>_y_grad` kernels do (formulas: OneFlow v0.3.4
`oneflow/user/kernels/math_unary_elementwise_func.h` and `math_binary_elementwise_func.h`). Where OneFlow's
derivative is not the derivative — lgamma's is 0 there ("TODO: digamma"), float64 acosh's has the wrong sign — the
true derivative is used, so that the numeric gradient check holds.
"""
import math

import numpy

from . import special

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _t(x, value):
    return x.dtype.type(value)


# --- unary -------------------------------------------------------------------------------------------------------
def acos(xp, x):
    return xp.arccos(x)


def acos_grad(xp, dy, x):
    return -dy / xp.sqrt(1 - x * x)


def acosh(xp, x):
    return xp.arccosh(x)


def acosh_grad(xp, dy, x):
    return dy / xp.sqrt(x * x - 1)


def asin(xp, x):
    return xp.arcsin(x)


def asin_grad(xp, dy, x):
    return dy / xp.sqrt(1 - x * x)


def asinh(xp, x):
    return xp.arcsinh(x)


def asinh_grad(xp, dy, x):
    return dy / xp.sqrt(1 + x * x)


def atan(xp, x):
    return xp.arctan(x)


def atan_grad(xp, dy, x):
    return dy / (1 + x * x)


def atanh(xp, x):
    return xp.arctanh(x)


def atanh_grad(xp, dy, x):
    return dy / (1 - x * x)


def cosh(xp, x):
    return xp.cosh(x)


def cosh_grad(xp, dy, x):
    return dy * xp.sinh(x)


def sinh(xp, x):
    return xp.sinh(x)


def sinh_grad(xp, dy, x):
    return dy * xp.cosh(x)


def tan(xp, x):
    return xp.tan(x)


def tan_grad(xp, dy, x):
    c = xp.cos(x)
    return dy / (c * c)


def erf(xp, x):
    return special.erf(xp, x)


def erf_grad(xp, dy, x):
    return dy * (_t(x, _TWO_OVER_SQRT_PI) * xp.exp(-x * x))


def erfc(xp, x):
    return special.erfc(xp, x)


def erfc_grad(xp, dy, x):
    return dy * (_t(x, -_TWO_OVER_SQRT_PI) * xp.exp(-x * x))


def lgamma(xp, x):
    return special.lgamma(xp, x)


def lgamma_grad(xp, dy, x):
    return dy * special.digamma(xp, x)


def rint(xp, x):
    """Round half to even (C's rint under the default rounding mode)."""
    return xp.rint(x)


def reciprocal_no_nan(xp, x):
    """1 / x, and 0 where x is 0 (OneFlow's ReciprocalNoNanFunctor: `if (fabs(x) <= 0) return 0`)."""
    zero = x == 0
    with numpy.errstate(divide="ignore"):
        return xp.where(zero, _t(x, 0), 1 / xp.where(zero, _t(x, 1), x))


def reciprocal_no_nan_grad(xp, dy, x):
    """-dy / x², and 0 where x is 0."""
    zero = x == 0
    safe = xp.where(zero, _t(x, 1), x)
    return xp.where(zero, _t(dy, 0), -dy / (safe * safe))


# --- binary (same shapes) ---------------------------------------------------------------------------------------
def atan2(xp, x, y):
    return xp.arctan2(x, y)


def atan2_x_grad(xp, x, y, dz):
    return dz * (y / (x * x + y * y))


def atan2_y_grad(xp, x, y, dz):
    return dz * (-x / (x * x + y * y))


def floordiv(xp, x, y):
    """floor(x / y), as a float of x's dtype (OneFlow's FloordivFunctor)."""
    return xp.floor(x / y)


def zero_grad(xp, x, y, dz):
    """floordiv's gradients: zero (OneFlow's BackwardXGrad / BackwardYGrad)."""
    return xp.zeros_like(dz)


def xdivy(xp, x, y):
    """x / y, and 0 where x is 0 (even where y is 0)."""
    zero = x == 0
    with numpy.errstate(divide="ignore", invalid="ignore"):
        return xp.where(zero, _t(x, 0), x / y)


def xdivy_x_grad(xp, x, y, dz):
    with numpy.errstate(divide="ignore", invalid="ignore"):
        return xp.where((x == 0) | (dz == 0), _t(dz, 0), dz / y)


def xdivy_y_grad(xp, x, y, dz):
    """dz · xdivy(-x, y²)."""
    return dz * xdivy(xp, -x, y * y)


def xlogy(xp, x, y):
    """x · log(y), and 0 where x is 0 (even where y is 0)."""
    zero = x == 0
    with numpy.errstate(divide="ignore", invalid="ignore"):
        return xp.where(zero, _t(x, 0), x * xp.log(y))


def xlogy_x_grad(xp, x, y, dz):
    with numpy.errstate(divide="ignore", invalid="ignore"):
        return xp.where((x == 0) | (dz == 0), _t(dz, 0), dz * xp.log(y))


def xlogy_y_grad(xp, x, y, dz):
    """dz · xdivy(x, y)."""
    return dz * xdivy(xp, x, y)



# --- lower-triangle masks (OneFlow's tril / fused_scale_tril over the last two axes) ------------------------------
def _lower(xp, shape, diagonal):
    rows, cols = shape[-2], shape[-1]
    return (xp.arange(cols)[None, :] - xp.arange(rows)[:, None]) <= diagonal


def tril(xp, x, *, diagonal=0, fill_value=0):
    """x where column - row <= diagonal (in the last two axes), else fill_value."""
    return xp.where(_lower(xp, x.shape, diagonal), x, _t(x, fill_value))


def fused_scale_tril(xp, x, *, diagonal=0, fill_value=0, scale=1):
    """tril(x · scale, diagonal, fill_value)."""
    return xp.where(_lower(xp, x.shape, diagonal), x * _t(x, scale), _t(x, fill_value))
