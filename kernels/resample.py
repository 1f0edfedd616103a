"""Resampling and padding of the spatial axes: nearest / linear / cubic interpolation of 1, 2 or 3 spatial axes
(`upsample`, channels first) and reflection / replication padding, each with its adjoint (the gradient).

Interpolation is separable: one axis at a time, each output index reading one input index (nearest) or two with a
weight (linear), so the gradient scatters back through the same tables in reverse axis order.

Source index of output index i along an axis of n inputs and m outputs, `scale` the source step (n / m, or
1 / scale_factor when the factor was given):
* nearest: floor(i · scale) (PyTorch's, OneFlow 0.9's), or floor((i + 0.5) · scale) with `half_pixel` (legacy
  OneFlow's upsample kernel), clamped to [0, n - 1];
* linear: align_corners: i (n - 1) / (m - 1); else (i + 0.5) scale - 0.5 clamped at 0; the two neighbours and the
  fraction between them, the upper one clamped to n - 1.
"""
import numpy

from . import indexing


def _nearest_index(xp, n, m, scale, half_pixel):
    i = numpy.arange(m, dtype=numpy.float64)
    src = numpy.floor((i + 0.5) * scale if half_pixel else i * scale).astype(numpy.int64)
    return xp.asarray(numpy.clip(src, 0, n - 1))


def _linear_table(xp, n, m, scale, align_corners, dtype):
    i = numpy.arange(m, dtype=numpy.float64)
    if align_corners:
        src = i * ((n - 1) / (m - 1)) if m > 1 else numpy.zeros(m)
    else:
        src = numpy.maximum((i + 0.5) * scale - 0.5, 0.0)
    lo = numpy.floor(src).astype(numpy.int64)
    lo = numpy.minimum(lo, n - 1)
    hi = numpy.minimum(lo + 1, n - 1)
    lam = src - lo
    return xp.asarray(lo), xp.asarray(hi), xp.asarray(lam.astype(dtype))


def _cubic_table(xp, n, m, scale, align_corners, dtype):
    """Bicubic's four source indices (floor(src) - 1 .. + 2, clamped to [0, n - 1]) and weights per output index:
    OneFlow 0.9 user/kernels/upsample_kernel.h (GetAreaPixel with cubic=True: no clamp of the source at 0;
    get_cubic_upsample_coefficients, A = -0.75); n == m copies (upsample_bicubic_2d_kernel.cpp)."""
    i = numpy.arange(m, dtype=numpy.float64)
    if n == m:
        src = i
    elif align_corners:
        src = i * ((n - 1) / (m - 1)) if m > 1 else numpy.zeros(m)
    else:
        src = (i + 0.5) * scale - 0.5
    lo = numpy.floor(src).astype(numpy.int64)
    t = src - lo
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    return [(xp.asarray(numpy.clip(lo + k - 1, 0, n - 1)), xp.asarray(w.astype(dtype))) for k, w in enumerate(weights)]


def _shape(lam, ndim, axis):
    return lam.reshape((1,) * axis + (-1,) + (1,) * (ndim - axis - 1))


def _scales(in_sizes, out_sizes, scales):
    """The source step per axis: 1 / scale_factor when given, else n / m."""
    return [(1.0 / s) if s else n / m for n, m, s in zip(in_sizes, out_sizes, scales or (None,) * len(in_sizes))]


def upsample(xp, x, *, output_size, mode="nearest", align_corners=False, scales=None, half_pixel=False):
    """x (N, C, *spatial) resampled to (N, C, *output_size)."""
    nd = len(output_size)
    steps = _scales(x.shape[2:], output_size, scales)
    y = x
    for k in range(nd):
        axis, n, m = 2 + k, x.shape[2 + k], output_size[k]
        if mode == "nearest":
            y = xp.take(y, _nearest_index(xp, n, m, steps[k], half_pixel), axis=axis)
        elif mode == "cubic":
            taps = _cubic_table(xp, n, m, steps[k], align_corners, numpy.dtype(x.dtype))
            y = sum(xp.take(y, index, axis=axis) * _shape(w, y.ndim, axis) for index, w in taps)
        else:
            lo, hi, lam = _linear_table(xp, n, m, steps[k], align_corners, numpy.dtype(x.dtype))
            a, b = xp.take(y, lo, axis=axis), xp.take(y, hi, axis=axis)
            y = a + (b - a) * _shape(lam, y.ndim, axis)
    return xp.ascontiguousarray(y.astype(x.dtype, copy=False))


