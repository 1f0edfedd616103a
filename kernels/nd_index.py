"""Indexing by index tensors beyond gather (indexing.py): the nd family (gather_nd, scatter_nd, scatter_nd_like,
tensor_scatter_nd_update / _add), dim_gather and its gradient, the unsorted segment sums, in_top_k.

Rules as OneFlow v0.3.4's kernels compute them (`oneflow/user/kernels/nd_index_slice_kernels.h`,
`nd_index_slice_util.h`, `dim_gather_kernel_util.h`, `unsorted_segment_sum_kernel_util.cpp`,
`in_top_k_kernel_util.cpp`):

* nd indices: the last axis of `indices` (length q) indexes the first q axes of the dense tensor; each index row
  selects a slice of the remaining axes. scatter_nd adds its updates into zeros (repeated indices accumulate);
  tensor_scatter_nd_update first zeroes every indexed slice and then adds the updates (so repeated indices add up
  too, deterministically); tensor_scatter_nd_add adds into a copy of params.
* segment sums: out[..., s, ...] = Σ data[..., i, ...] over ids[i] = s; ids outside [0, num_segments) add
  nothing (a negative id is an error, as OneFlow's CHECK_GE). `offset` is where this device's piece of `out` starts along the segment axis (out split there).
* in_top_k: 1 (int8) where the target's prediction is among the k largest of its row: fewer than k entries of the
  row are strictly larger; 0 for a target index outside the row or a row with a non-finite prediction.
"""
import numpy

from . import checks, indexing


def _scatter_add_rows(xp, target, rows, values):
    """target[rows[i]] += values[i] over a 2-d (n, inner) view (or a 1-d one), repeated rows accumulating in the
    order of i (kernels/indexing.add_at_rows: the same sums on a device, run after run)."""
    if target.ndim == 1 and xp is not numpy:
        indexing.add_at_rows(xp, target.reshape(-1, 1), rows, values.reshape(-1, 1))
    else:
        indexing.add_at_rows(xp, target, rows, values)


def _flat_rows(xp, indices, dense_shape, what):
    """Row numbers (into the dense tensor seen as (prod(shape[:q]), rest)) of each index row; checks bounds."""
    q = indices.shape[-1]
    if q > len(dense_shape):
        raise ValueError("%s: index rows of length %d for a %d-d tensor" % (what, q, len(dense_shape)))
    idx = indices.reshape(-1, q).astype(xp.int64)
    lead = numpy.array(dense_shape[:q], dtype=numpy.int64)
    if idx.size and xp is numpy:
        bad = (idx < 0) | (idx >= lead)
        if bad.any():
            raise IndexError("%s: index %s out of range for the leading dims %s" % (
                what, tuple(int(v) for v in idx[numpy.argmax(bad.any(axis=1))]), tuple(dense_shape[:q])))
    elif idx.size:
        # on a device: no wait here; the first bad row is named with the step's results (kernels/checks.py)
        bad = ((idx < 0) | (idx >= xp.asarray(lead))).any(axis=1)
        first = idx[xp.argmax(bad)]
        message = "%s: index (%s) out of range for the leading dims %s" % (
            what, ", ".join(["%d"] * q), tuple(dense_shape[:q]))
        checks.require(xp, xp.any(bad), message.replace("(%d)", "(%d,)"), *[first[j] for j in range(q)],
                       error=IndexError)
        idx = xp.clip(idx, 0, xp.asarray(numpy.maximum(lead - 1, 0)))
    strides = numpy.ones(q, dtype=numpy.int64)
    for i in range(q - 2, -1, -1):
        strides[i] = strides[i + 1] * lead[i + 1]
    return idx @ xp.asarray(strides) if q else xp.zeros(idx.shape[0], dtype=xp.int64)


def _dense_2d(shape, q):
    return int(numpy.prod(shape[:q], dtype=numpy.int64)), int(numpy.prod(shape[q:], dtype=numpy.int64))


def gather_nd(xp, params, indices):
    """out[b...] = params[indices[b...]] (a slice of params' trailing axes per index row)."""
    q = indices.shape[-1]
    rows = _flat_rows(xp, indices, params.shape, "gather_nd")
    n, inner = _dense_2d(params.shape, q)
    if inner == 0 or rows.size == 0:
        return xp.zeros(indices.shape[:-1] + params.shape[q:], dtype=params.dtype)
    out = params.reshape(n, inner)[rows]
    return out.reshape(indices.shape[:-1] + params.shape[q:])


def _scatter_into(xp, dense, indices, updates, what):
    q = indices.shape[-1]
    if dense.size == 0 or updates.size == 0:
        return dense
    rows = _flat_rows(xp, indices, dense.shape, what)
    n, inner = _dense_2d(dense.shape, q)
    _scatter_add_rows(xp, dense.reshape(n, inner), rows, updates.reshape(-1, inner))
    return dense


def scatter_nd(xp, indices, updates, *, shape):
    """zeros(shape) with updates added at their index rows."""
    out = xp.zeros(tuple(shape), dtype=updates.dtype)
    return _scatter_into(xp, out, indices, updates, "scatter_nd")


def scatter_nd_like(xp, like, indices, updates):
    """scatter_nd into zeros shaped like `like` (the gradient of gather_nd)."""
    out = xp.zeros(like.shape, dtype=updates.dtype)
    return _scatter_into(xp, out, indices, updates, "scatter_nd_like")


