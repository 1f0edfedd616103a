"""OneFlow 0.9's elementwise functions of its API reference (oneflow.rst / tensor.rst) that compose registered ops:
`addcdiv`, `addcmul`, `clamp_min`, `clamp_max`, `log10`, `trunc`,
`logical_xor`, `isclose`, `allclose`, `is_nonzero`, and the whole-tensor `equal` (their in-place forms are in
`math_methods.py`, which writes into tensors).

Each is a composition of registered ops through `functional.py`, so it runs eagerly, inside nn.Graph and on global
tensors through the ops' SBP signatures, and autograd follows the ops' rules (no new kernel). Signatures and
defaults are OneFlow v0.9.0's `oneflow/core/functional/functional_api.yaml` (addcmul/addcdiv `(input, tensor1,
tensor2, *, value=1)`, clamp_min `(input, min)`, isclose `(input, other, atol=1e-08, rtol=1e-05,
equal_nan=False)`, logical_xor with a tensor or a scalar on either side, equal returning a Python bool) and
`python/oneflow/framework/tensor.py` (`is_nonzero`, its messages).
"""

from oneflow_compat._global import functional as F
from oneflow_compat._global.tensor import BOOL, Tensor


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value * tensor1 * tensor2 (the three broadcast together)."""
    F._check(input, "addcmul")
    return F.add(input, F.mul(F.mul(tensor1, tensor2), value))


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value * tensor1 / tensor2 (the three broadcast together)."""
    F._check(input, "addcdiv")
    return F.add(input, F.mul(F.div(tensor1, tensor2), value))


def clamp_min(input, min):  # noqa: A002
    """max(input, min) elementwise."""
    return F.clamp(F._check(input, "clamp_min"), min=min)


def clamp_max(input, max):  # noqa: A002
    """min(input, max) elementwise."""
    return F.clamp(F._check(input, "clamp_max"), max=max)


def log10(input):  # noqa: A002
    """The base-10 logarithm (floating; integer inputs become float32)."""
    return F.log10(input)


def trunc(input):  # noqa: A002
    """Rounds toward zero (floor above 0, ceil below); integer tensors are returned as they are."""
    x = F._check(input, "trunc")
    if not x.dtype.is_floating:
        return F.clone(x)
    return F.where(F.ge(x, 0), F.floor(x), F.ceil(x))


def _truth(x):
    return F.ne(x, 0) if isinstance(x, Tensor) else bool(x)


def logical_xor(input, other):  # noqa: A002
    """True where exactly one of input and other is non-zero (a scalar on either side broadcasts)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("logical_xor(): expected a Tensor argument")
    a, b = _truth(input), _truth(other)
    if not isinstance(a, Tensor):
        a, b = b, a
    if not isinstance(b, Tensor):
        return F.logical_not(a) if b else F.cast(a, BOOL)
    return F.ne(a, b)


def isclose(input, other, atol=1e-08, rtol=1e-05, equal_nan=False):  # noqa: A002
    """|input - other| <= atol + rtol * |other| elementwise (infinities close only to themselves; NaNs close to
    NaNs with `equal_nan`), a bool tensor."""
    # (IsCloseFunctor moves no CPU scalar: inputs on two devices are refused, functional/impl/math_functor.cpp)
    x, y = F._tensor_pair(F._check(input, "isclose"), other, "isclose", moves=False)
    if x.dtype is BOOL:
        return F.eq(x, y)
    same = F.eq(x, y)
    if not x.dtype.is_floating:
        xf, yf = F.cast(x, _float_of(x)), F.cast(y, _float_of(y))
    else:
        xf, yf = x, y
    from oneflow_compat._global import tensor_functions as TF

    finite = TF.logical_and(TF.isfinite(xf), TF.isfinite(yf))
    both_nan = TF.logical_and(TF.isnan(xf), TF.isnan(yf)) if equal_nan else None
    xf, yf = F.where(finite, xf, 0.0), F.where(finite, yf, 0.0)  # (no inf - inf computed)
    diff = F.abs(F.sub(xf, yf))
    close = F.le(diff, F.add(F.mul(F.abs(yf), float(rtol)), float(atol)))
    out = TF.logical_or(same, TF.logical_and(close, finite))
    if equal_nan:
        out = TF.logical_or(out, both_nan)
    return out


def _float_of(x):
    from oneflow_compat.ir import dtypes

    return dtypes.float64 if x.dtype is dtypes.int64 else dtypes.float32


def allclose(input, other, atol=1e-08, rtol=1e-05, equal_nan=False):  # noqa: A002
    """Whether every element of input is close to other's (`isclose`), a Python bool (OneFlow 0.9's
    Tensor.allclose takes atol before rtol)."""
    from oneflow_compat._global import tensor_functions as TF

    return bool(TF.all(isclose(input, other, atol=atol, rtol=rtol, equal_nan=equal_nan)).item())


def equal(input, other):  # noqa: A002
    """True if input and other have the same shape and elements, a Python bool (OneFlow 0.9's `equal`)."""
    from oneflow_compat._global import tensor_functions as TF

    F._check(input, "equal")
    F._check(other, "equal")
    if tuple(input.shape) != tuple(other.shape):
        return False
    if input.numel() == 0:
        return True
    return bool(TF.all(F.eq(input, other)).item())


def is_nonzero(input):  # noqa: A002
    """Whether a one-element tensor is not zero; RuntimeError for no or several elements."""
    n = F._check(input, "is_nonzero").numel()
    if n == 0:
        raise RuntimeError("bool value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("bool value of Tensor with more than one value is ambiguous")
    return bool(input.numpy().item())