def _scatter_axis(xp, g, index, n, axis, weight=None):
    """The adjoint of take(·, index, axis) (times `weight` per output index): (…, n, …) sums."""
    moved = xp.moveaxis(g if weight is None else g * _shape(weight, g.ndim, axis), axis, 0)
    out = xp.zeros((n,) + moved.shape[1:], dtype=g.dtype)
    if xp is numpy:
        numpy.add.at(out, index, moved)
    elif out.size and index.size:  # in numpy's order on a device too (CuPy's add.at adds with atomics: the order changes run to run)
        indexing.add_at_rows(xp, out.reshape(n, -1), index, xp.ascontiguousarray(moved).reshape(index.size, -1))
    return xp.moveaxis(out, 0, axis)


def upsample_grad(xp, dy, *, input_shape, output_size, mode="nearest", align_corners=False, scales=None,
                  half_pixel=False):
    """d x of `upsample` (x of `input_shape` with dy's batch size)."""
    nd = len(output_size)
    in_sizes = tuple(input_shape[2:])
    steps = _scales(in_sizes, output_size, scales)
    g = dy
    for k in reversed(range(nd)):
        axis, n, m = 2 + k, in_sizes[k], output_size[k]
        if mode == "nearest":
            g = _scatter_axis(xp, g, _nearest_index(xp, n, m, steps[k], half_pixel), n, axis)
        elif mode == "cubic":
            taps = _cubic_table(xp, n, m, steps[k], align_corners, numpy.dtype(dy.dtype))
            g = sum(_scatter_axis(xp, g, index, n, axis, w) for index, w in taps)
        else:
            lo, hi, lam = _linear_table(xp, n, m, steps[k], align_corners, numpy.dtype(dy.dtype))
            g = _scatter_axis(xp, g, lo, n, axis, 1 - lam) + _scatter_axis(xp, g, hi, n, axis, lam)
    return xp.ascontiguousarray(g.astype(dy.dtype, copy=False))


# --- reflection / replication padding of the trailing axes ---------------------------------------------------------
def _pad_index(n, before, after, mode):
    """The source index of each padded position of an axis of n: reflect (without repeating the edge) or
    replicate (the edge)."""
    i = numpy.arange(-before, n + after)
    if mode == "reflect":
        if before >= n or after >= n:
            raise ValueError("reflection padding (%d, %d) must be smaller than the padded axis of %d"
                             % (before, after, n))
        period = 2 * (n - 1) if n > 1 else 1
        i = numpy.abs(i) % period
        return numpy.where(i >= n, period - i, i)
    return numpy.clip(i, 0, n - 1)


def pad_edges(xp, x, *, pads, mode):
    """x padded on its last len(pads) axes by (before, after) pairs, "reflect" or "replicate"."""
    y = x
    first = x.ndim - len(pads)
    for k, (before, after) in enumerate(pads):
        axis = first + k
        y = xp.take(y, xp.asarray(_pad_index(x.shape[axis], before, after, mode)), axis=axis)
    return xp.ascontiguousarray(y)


def pad_edges_grad(xp, dy, *, pads, mode):
    """d x of `pad_edges`: every padded cell's gradient added to the cell it copied."""
    g = dy
    first = dy.ndim - len(pads)
    for k in reversed(range(len(pads))):
        axis = first + k
        before, after = pads[k]
        n = dy.shape[axis] - before - after
        g = _scatter_axis(xp, g, xp.asarray(_pad_index(n, before, after, mode)), n, axis)
    return xp.ascontiguousarray(g)
