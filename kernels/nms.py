"""Non-maximum suppression: OneFlow 0.9's `nms` user op (input "in": boxes (N, 4) as (x1, y1, x2, y2), sorted by
decreasing score; output "out": int8 (N,), 1 for a kept box; attrs iou_threshold, keep_n). Its kernel
(oneflow/user/kernels/nms_kernel.cu at v0.9.0) keeps a box unless a kept box before it overlaps it with an IoU
greater than iou_threshold, the IoU computed in the boxes' dtype, and stops after keep_n kept boxes (keep_n <= 0 or
> N: no limit). OneFlow has only the CUDA kernel; this one runs on numpy (a host loop that stops early) or on a device (`_nms_on_device`:
the same decisions without a wait for the device)."""
import numpy


def nms(xp, boxes, *, iou_threshold, keep_n=-1):
    if xp is not numpy:
        return _nms_on_device(xp, boxes, iou_threshold, keep_n)
    n = boxes.shape[0]
    limit = n if keep_n <= 0 or keep_n > n else keep_n
    keep = xp.zeros((n,), dtype=numpy.int8)
    if n == 0:
        return keep
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    area = (x2 - x1) * (y2 - y1)
    zero = boxes.dtype.type(0)
    suppressed = numpy.zeros((n,), dtype=bool)  # on the host: one decision per box
    kept = 0
    for i in range(n):
        if suppressed[i]:
            continue
        keep[i] = 1
        kept += 1
        if kept == limit or i == n - 1:
            break
        w = xp.maximum(xp.minimum(x2[i], x2[i + 1:]) - xp.maximum(x1[i], x1[i + 1:]), zero)
        h = xp.maximum(xp.minimum(y2[i], y2[i + 1:]) - xp.maximum(y1[i], y1[i + 1:]), zero)
        inter = w * h
        iou = inter / (area[i] + area[i + 1:] - inter)
        over = iou > boxes.dtype.type(iou_threshold)
        suppressed[i + 1:] |= over if xp is numpy else xp.asnumpy(over)
    return keep


def _nms_on_device(xp, boxes, iou_threshold, keep_n):
    """`nms` with every decision on the device, no value read back: the IoU of every pair (i < j) at once (OneFlow's
    CUDA kernel builds the same N x N overlap mask), then the suppression pass box by box as array operations (a
    box is suppressed by an earlier box that was itself kept), and the keep_n limit applied at the end (a kept box
    past the limit-th is the one the host loop would not reach). Same IoU formula and dtype as the host loop, so the
    same decisions."""
    n = boxes.shape[0]
    limit = n if keep_n <= 0 or keep_n > n else keep_n
    if n == 0:
        return xp.zeros((0,), dtype=numpy.int8)
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    area = (x2 - x1) * (y2 - y1)
    zero = boxes.dtype.type(0)
    w = xp.maximum(xp.minimum(x2[:, None], x2[None, :]) - xp.maximum(x1[:, None], x1[None, :]), zero)
    h = xp.maximum(xp.minimum(y2[:, None], y2[None, :]) - xp.maximum(y1[:, None], y1[None, :]), zero)
    inter = w * h
    with numpy.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area[:, None] + area[None, :] - inter)
    later = xp.arange(n)[None, :] > xp.arange(n)[:, None]
    over = (iou > boxes.dtype.type(iou_threshold)) & later  # over[i, j]: box i, if kept, suppresses box j > i
    suppressed = xp.zeros((n,), dtype=bool)
    for i in range(n - 1):  # sequential by nature (each decision depends on the ones before); no host reads
        suppressed = suppressed | (over[i] & ~suppressed[i])
    keep = ~suppressed
    keep = keep & (xp.cumsum(keep.astype(numpy.int64)) <= limit)
    return keep.astype(numpy.int8)
