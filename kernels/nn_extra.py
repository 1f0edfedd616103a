"""Kernels of the nnextra helper (issue 21): OneFlow 0.9's further activations (celu, selu, hardshrink, softshrink,
softsign, threshold, quick_gelu) and their gradient kernels, cumprod and its gradient, fmod, and unfold / fold
(im2col / col2im).

Formulas and constants are OneFlow v0.9.0's (oneflow/core/ep/common/primitive/unary_functor.h,
oneflow/user/kernels/*_kernel.cpp): SELU's alpha and scale are the published constants; quick_gelu is
x * sigmoid(1.702 x). Gradient kernels take dy first, then the saved forward tensor (x, or y where OneFlow saves
the output: hardshrink, softshrink).
"""
import numpy

from . import activation as _act
from . import checks

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
QUICK_GELU_COEF = 1.702


def _t(x, v):
    return x.dtype.type(v)


def celu(xp, x, *, alpha=1.0):
    """x for x > 0, alpha (exp(x / alpha) - 1) otherwise."""
    a = _t(x, alpha)
    return xp.where(x > 0, x, a * xp.expm1(xp.minimum(x, _t(x, 0)) / a))


def celu_grad(xp, dy, x, *, alpha=1.0):
    return xp.where(x > 0, dy, dy * xp.exp(xp.minimum(x, _t(x, 0)) / _t(x, alpha)))


def selu(xp, x):
    """scale (x for x > 0, alpha (exp(x) - 1) otherwise)."""
    neg = _t(x, SELU_ALPHA) * xp.expm1(xp.minimum(x, _t(x, 0)))
    return _t(x, SELU_SCALE) * xp.where(x > 0, x, neg)


def selu_grad(xp, dy, x):
    slope = xp.where(x > 0, _t(x, 1), _t(x, SELU_ALPHA) * xp.exp(xp.minimum(x, _t(x, 0))))
    return dy * (_t(x, SELU_SCALE) * slope)


