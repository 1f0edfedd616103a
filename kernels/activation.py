"""Activations and their gradients.

Gradient kernels take the forward *output* y where that is enough (relu, sigmoid, tanh, softmax), and the forward
input x where it is not (leaky_relu).
"""
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


def softmax(xp, x, *, axis=-1):
    # shifting by the max keeps exp() in (0, 1]
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    e /= xp.sum(e, axis=axis, keepdims=True)
    return e


def softmax_grad(xp, dy, y, *, axis=-1):
    return y * (dy - xp.sum(dy * y, axis=axis, keepdims=True))
