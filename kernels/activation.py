"""Activations and their gradients.

Gradient kernels take the forward *output* y where that is enough (relu, sigmoid, tanh, softmax), and the forward
input x where it is not (leaky_relu, gelu).
"""
import math

import numpy


def relu(xp, x):
    return xp.maximum(x, x.dtype.type(0))


def relu_grad(xp, dy, y):
    """dy where the output is positive (i.e. x > 0), else 0."""
    # a product with the boolean mask: several times faster than xp.where on unpredictable signs
    return dy * (y > 0)


def sigmoid(xp, x):
    """1 / (1 + exp(-x)), without overflow warnings.

    For x below about -88 (float32) exp(-x) overflows to inf, and 1 / (1 + inf) = 0 is the right value to within
    the smallest normal number: the overflow is expected, so it is silenced rather than avoided. Nothing cancels,
    so small results keep full relative precision down to there (below it they are 0, not subnormal, as in
    PyTorch), and the formula stays several times faster than the two-sided one, which must pick
    exp(x) / (1 + exp(x)) element by element for negative x. Half precision is computed in float32, where its whole
    range is representable.
    """
    if x.dtype.kind == "f" and x.dtype.itemsize < 4:
        return sigmoid(xp, x.astype(xp.float32)).astype(x.dtype)
    with numpy.errstate(over="ignore"):
        return 1 / (1 + xp.exp(-x))


def sigmoid_grad(xp, dy, y):
    return dy * y * (1 - y)


def tanh(xp, x):
    return xp.tanh(x)


def tanh_grad(xp, dy, y):
    return dy * (1 - y * y)


def leaky_relu(xp, x, *, alpha=0.2):
    """x for x > 0, alpha * x otherwise (legacy default alpha = 0.2)."""
    return xp.where(x > 0, x, x * x.dtype.type(alpha))


def leaky_relu_grad(xp, dy, x, *, alpha=0.2):
    return xp.where(x > 0, dy, dy * dy.dtype.type(alpha))


# --- the normal CDF, for the exact (erf-based) GELU -----------------------------------------------------------------
# numpy has no erf/erfc and the kernels must not depend on scipy. erfc(a) = erfcx(a) exp(-a²) for a >= 0, where the
# scaled erfcx varies slowly (about 1 / (a √π)): on [0, 8) it is cut into intervals of width 0.5, and on each one a
# degree-12 Chebyshev interpolant of erfcx (fitted once, at import, from math.erfc) is summed by Clenshaw's
# recurrence; erfc(8) = 1e-29 and beyond is taken as 0. Φ(x) = erfc(-x/√2) / 2 is read from erfc(|x|/√2) on both
# sides, so that its left tail keeps its relative precision (1 + erf(x/√2) would cancel): about 1e-14 relative.
_ERFC_WIDTH = 0.5
_ERFC_LIMIT = 8.0
_ERFC_DEGREE = 12


def _fit_erfcx_table():
    edges = numpy.arange(0.0, _ERFC_LIMIT, _ERFC_WIDTH)
    nodes = numpy.cos(numpy.pi * (numpy.arange(_ERFC_DEGREE + 1) + 0.5) / (_ERFC_DEGREE + 1))
    rows = []
    for left in edges:
        points = [left + _ERFC_WIDTH / 2 * (1 + t) for t in nodes]
        rows.append(numpy.polynomial.chebyshev.chebfit(nodes, [math.erfc(a) * math.exp(a * a) for a in points],
                                                       _ERFC_DEGREE))
    # one row per Chebyshev order, so that each Clenshaw step is a single gather
    return numpy.array(rows).T


_ERFCX_TABLE = _fit_erfcx_table()
_ERFCX_TABLES = {}  # (array module, dtype) -> the table as an array of that module


def _erfc_nonnegative(xp, a):
    """erfc(a) for a >= 0 (or NaN), same floating dtype."""
    key = (xp.__name__, numpy.dtype(a.dtype).str)
    table = _ERFCX_TABLES.get(key)
    if table is None:
        table = _ERFCX_TABLES[key] = xp.asarray(_ERFCX_TABLE, dtype=a.dtype)
    inside = a < _ERFC_LIMIT
    a_in = xp.where(inside, a, 0)  # NaN and the tail read interval 0; their value is set at the end
    interval = xp.floor(a_in / a.dtype.type(_ERFC_WIDTH)).astype(xp.int64)
    t = (a_in - interval.astype(a.dtype) * a.dtype.type(_ERFC_WIDTH)) * a.dtype.type(2 / _ERFC_WIDTH) - 1
    b1 = xp.zeros_like(a)
    b2 = xp.zeros_like(a)
    for order in range(_ERFC_DEGREE, 0, -1):
        b1, b2 = 2 * t * b1 - b2 + xp.take(table[order], interval), b1
    value = (t * b1 - b2 + xp.take(table[0], interval)) * xp.exp(-a_in * a_in)
    return xp.where(inside, value, xp.where(a >= _ERFC_LIMIT, a.dtype.type(0), a))


_INV_SQRT2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def _normal_cdf(xp, x):
    half_tail = 0.5 * _erfc_nonnegative(xp, xp.abs(x) * x.dtype.type(_INV_SQRT2))
    return xp.where(x < 0, half_tail, 1 - half_tail)


def gelu(xp, x):
    """Exact GELU, x Φ(x) (Φ the standard normal CDF = (1 + erf(x / √2)) / 2), as the legacy `flow.math.gelu`;
    half precision is computed in float32."""
    if x.dtype.itemsize < 4:
        return gelu(xp, x.astype(xp.float32)).astype(x.dtype)
    with numpy.errstate(invalid="ignore"):  # -inf · Φ(-inf) = -inf · 0: NaN, as in PyTorch
        return x * _normal_cdf(xp, x)


def gelu_grad(xp, dy, x):
    """dy · (Φ(x) + x φ(x)); takes the forward input x."""
    if x.dtype.itemsize < 4:
        return gelu_grad(xp, dy.astype(xp.float32), x.astype(xp.float32)).astype(dy.dtype)
    clamped = xp.minimum(xp.abs(x), x.dtype.type(100))  # φ(100) is 0 already; x² must not overflow
    pdf = x.dtype.type(_INV_SQRT_2PI) * xp.exp(-0.5 * clamped * clamped)
    with numpy.errstate(invalid="ignore"):  # x φ(x) at ±inf: NaN, as in PyTorch
        return (dy * (_normal_cdf(xp, x) + x * pdf)).astype(dy.dtype, copy=False)


def softmax(xp, x, *, axis=-1):
    # shifting by the max keeps exp() in (0, 1]
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    e /= xp.sum(e, axis=axis, keepdims=True)
    return e


def softmax_grad(xp, dy, y, *, axis=-1):
    return y * (dy - xp.sum(dy * y, axis=axis, keepdims=True))
