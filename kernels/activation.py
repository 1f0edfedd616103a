"""Activations and their gradients.

Gradient kernels take the forward *output* y where that is enough (relu, sigmoid, tanh, softmax), and the forward
input x where it is not (leaky_relu, gelu).
"""
import math

import numpy

from . import cuda_nn, cuda_source


def relu(xp, x):
    return xp.maximum(x, x.dtype.type(0))


def relu_grad(xp, dy, y):
    """dy where the output is positive (i.e. x > 0), else 0."""
    if _one_device_launch(xp, dy, y):
        return cuda_nn.relu_grad(xp, dy, y)  # the same product in one launch (not a comparison, then a product)
    # a product with the boolean mask: several times faster than xp.where on unpredictable signs
    return dy * (y > 0)


def _one_device_launch(xp, *arrays):
    """Whether an elementwise gradient of `arrays` can be one raw launch (kernels/cuda_nn.py): a device module that
    builds raw kernels, arrays of one shape and one float dtype the kernels take, C-contiguous."""
    first = arrays[0]
    return xp is not numpy and hasattr(xp, "RawModule") and cuda_nn.supported(first.dtype) and all(
        a.dtype == first.dtype and a.shape == first.shape and a.flags.c_contiguous for a in arrays)


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
_ERFCX_TABLES = {}  # (array module, device, dtype) -> the table as an array of that module on that device


def _erfc_nonnegative(xp, a):
    """erfc(a) for a >= 0 (or NaN), same floating dtype."""
    # a device array lives on one GPU: the table is kept per device (the current one, where `a` is used)
    key = (id(xp), cuda_source.current_device(xp), numpy.dtype(a.dtype).str)
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


# --- the activations of the nn ops family (OneFlow's hardtanh, elu, hardsigmoid, hardswish, silu, mish, softplus,
# log_sigmoid, fast_gelu, prelu ops). Formulas and gradient conventions at the kinks follow OneFlow's kernels
# (v0.4.0 user/kernels/*_kernel.h, 0.9 user/kernels/activation_kernels.h): a kink takes the gradient of the side
# the open interval of its condition excludes (hardtanh: min < y < max passes dy; hardsigmoid: -3 < x < 3).
def _t(x, v):
    return x.dtype.type(v)


def hardtanh(xp, x, *, min_val=-1.0, max_val=1.0):
    """min(max(x, min_val), max_val) (relu6 is hardtanh(0, 6))."""
    return xp.minimum(xp.maximum(x, _t(x, min_val)), _t(x, max_val))


def hardtanh_grad(xp, dy, y, *, min_val=-1.0, max_val=1.0):
    """dy where the output is strictly inside (min_val, max_val); takes the forward output y."""
    return dy * ((y > _t(y, min_val)) & (y < _t(y, max_val)))


def elu(xp, x, *, alpha=1.0):
    """x for x > 0, alpha (exp(x) - 1) otherwise."""
    return xp.where(x > 0, x, _t(x, alpha) * xp.expm1(xp.minimum(x, _t(x, 0))))


def elu_grad(xp, dy, x, *, alpha=1.0):
    return xp.where(x > 0, dy, dy * (_t(x, alpha) * xp.exp(xp.minimum(x, _t(x, 0)))))


def hardsigmoid(xp, x):
    """0 for x <= -3, 1 for x >= 3, x / 6 + 1/2 between."""
    return xp.clip(x / _t(x, 6) + _t(x, 0.5), _t(x, 0), _t(x, 1))


def hardsigmoid_grad(xp, dy, x):
    return dy * ((x > -3) & (x < 3)) / _t(dy, 6)


def hardswish(xp, x):
    """x · hardsigmoid(x)."""
    return x * hardsigmoid(xp, x)


def hardswish_grad(xp, dy, x):
    """0 for x < -3, dy for x > 3, dy (2x + 3) / 6 between (OneFlow's conventions at ±3)."""
    inside = dy * (2 * x + _t(x, 3)) / _t(x, 6)
    return xp.where(x < -3, _t(dy, 0), xp.where(x > 3, dy, inside))


