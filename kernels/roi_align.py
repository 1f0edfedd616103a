"""RoI Align (Mask R-CNN; OneFlow v0.9.0 oneflow/user/kernels/roi_align_kernel.cu): each region of interest
(batch index, x1, y1, x2, y2 in input coordinates) pooled to pooled_h x pooled_w bins, each bin the mean of a
grid of bilinear samples of the feature map.

The formula is the CUDA kernel's: coordinates scaled by spatial_scale, shifted by -0.5 when `aligned`; without
`aligned` a region is at least 1 x 1; the grid of a bin is sampling_ratio x sampling_ratio samples, or
ceil(roi_h / pooled_h) x ceil(roi_w / pooled_w) when sampling_ratio <= 0, at the centres of its cells; a sample
outside [-1, H] x [-1, W] counts 0, coordinates below 0 are taken as 0, at the last row / column the sample is that
row / column. Bilinear sampling is separable, so one region's output is Wy @ x[n, c] @ Wx^T / count with Wy
(pooled_h, H) and Wx (pooled_w, W) the summed sample weights of each bin's rows and columns: a product of small
matrices per region instead of a loop per sample; the gradient is Wy^T @ dy @ Wx / count, added into dx[n].
"""
import math

import numpy


def _axis_weights(start, size, pooled, grid, extent):
    """(pooled, extent): row p holds the summed 1-D bilinear weights of bin p's `grid` samples."""
    bin_size = size / pooled
    w = numpy.zeros((pooled, extent))
    for p in range(pooled):
        for g in range(grid):
            v = start + p * bin_size + (g + 0.5) * bin_size / grid
            if v < -1.0 or v > extent:
                continue
            v = max(v, 0.0)
            low = int(v)
            if low >= extent - 1:
                low = high = extent - 1
                v = float(low)
            else:
                high = low + 1
            frac = v - low
            w[p, low] += 1.0 - frac
            w[p, high] += frac
    return w


def _regions(rois, height, width, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    """Per region: (batch index, Wy, Wx, count)."""
    offset = 0.5 if aligned else 0.0
    out = []
    for roi in numpy.asarray(rois, dtype=numpy.float64):
        n = int(roi[0])
        x1, y1, x2, y2 = (float(v) * spatial_scale - offset for v in roi[1:5])
        roi_h, roi_w = y2 - y1, x2 - x1
        if not aligned:
            roi_h, roi_w = max(roi_h, 1.0), max(roi_w, 1.0)
        grid_h = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_h / pooled_h))
        grid_w = sampling_ratio if sampling_ratio > 0 else int(math.ceil(roi_w / pooled_w))
        count = max(grid_h * grid_w, 1)
        out.append((n, _axis_weights(y1, roi_h, pooled_h, grid_h, height),
                    _axis_weights(x1, roi_w, pooled_w, grid_w, width), count))
    return out


def _host(xp, a):
    return a if xp is numpy else xp.asnumpy(a)


def _axis_weights_on_device(xp, start, size, pooled, grid, extent, sampling_ratio):
    """`_axis_weights` of every region at once on a device: (R, pooled, extent), from (R,) float64 `start`, `size`
    and int64 `grid`. With sampling_ratio > 0 every bin has that many samples; otherwise grid = ceil(size / pooled)
    samples spaced bin / grid >= 1/2 apart (or one, or none), so at most 2 (extent + 1) + 1 of them fall inside
    [-1, extent] (the others weigh 0): a fixed window of `cap` samples from the first one that may fall inside
    covers them all, without reading any region's grid back to the host. Same sample positions as the host loop."""
    r = start.shape[0]
    bin_size = size / pooled
    base = start[:, None] + xp.arange(pooled, dtype=numpy.float64)[None, :] * bin_size[:, None]  # (R, P)
    safe_grid = xp.maximum(grid, 1).astype(numpy.float64)[:, None, None]
    if sampling_ratio > 0:
        g = xp.broadcast_to(xp.arange(sampling_ratio, dtype=numpy.float64), (r, pooled, sampling_ratio))
    else:
        cap = 2 * extent + 8
        step = bin_size[:, None] / safe_grid[:, :, 0]
        with numpy.errstate(divide="ignore", invalid="ignore"):
            first = xp.floor((-1.0 - base) / step - 0.5) - 1.0
        first = xp.where((step > 0) & (first > 0), first, 0.0)
        g = first[:, :, None] + xp.arange(cap, dtype=numpy.float64)[None, None, :]
    v = base[:, :, None] + (g + 0.5) * bin_size[:, None, None] / safe_grid
    inside = (g < grid[:, None, None]) & (v >= -1.0) & (v <= extent)
    v = xp.maximum(v, 0.0)
    low = xp.floor(v).astype(numpy.int64)
    edge = low >= extent - 1
    low = xp.where(edge, extent - 1, low)
    high = xp.where(edge, extent - 1, low + 1)
    frac = xp.where(edge, 0.0, v - low)
    cells = (xp.arange(r * pooled, dtype=numpy.int64) * extent).reshape(r, pooled, 1)
    index = xp.concatenate([(cells + low).reshape(-1), (cells + high).reshape(-1)])
    weight = xp.concatenate([xp.where(inside, 1.0 - frac, 0.0).reshape(-1), xp.where(inside, frac, 0.0).reshape(-1)])
    return xp.bincount(index, weights=weight, minlength=r * pooled * extent).reshape(r, pooled, extent)