def hardshrink(xp, x, *, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return xp.where(xp.abs(x) > _t(x, lambd), x, _t(x, 0))


def hardshrink_grad(xp, dy, y, *, lambd=0.5):
    """dy where the output is non-zero (|x| > lambd >= 0); takes the forward output, as OneFlow does."""
    return xp.where(y != 0, dy, _t(dy, 0))


def softshrink(xp, x, *, alpha=0.5):
    """x - alpha above alpha, x + alpha below -alpha, 0 between (OneFlow names torch's lambd `alpha`)."""
    a = _t(x, alpha)
    return xp.where(x > a, x - a, xp.where(x < -a, x + a, _t(x, 0)))


def softshrink_grad(xp, dy, y, *, alpha=0.5):
    return xp.where(y != 0, dy, _t(dy, 0))


def softsign(xp, x):
    """x / (1 + |x|)."""
    return x / (_t(x, 1) + xp.abs(x))


def softsign_grad(xp, dy, x):
    d = _t(x, 1) + xp.abs(x)
    return dy / (d * d)


def threshold(xp, x, *, threshold_val=0.0, value=0.0):
    """x where x > threshold_val, else value."""
    return xp.where(x > _t(x, threshold_val), x, _t(x, value))


def threshold_grad(xp, dy, x, *, threshold_val=0.0, value=0.0):
    return xp.where(x > _t(x, threshold_val), dy, _t(dy, 0))


def quick_gelu(xp, x):
    """x * sigmoid(1.702 x)."""
    return x * _act.sigmoid(xp, _t(x, QUICK_GELU_COEF) * x)


def quick_gelu_grad(xp, dy, x):
    c = _t(x, QUICK_GELU_COEF)
    s = _act.sigmoid(xp, c * x)
    return dy * (s + c * x * s * (_t(x, 1) - s))


# --- cumprod ------------------------------------------------------------------------------------------------------
def cumprod(xp, x, *, dim):
    """Floating inputs keep their dtype; integers and bools give int64 (OneFlow's cumprod, as its cumsum)."""
    out = x.dtype if numpy.issubdtype(numpy.dtype(x.dtype), numpy.floating) else numpy.int64
    return xp.cumprod(x, axis=dim).astype(out, copy=False)


def _reverse_cumsum(xp, a, dim):
    return xp.flip(xp.cumsum(xp.flip(a, dim), axis=dim), dim)


def cumprod_grad(xp, dy, x, *, dim):
    """dx_i = sum over j >= i of dy_j * prod_{k <= j, k != i} x_k, zeros in x included.

    Where x_i != 0 that is revcumsum(dy * y)_i / x_i. Past a line's first zero every such product holds that zero,
    so both the formula (y is 0 there) and the true value are 0. At the first zero itself the products skip it: the
    cumulative product of x with that one zero replaced by 1 gives them."""
    y = xp.cumprod(x, axis=dim)
    zero = x == 0
    first_zero = zero & (xp.cumsum(zero, axis=dim) == 1)
    safe_x = xp.where(zero, _t(x, 1), x)
    dx = xp.where(zero, _t(x, 0), _reverse_cumsum(xp, dy * y, dim) / safe_x)
    # always computed (no host test of first_zero: that would wait for the device); where no line has a zero
    # the selection keeps dx as it is
    y_skip = xp.cumprod(xp.where(first_zero, _t(x, 1), x), axis=dim)
    dx = xp.where(first_zero, _reverse_cumsum(xp, dy * y_skip, dim), dx)
    return dx.astype(x.dtype, copy=False)


# --- fmod -----------------------------------------------------------------------------------------------------------
def broadcast_fmod(xp, a, b):
    """The C remainder: the sign of the dividend (OneFlow's broadcast_fmod; integers as floats alike). An integer
    division by zero raises, as numpy's would warn and OneFlow's kernel leaves undefined."""
    if numpy.issubdtype(numpy.dtype(a.dtype), numpy.integer):
        # at once on the host, with the step's results on a device (`checks`: no wait inside the kernel)
        checks.require(xp, xp.any(b == 0), "fmod: integer division by zero", error=ZeroDivisionError)
    return xp.fmod(a, b)


# --- unfold / fold (im2col / col2im; OneFlow's unfold_fold_op.cpp: 4-D channels_first inputs) ----------------------
def _out_size(size, k, d, p, s):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def unfold(xp, x, *, kernel_size, dilation_rate, padding, strides):
    """(N, C, H, W) -> (N, C * kh * kw, L): every kh x kw block (dilated, strided, zero-padded) as a column, the
    channel the slowest of the column's axes, then the kernel rows, then the kernel columns (OneFlow's and
    PyTorch's order); L the blocks in row-major order."""
    n, c, h, w = x.shape
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation_rate, padding, strides
    oh, ow = _out_size(h, kh, dh, ph, sh), _out_size(w, kw, dw, pw, sw)
    xp_ = xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw))) if ph or pw else x
    cols = xp.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp_[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
    return cols.reshape(n, c * kh * kw, oh * ow)


def fold(xp, cols, *, output_size, kernel_size, dilation_rate, padding, strides):
    """(N, C * kh * kw, L) -> (N, C, H, W): each column added back onto its block (overlaps sum): unfold's
    adjoint."""
    n, ckk, _ = cols.shape
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = output_size, kernel_size, dilation_rate, padding, strides
    c = ckk // (kh * kw)
    oh, ow = _out_size(h, kh, dh, ph, sh), _out_size(w, kw, dw, pw, sw)
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    out = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += blocks[:, :, i, j]
    return xp.ascontiguousarray(out[:, :, ph:ph + h, pw:pw + w])


# --- unfold_tensor (Tensor.unfold: sliding windows along one axis; OneFlow's unfold_tensor_op.cpp, v0.9.0) ----------
def _windows(shape, dimension, size, step):
    """The number of windows along `dimension` (a 0-d tensor is one window of size 1)."""
    return (shape[dimension] - size) // step + 1 if shape else 1


def unfold_tensor(xp, x, *, dimension, size, step):
    """x -> y with y.shape = x.shape but `dimension` holding (n - size) // step + 1 windows, plus a last axis of
    `size`: y[..., i, ..., j] = x[..., i * step + j, ...]. A copy (OneFlow returns a strided view of eager local
    tensors; the values are the same)."""
    if x.ndim == 0:
        return xp.reshape(x, (1,)).copy()
    n = _windows(x.shape, dimension, size, step)
    y = xp.empty(x.shape[:dimension] + (n,) + x.shape[dimension + 1:] + (size,), dtype=x.dtype)
    lead = (slice(None),) * dimension
    for j in range(size):
        y[..., j] = x[lead + (slice(j, j + step * (n - 1) + 1, step),)]
    return y


def unfold_tensor_grad(xp, dy, x, *, dimension, size, step):
    """dx: each window's entries added back where they were read (windows overlap where step < size)."""
    if x.ndim == 0:
        return xp.reshape(dy, ()).copy()
    n = _windows(x.shape, dimension, size, step)
    dx = xp.zeros(x.shape, dtype=dy.dtype)
    lead = (slice(None),) * dimension
    for j in range(size):  # within one offset j the windows read distinct entries: a plain slice add
        dx[lead + (slice(j, j + step * (n - 1) + 1, step),)] += dy[..., j]
    return dx
