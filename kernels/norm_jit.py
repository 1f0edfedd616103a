"""Compiled (numba) loops of batch normalization in training (`norm.py`'s batch-statistics kernels): the
per-channel sum, the per-channel sum of squared deviations, the normalization, and the two passes of its gradient,
each one pass over (outer, C, inner) views of C-contiguous arrays, sums accumulated in float64. They compute what
the numpy versions in `norm.py` compute (the reference and the fallback); tests/test_zoo_kernels.py checks them
against those.

`AVAILABLE` is False without numba (or with ONEFLOW_COMPAT_JIT=0): `norm.py` then runs numpy alone."""
import numpy as np

from .jit import AVAILABLE  # noqa: F401
from .jit import compiled as _jit


@_jit
def channel_sums(x, out):
    """out[c] = sum of x[:, c, :] (x: (outer, C, inner))."""
    outer, c_n, inner = x.shape
    acc = np.zeros(c_n, np.float64)
    for o in range(outer):
        for c in range(c_n):
            s = 0.0
            row = x[o, c]
            for i in range(inner):
                s += row[i]
            acc[c] += s
    for c in range(c_n):
        out[c] = acc[c]


@_jit
def centered_square_sums(x, mean, out):
    """out[c] = sum of (x[:, c, :] - mean[c])²."""
    outer, c_n, inner = x.shape
    acc = np.zeros(c_n, np.float64)
    for o in range(outer):
        for c in range(c_n):
            m = mean[c]
            s = 0.0
            row = x[o, c]
            for i in range(inner):
                d = row[i] - m
                s += d * d
            acc[c] += s
    for c in range(c_n):
        out[c] = acc[c]


@_jit
def normalize(x, scale, shift, y):
    """y = x * scale[c] + shift[c] (the normalization with its affine part folded per channel)."""
    outer, c_n, inner = x.shape
    for o in range(outer):
        for c in range(c_n):
            a, b = scale[c], shift[c]
            src, dst = x[o, c], y[o, c]
            for i in range(inner):
                dst[i] = src[i] * a + b


@_jit
def grad_sums(dy, x, mean, out_dy, out_dy_xc):
    """out_dy[c] = sum dy, out_dy_xc[c] = sum dy * (x - mean[c]) over the channel's values."""
    outer, c_n, inner = x.shape
    a1 = np.zeros(c_n, np.float64)
    a2 = np.zeros(c_n, np.float64)
    for o in range(outer):
        for c in range(c_n):
            m = mean[c]
            s1 = 0.0
            s2 = 0.0
            g, xr = dy[o, c], x[o, c]
            for i in range(inner):
                s1 += g[i]
                s2 += g[i] * (xr[i] - m)
            a1[c] += s1
            a2[c] += s2
    for c in range(c_n):
        out_dy[c] = a1[c]
        out_dy_xc[c] = a2[c]


@_jit
def grad_input(dy, x, mean, k_dy, k_x, k_0, dx):
    """dx = dy * k_dy[c] + (x - mean[c]) * k_x[c] + k_0[c] (the batch-norm input gradient, per-channel factors)."""
    outer, c_n, inner = x.shape
    for o in range(outer):
        for c in range(c_n):
            m, a, b, z = mean[c], k_dy[c], k_x[c], k_0[c]
            g, xr, out = dy[o, c], x[o, c], dx[o, c]
            for i in range(inner):
                out[i] = g[i] * a + (xr[i] - m) * b + z