def tensor_scatter_nd_update(xp, params, updates, indices):
    """params with each indexed slice replaced: zeroed, then the updates added (repeated indices add up)."""
    q = indices.shape[-1]
    out = params.copy()
    if out.size == 0 or updates.size == 0:
        return out
    rows = _flat_rows(xp, indices, params.shape, "tensor_scatter_nd_update")
    n, inner = _dense_2d(params.shape, q)
    out.reshape(n, inner)[rows] = 0
    _scatter_add_rows(xp, out.reshape(n, inner), rows, updates.reshape(-1, inner))
    return out


def tensor_scatter_nd_add(xp, params, updates, indices):
    """params with the updates added at their index rows."""
    return _scatter_into(xp, params.copy(), indices, updates, "tensor_scatter_nd_add")


# --- dim_gather: out[i][j][k] = input[i][index[i][j][k]][k] (dim = 1) ---------------------------------------------
def dim_gather(xp, input, index, *, dim):  # noqa: A002 - OneFlow's argument name
    """input's entries along `dim` at `index` (same rank, the same size as input on every other axis)."""
    n = input.shape[dim]
    index = indexing.in_range(xp, index, n, "dim_gather: index out of range [0, %%d) along dim %d" % dim,
                              error=IndexError, name_index=False)
    return xp.take_along_axis(input, index.astype(xp.int64), axis=dim)


def dim_scatter_add_like(xp, dy, index, like, *, dim):
    """The gradient of dim_gather: zeros like `like` with dy added at the gathered positions."""
    out = xp.zeros(like.shape, dtype=dy.dtype)
    grids = list(xp.meshgrid(*[xp.arange(s) for s in index.shape], indexing="ij"))
    grids[dim] = index.astype(xp.int64)
    flat = xp.ravel_multi_index(tuple(g.reshape(-1) for g in grids), like.shape)
    _scatter_add_rows(xp, out.reshape(-1), flat, dy.reshape(-1))
    return out


# --- segment sums ------------------------------------------------------------------------------------------------
def _no_negative_ids(xp, segment_ids, what):
    if segment_ids.size:
        low = xp.min(segment_ids)
        checks.require(xp, low < 0, what + ": negative segment id %d", low)  # (with the step's results on a device)


def _segment_sum_into(xp, out, data, segment_ids, axis, offset):
    _no_negative_ids(xp, segment_ids, "unsorted_segment_sum")
    n = out.shape[axis]
    if out.size == 0 or segment_ids.size == 0:
        return out
    outer = int(numpy.prod(out.shape[:axis], dtype=numpy.int64))
    inner = int(numpy.prod(out.shape[axis + 1:], dtype=numpy.int64))
    ids = segment_ids.reshape(-1).astype(xp.int64) - offset
    valid = (ids >= 0) & (ids < n)
    contrib = data.reshape(outer, ids.size, inner) * valid.reshape(1, -1, 1).astype(data.dtype)
    safe = xp.where(valid, ids, 0)
    indexing._scatter_add(xp, out.reshape(outer, n, inner), safe, contrib)
    return out


def unsorted_segment_sum(xp, data, segment_ids, *, axis, num_segments, offset=0):
    """data's slices summed by segment id along `axis` (segment_ids covers data's axes axis .. axis+m-1)."""
    m = segment_ids.ndim
    shape = data.shape[:axis] + (num_segments,) + data.shape[axis + m:]
    out = xp.zeros(shape, dtype=data.dtype)
    return _segment_sum_into(xp, out, data, segment_ids, axis, offset)


def unsorted_segment_sum_like(xp, data, segment_ids, like, *, axis, offset=0):
    """unsorted_segment_sum with as many segments as `like` has along `axis` (this piece of it)."""
    out = xp.zeros(like.shape, dtype=data.dtype)
    return _segment_sum_into(xp, out, data, segment_ids, axis, offset)


def unsorted_batch_segment_sum(xp, data, segment_ids, *, num_segments):
    """Per batch row (the leading axes of segment_ids but its last): data (b..., k, r...) summed into
    (b..., num_segments, r...) by segment_ids (b..., k)."""
    nb = segment_ids.ndim - 1
    batch = int(numpy.prod(segment_ids.shape[:nb], dtype=numpy.int64))
    k = segment_ids.shape[-1]
    inner = int(numpy.prod(data.shape[nb + 1:], dtype=numpy.int64))
    out = xp.zeros(data.shape[:nb] + (num_segments,) + data.shape[nb + 1:], dtype=data.dtype)
    _no_negative_ids(xp, segment_ids, "unsorted_batch_segment_sum")
    if out.size == 0 or segment_ids.size == 0:
        return out
    ids = segment_ids.reshape(batch, k).astype(xp.int64)
    valid = (ids >= 0) & (ids < num_segments)
    rows = (xp.arange(batch).reshape(batch, 1) * num_segments + xp.where(valid, ids, 0)).reshape(-1)
    contrib = data.reshape(batch * k, inner) * valid.reshape(-1, 1).astype(data.dtype)
    _scatter_add_rows(xp, out.reshape(batch * num_segments, inner), rows, contrib)
    return out


# --- in_top_k -----------------------------------------------------------------------------------------------------
def in_top_k(xp, targets, predictions, *, k):
    """int8: whether predictions[i, targets[i]] is among the k largest of row i (fewer than k entries larger);
    0 where that cannot be said: a target outside the row, or a non-finite prediction in the row."""
    n, classes = predictions.shape
    t = targets.astype(xp.int64)
    inside = (t >= 0) & (t < classes)
    target_value = predictions[xp.arange(n), xp.where(inside, t, 0)]
    finite = xp.all(xp.isfinite(predictions), axis=1)
    larger = xp.sum(predictions > target_value[:, None], axis=1)
    return (inside & finite & (larger < k)).astype(xp.int8)
