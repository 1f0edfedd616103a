"""The two stages of OneFlow's `two_stage_reduce_max/min` (v0.3.4 `oneflow/user/ops/two_stage_reduce_ops.cpp`,
`oneflow/user/kernels/two_stage_reduce_kernel.cpp`): each device reduces its own piece first (device stage: the
extreme value, where it is reached, and how often), then the small per-device results are reduced once more (global
stage). The gradient splits dy evenly among every position that reaches the global extreme:

    dx = dy · [x = global extreme] / (number of such positions over all devices)

computed as the product of the two stages' gradients (global: the device's share count_d / total where the device
reaches the extreme; device: mask / count_d).

`axis` is a tuple of axes; the device stage keeps them (size 1); an empty piece (a split with more devices than
rows) gives the reduction's identity (-inf / +inf, or the dtype's extreme for integers) and a count of 0.
"""
import numpy


def _identity(xp, dtype, is_max):
    if numpy.dtype(dtype).kind == "f":
        return numpy.dtype(dtype).type(-numpy.inf if is_max else numpy.inf)
    info = numpy.iinfo(dtype)
    return numpy.dtype(dtype).type(info.min if is_max else info.max)


def _extreme(xp, x, axis, is_max):
    if x.size == 0:
        shape = tuple(1 if i in axis else d for i, d in enumerate(x.shape))
        return xp.full(shape, _identity(xp, x.dtype, is_max), dtype=x.dtype)
    return (xp.max if is_max else xp.min)(x, axis=axis, keepdims=True)


def device_stage(xp, x, *, axis, is_max):
    """(extreme over `axis` kept as size 1, int8 mask of where x reaches it, int32 count of those positions)."""
    axis = tuple(axis)
    out = _extreme(xp, x, axis, is_max)
    mask = (x == out).astype(xp.int8)
    count = xp.sum(mask, axis=axis, keepdims=True, dtype=xp.int32)
    return out, mask, count


def device_stage_grad(xp, out_diff, mask, count):
    """out_diff spread over the positions of the mask, divided by their count."""
    with numpy.errstate(divide="ignore", invalid="ignore"):
        share = xp.where(count > 0, out_diff / xp.maximum(count, 1).astype(out_diff.dtype), out_diff.dtype.type(0))
    return share * mask.astype(out_diff.dtype)


def global_stage(xp, x, device_count, *, axis, keepdims, is_max):
    """(extreme of the device results over `axis`, int8 mask of the devices reaching it)."""
    axis = tuple(axis)
    kept = _extreme(xp, x, axis, is_max)
    mask = ((x == kept) & (device_count > 0)).astype(xp.int8)
    out = kept if keepdims else kept.reshape(tuple(d for i, d in enumerate(kept.shape) if i not in axis) or (1,))
    return out, mask


def global_stage_grad(xp, out_diff, mask, device_count, *, axis):
    """Each reaching device's share of out_diff: count_d / Σ count over the reaching devices."""
    axis = tuple(axis)
    shape = tuple(1 if i in axis else d for i, d in enumerate(mask.shape))
    weight = mask.astype(out_diff.dtype) * device_count.astype(out_diff.dtype)
    total = xp.sum(weight, axis=axis, keepdims=True)
    return out_diff.reshape(shape) * weight / xp.maximum(total, out_diff.dtype.type(1))