def _regions_on_device(xp, rois, height, width, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned, dtype):
    """(batch indices (R,), Wy / count (R, pooled_h, H), Wx (R, pooled_w, W)) in `dtype`, computed on the device
    as `_regions` does on the host (float64, the same formulas)."""
    offset = 0.5 if aligned else 0.0
    r64 = rois.astype(numpy.float64)
    n = r64[:, 0].astype(numpy.int64)
    x1, y1, x2, y2 = (r64[:, k] * spatial_scale - offset for k in range(1, 5))
    roi_h, roi_w = y2 - y1, x2 - x1
    if not aligned:
        roi_h, roi_w = xp.maximum(roi_h, 1.0), xp.maximum(roi_w, 1.0)
    if sampling_ratio > 0:
        grid_h = grid_w = xp.full(n.shape, sampling_ratio, dtype=numpy.int64)
    else:
        grid_h = xp.ceil(roi_h / pooled_h).astype(numpy.int64)
        grid_w = xp.ceil(roi_w / pooled_w).astype(numpy.int64)
    count = xp.maximum(grid_h * grid_w, 1)
    wy = _axis_weights_on_device(xp, y1, roi_h, pooled_h, grid_h, height, sampling_ratio)
    wx = _axis_weights_on_device(xp, x1, roi_w, pooled_w, grid_w, width, sampling_ratio)
    return n, (wy / count[:, None, None]).astype(dtype), wx.astype(dtype)


def roi_align(xp, x, rois, *, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    """x (N, C, H, W), rois (R, 5) -> (R, C, pooled_h, pooled_w). On a device every region at once (no read of the
    rois back to the host): one batched product per image of the batch, kept for the regions of that image."""
    if xp is not numpy:
        _, c, height, width = x.shape
        n, wy, wx = _regions_on_device(xp, rois, height, width, spatial_scale, pooled_h, pooled_w, sampling_ratio,
                                       aligned, x.dtype)
        y = xp.zeros((rois.shape[0], c, pooled_h, pooled_w), dtype=x.dtype)
        wx_t = xp.swapaxes(wx, 1, 2)[:, None]  # (R, 1, W, pooled_w)
        for b in range(x.shape[0]):
            part = xp.matmul(xp.matmul(wy[:, None], x[b][None]), wx_t)
            y = xp.where((n == b)[:, None, None, None], part, y)
        return y
    _, c, height, width = x.shape
    y = xp.zeros((rois.shape[0], c, pooled_h, pooled_w), dtype=x.dtype)
    for r, (n, wy, wx, count) in enumerate(_regions(_host(xp, rois), height, width, spatial_scale, pooled_h,
                                                    pooled_w, sampling_ratio, aligned)):
        wy = xp.asarray(wy / count, dtype=x.dtype)
        wx = xp.asarray(wx, dtype=x.dtype)
        y[r] = xp.matmul(xp.matmul(wy, x[n]), wx.T)
    return y


def roi_align_grad(xp, dy, x_like, rois, *, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    """dy (R, C, pooled_h, pooled_w) -> dx shaped like x_like: each region's bins spread back onto its samples'
    four neighbours."""
    if xp is not numpy:
        return _roi_align_grad_on_device(xp, dy, x_like, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio,
                                         aligned)
    _, _, height, width = x_like.shape
    dx = xp.zeros(x_like.shape, dtype=x_like.dtype)
    for r, (n, wy, wx, count) in enumerate(_regions(_host(xp, rois), height, width, spatial_scale, pooled_h,
                                                    pooled_w, sampling_ratio, aligned)):
        wy = xp.asarray(wy / count, dtype=dx.dtype)
        wx = xp.asarray(wx, dtype=dx.dtype)
        dx[n] += xp.matmul(xp.matmul(wy.T, dy[r]), wx)
    return dx


def _roi_align_grad_on_device(xp, dy, x_like, rois, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    """`roi_align_grad` with every region at once: per image b, dx[b] = sum over its regions r of
    Wy_r^T dy_r Wx_r, the sum over (r, pooled column) one matrix product."""
    nb, c, height, width = x_like.shape
    r = rois.shape[0]
    n, wy, wx = _regions_on_device(xp, rois, height, width, spatial_scale, pooled_h, pooled_w, sampling_ratio,
                                   aligned, x_like.dtype)
    t = xp.matmul(xp.swapaxes(wy, 1, 2)[:, None], dy.astype(x_like.dtype, copy=False))  # (R, C, H, pooled_w)
    t = xp.transpose(t, (1, 2, 0, 3)).reshape(c * height, r * pooled_w)
    dx = xp.zeros(x_like.shape, dtype=x_like.dtype)
    for b in range(nb):
        mine = xp.where((n == b)[:, None, None], wx, x_like.dtype.type(0)).reshape(r * pooled_w, width)
        dx[b] = xp.matmul(t, mine).reshape(c, height, width)
    return dx
