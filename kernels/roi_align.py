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


def roi_align(xp, x, rois, *, spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned):
    """x (N, C, H, W), rois (R, 5) -> (R, C, pooled_h, pooled_w)."""
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
    _, _, height, width = x_like.shape
    dx = xp.zeros(x_like.shape, dtype=x_like.dtype)
    for r, (n, wy, wx, count) in enumerate(_regions(_host(xp, rois), height, width, spatial_scale, pooled_h,
                                                    pooled_w, sampling_ratio, aligned)):
        wy = xp.asarray(wy / count, dtype=dx.dtype)
        wx = xp.asarray(wx, dtype=dx.dtype)
        dx[n] += xp.matmul(xp.matmul(wy.T, dy[r]), wx)
    return dx
