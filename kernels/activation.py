"""Activations and their gradients.

Gradient kernels take the forward *output* y where that is enough (relu, sigmoid,
tanh, softmax, log_softmax), and the forward input x where it is not (gelu,
leaky_relu).
"""
import math

import numpy


def relu(xp, x):
    return xp.maximum(x, 0)


def relu_grad(xp, dy, y):
    """0 where the output is 0 (i.e. where x <= 0)."""
    return xp.where(y > 0, dy, 0).astype(dy.dtype, copy=False)


def sigmoid(xp, x):
    # exp of a non-positive argument only, so large |x| never overflows
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def sigmoid_grad(xp, dy, y):
    return dy * y * (1 - y)


def tanh(xp, x):
    return xp.tanh(x)


def tanh_grad(xp, dy, y):
    return dy * (1 - y * y)


# --- erf, needed by the exact (erf-based) GELU -----------------------------------
# numpy has no erf and this package must not depend on scipy, so erf is evaluated
# piecewise: [0, 6) is cut into intervals of width 0.5, and on each one a
# degree-12 Chebyshev interpolant (fitted once, here, from math.erf) is summed by
# Clenshaw's recurrence. Max error about 2e-15; erf(|x| >= 6) is 1 in float64.
_ERF_WIDTH = 0.5
_ERF_LIMIT = 6.0
_ERF_DEGREE = 12


def _fit_erf_table():
    edges = numpy.arange(0.0, _ERF_LIMIT, _ERF_WIDTH)
    nodes = numpy.cos(numpy.pi * (numpy.arange(_ERF_DEGREE + 1) + 0.5) / (_ERF_DEGREE + 1))
    rows = []
    for left in edges:
        values = [math.erf(left + _ERF_WIDTH / 2 * (1 + t)) for t in nodes]
        rows.append(numpy.polynomial.chebyshev.chebfit(nodes, values, _ERF_DEGREE))
    return numpy.array(rows)  # (intervals, degree + 1), lowest order first


_ERF_TABLE = _fit_erf_table()
_ERF_TABLE_CACHE = {}


def _erf_table(xp, dtype):
    key = (xp.__name__, numpy.dtype(dtype).str)
    if key not in _ERF_TABLE_CACHE:
        # one column per Chebyshev order, so each Clenshaw step is a single gather
        _ERF_TABLE_CACHE[key] = xp.asarray(_ERF_TABLE.T, dtype=dtype)
    return _ERF_TABLE_CACHE[key]


def erf(xp, x):
    """Error function of a floating array, same dtype (see the table note above)."""
    table = _erf_table(xp, x.dtype)
    a = xp.minimum(xp.abs(x), _ERF_LIMIT)
    interval = xp.minimum(xp.floor(a / _ERF_WIDTH), table.shape[1] - 1).astype(xp.int64)
    t = (a - interval.astype(x.dtype) * _ERF_WIDTH) * (2 / _ERF_WIDTH) - 1
    b1 = xp.zeros_like(a)
    b2 = xp.zeros_like(a)
    for order in range(_ERF_DEGREE, 0, -1):
        b1, b2 = 2 * t * b1 - b2 + xp.take(table[order], interval), b1
    value = t * b1 - b2 + xp.take(table[0], interval)
    value = xp.where(a >= _ERF_LIMIT, 1, value)
    return (xp.sign(x) * value).astype(x.dtype, copy=False)


_INV_SQRT2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def gelu(xp, x):
    """Exact GELU: 0.5 x (1 + erf(x / sqrt 2)), as the legacy gelu op."""
    return (0.5 * x * (1 + erf(xp, x * _INV_SQRT2))).astype(x.dtype, copy=False)


def gelu_grad(xp, dy, x):
    """d gelu / dx = Phi(x) + x phi(x); takes the forward input x."""
    cdf = 0.5 * (1 + erf(xp, x * _INV_SQRT2))
    pdf = _INV_SQRT_2PI * xp.exp(-0.5 * x * x)
    return (dy * (cdf + x * pdf)).astype(dy.dtype, copy=False)


def softmax(xp, x, *, axis=-1):
    # shifting by the max keeps exp() in (0, 1]
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def softmax_grad(xp, dy, y, *, axis=-1):
    return y * (dy - xp.sum(dy * y, axis=axis, keepdims=True))


def log_softmax(xp, x, *, axis=-1):
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def log_softmax_grad(xp, dy, y, *, axis=-1):
    """y is the forward output (log-probabilities)."""
    return dy - xp.exp(y) * xp.sum(dy, axis=axis, keepdims=True)


def leaky_relu(xp, x, *, alpha=0.2):
    """x for x > 0, alpha * x otherwise (legacy default alpha = 0.2)."""
    return xp.where(x > 0, x, x * alpha).astype(x.dtype, copy=False)


def leaky_relu_grad(xp, dy, x, *, alpha=0.2):
    return xp.where(x > 0, dy, dy * alpha).astype(dy.dtype, copy=False)