def _softplus_plain(xp, x):
    """log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|))."""
    return xp.maximum(x, _t(x, 0)) + xp.log1p(xp.exp(-xp.abs(x)))


def softplus(xp, x, *, beta=1.0, threshold=None):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (OneFlow 0.9 / PyTorch); the legacy
    `flow.math.softplus` is beta 1 without a threshold."""
    if x.dtype.itemsize < 4:
        return softplus(xp, x.astype(xp.float32), beta=beta, threshold=threshold).astype(x.dtype)
    bx = x * _t(x, beta) if beta != 1 else x
    y = _softplus_plain(xp, bx)
    if beta != 1:
        y = y / _t(x, beta)
    if threshold is not None:
        y = xp.where(bx > _t(x, threshold), x, y)
    return y.astype(x.dtype, copy=False)


def softplus_grad(xp, dy, x, *, beta=1.0, threshold=None):
    """dy · sigmoid(beta x), and dy where beta x > threshold."""
    bx = x * _t(x, beta) if beta != 1 else x
    g = dy * sigmoid(xp, bx)
    if threshold is not None:
        g = xp.where(bx > _t(x, threshold), dy, g)
    return g.astype(dy.dtype, copy=False)


def log_sigmoid(xp, x):
    """-log(1 + exp(-x)) = -softplus(-x), without overflow."""
    return -_softplus_plain(xp, -x)


def log_sigmoid_grad(xp, dy, x):
    """dy / (exp(x) + 1) = dy · sigmoid(-x)."""
    return dy * sigmoid(xp, -x)


def silu(xp, x):
    """x · sigmoid(x) (swish with beta 1)."""
    return x * sigmoid(xp, x)


def silu_grad(xp, dy, x):
    s = sigmoid(xp, x)
    return dy * (s * (1 + x * (1 - s)))


def mish(xp, x):
    """x · tanh(softplus(x))."""
    return x * xp.tanh(softplus(xp, x))


def mish_grad(xp, dy, x):
    t = xp.tanh(softplus(xp, x))
    return dy * (t + x * (1 - t * t) * sigmoid(xp, x))


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def fast_gelu(xp, x):
    """The tanh approximation of GELU (OneFlow 0.9 `gelu(approximate="tanh")`):
    x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))."""
    inner = _t(x, _SQRT_2_OVER_PI) * (x + _t(x, 0.044715) * x * x * x)
    return _t(x, 0.5) * x * (1 + xp.tanh(inner))


def fast_gelu_grad(xp, dy, x):
    inner = _t(x, _SQRT_2_OVER_PI) * (x + _t(x, 0.044715) * x * x * x)
    t = xp.tanh(inner)
    d_inner = _t(x, _SQRT_2_OVER_PI) * (1 + _t(x, 3 * 0.044715) * x * x)
    return dy * (_t(x, 0.5) * (1 + t) + _t(x, 0.5) * x * (1 - t * t) * d_inner)


def prelu(xp, x, alpha):
    """x for x > 0, alpha x otherwise. alpha has one axis fewer than x, each either x's size (after the batch
    axis) or 1 (a shared axis), as OneFlow's prelu op (legacy `flow.layers.prelu` makes it so)."""
    a = alpha.astype(x.dtype, copy=False)[None]
    return xp.where(x > 0, x, a * x)


def prelu_grad(xp, dy, x, alpha):
    """-> (dx, dalpha): dalpha sums dy · x over the non-positive cells, over the batch and the shared axes."""
    a = alpha.astype(x.dtype, copy=False)[None]
    neg = x <= 0
    dx = xp.where(neg, a * dy, dy)
    contrib = xp.where(neg, dy * x, _t(dy, 0))
    shared = tuple(i + 1 for i, d in enumerate(alpha.shape) if d == 1 and x.shape[i + 1] != 1)
    da = contrib.sum(axis=(0,) + shared, keepdims=True)[0] if contrib.shape[0] else xp.zeros(alpha.shape, dy.dtype)
    return dx.astype(dy.dtype, copy=False), da.reshape(alpha.shape).astype(alpha.dtype, copy=False)
