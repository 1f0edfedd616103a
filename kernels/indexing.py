"""Reading rows by index and writing them back: gather, batch_gather, their gradients, top_k.

Sizes come from the arrays given (a device's piece), never from a logical shape. `offset` is where this piece of
`params` starts along the gathered axis when params is split along it: indices outside the piece read zeros, so
the pieces' results add up to the whole (partial sums).
"""
import numpy

from . import checks, cuda_scatter


def _no_negative(xp, indices, what):
    """A negative index is a ValueError naming it: at once on the host; on a device with the step's results
    (`checks`: no wait for the device here)."""
    if not indices.size:
        return
    low = xp.min(indices)
    checks.require(xp, low < 0, what.replace("%", "%%") + ": negative index %d", low)


def in_range(xp, indices, n, message, error=ValueError, name_index=True):
    """Indices outside [0, n) fail with `message` (formatted with the offending index — the lowest when one is
    negative, else the highest — and n; with n alone unless `name_index`): at once on the host, with the step's
    results on a device. Returns the indices clipped into range on a device (so that the step runs on valid reads
    until the check is read), as they are on the host."""
    if not indices.size:
        return indices
    low, high = xp.min(indices), xp.max(indices)
    values = (xp.where(low < 0, low, high), n) if name_index else (n,)
    checks.require(xp, (low < 0) | (high >= n), message, *values, error=error)
    return indices if xp is numpy else xp.clip(indices, 0, max(n - 1, 0))


def _local_rows(xp, indices, offset, n):
    """Indices shifted into the local range [0, n), and which of them fall inside it."""
    idx = indices.astype(xp.int64) - offset if offset else indices.astype(xp.int64)
    valid = (idx >= 0) & (idx < n)
    return xp.where(valid, idx, 0), valid


def add_at_rows(xp, target, rows, values):
    """target[rows[i]] += values[i] over a 2-d (N, inner) target, repeated rows accumulating in the order of i:
    numpy's `add.at`; on a device that builds raw kernels, the same sums in the same order (kernels/cuda_scatter.py:
    CuPy's `add.at` adds with atomics, in an order that changes from run to run); else the module's `add.at`."""
    if xp is numpy:
        numpy.add.at(target, rows, values)
    elif target.size == 0 or rows.size == 0:
        return
    elif hasattr(xp, "RawModule") and cuda_scatter.supported(target.dtype, "sum") and target.flags.c_contiguous:
        cuda_scatter.add_rows(xp, target, rows, values.reshape(rows.size, target.shape[1]))
    else:
        xp.add.at(target, rows, values)


def _scatter_add(xp, target, index, values):
    """target[:, index, :] += values with repeated indices accumulating (numpy `add.at`), on a C-contiguous
    (outer, N, inner) target: as rows o·N + index[j] of (outer·N, inner), in numpy's order (o, then j)."""
    if xp is numpy:
        numpy.add.at(target, (slice(None), index), values)
        return
    outer, n, inner = target.shape
    if target.size == 0 or values.size == 0:  # (an empty piece: -1 cannot be inferred in a reshape of 0 items)
        return
    rows = index.reshape(-1) if outer == 1 else \
        (xp.arange(outer, dtype=numpy.int64).reshape(-1, 1) * n + index.reshape(1, -1)).reshape(-1)
    add_at_rows(xp, target.reshape(outer * n, inner), rows, values.reshape(-1, inner))


def gather(xp, params, indices, *, axis, offset=0):
    """params.take(indices, axis); indices outside this piece's rows [offset, offset + n) read zeros (the legacy
    kernel's rule)."""
    _no_negative(xp, indices, "gather")
    n = params.shape[axis]
    out_shape = params.shape[:axis] + indices.shape + params.shape[axis + 1:]
    if n == 0:
        return xp.zeros(out_shape, dtype=params.dtype)
    safe, valid = _local_rows(xp, indices, offset, n)
    out = xp.take(params, safe, axis=axis)
    mask = valid.reshape((1,) * axis + indices.shape + (1,) * (params.ndim - axis - 1))
    return xp.where(mask, out, xp.zeros((), dtype=params.dtype))


def gather_grad(xp, dy, indices, like, *, axis, offset=0):
    """d params of `gather`, shaped like `like` (this piece of params): dy's rows summed into the rows they were
    read from, repeated indices accumulating."""
    shape = like.shape
    n = shape[axis]
    out = xp.zeros(shape, dtype=dy.dtype)
    if n == 0 or indices.size == 0:
        return out
    outer = int(numpy.prod(shape[:axis], dtype=numpy.int64))
    inner = int(numpy.prod(shape[axis + 1:], dtype=numpy.int64))
    safe, valid = _local_rows(xp, indices.reshape(-1), offset, n)
    contrib = dy.reshape(outer, indices.size, inner) * valid.reshape(1, -1, 1).astype(dy.dtype)
    _scatter_add(xp, out.reshape(outer, n, inner), safe, contrib)
    return out


# --- batch_gather: params (b..., n, r...), indices (b..., k) -> (b..., k, r...) ---------------------------------
def _batch_flat(params_shape, indices):
    nb = indices.ndim - 1
    batch = int(numpy.prod(indices.shape[:nb], dtype=numpy.int64))
    inner = int(numpy.prod(params_shape[nb + 1:], dtype=numpy.int64))
    return nb, batch, params_shape[nb], inner


def batch_gather(xp, params, indices):
    """out[b..., j, r...] = params[b..., indices[b..., j], r...]; every index must lie in [0, n)."""
    nb, batch, n, inner = _batch_flat(params.shape, indices)
    indices = in_range(xp, indices, n, "batch_gather: indices must lie in [0, %d)", name_index=False)
    k = indices.shape[-1]
    rows = xp.arange(batch).reshape(batch, 1)
    out = params.reshape(batch, n, inner)[rows, indices.reshape(batch, k).astype(xp.int64)]
    return out.reshape(indices.shape + params.shape[nb + 1:])


def batch_gather_grad(xp, dy, indices, like):
    """d params of `batch_gather`, shaped like `like`."""
    nb, batch, n, inner = _batch_flat(like.shape, indices)
    k = indices.shape[-1]
    out = xp.zeros(like.shape, dtype=dy.dtype)
    flat_rows = (xp.arange(batch).reshape(batch, 1) * n + indices.reshape(batch, k).astype(xp.int64)).reshape(-1)
    _scatter_add(xp, out.reshape(1, batch * n, inner), flat_rows, dy.reshape(1, batch * k, inner))
    return out


def top_k(xp, x, *, k):
    """int32 indices of the k largest entries of each row (last axis), largest first; ties go to the lower index
    (the legacy order)."""
    key = x.astype(xp.int64) if x.dtype.kind in "ub" else x
    order = xp.argsort(-key, axis=-1, kind="stable")
    return xp.ascontiguousarray(order[..., :k]).astype(xp.int32)


# --- embedding (OneFlow 0.9's embedding op: gather rows of the table; padding_idx's row gets no gradient) ---------
def embedding(xp, weight, indices, *, padding_idx=-1, offset=0):
    """weight rows at `indices` (gather along axis 0; `offset` as gather's when the rows are split)."""
    return gather(xp, weight, indices, axis=0, offset=offset)


def embedding_grad(xp, dy, indices, like, *, padding_idx=-1, offset=0, scale_grad_by_freq=False):
    """d weight of `embedding`: dy's rows summed into their rows, the padding row's left 0; with
    `scale_grad_by_freq` each row's sum divided by how often its index occurs in `indices` (OneFlow 0.9
    user/kernels/embedding_kernel_util.cpp: the count over every index, the padding index's included; `indices` is
    then whole on every device, the op's signatures see to it)."""
    out = gather_grad(xp, dy, indices, like, axis=0, offset=offset)
    local = padding_idx - offset
    if padding_idx >= 0 and 0 <= local < out.shape[0]:
        out[local] = 0
    if scale_grad_by_freq and indices.size:
        rows = indices.reshape(-1).astype(xp.int64) - offset
        inside = (rows >= 0) & (rows < out.shape[0])  # counted by weight, not selected: no boolean-mask read
        freq = xp.bincount(xp.where(inside, rows, 0), weights=inside.astype(numpy.float64),
                           minlength=out.shape[0])[:out.shape[0]]
        shape = (out.shape[0],) + (1,) * (out.ndim - 1)
        out /= xp.maximum(freq, 1).astype(out.dtype).reshape(shape)
    return out


def embedding_renorm(xp, weight, indices, *, max_norm, norm_type, num_embeddings, offset=0):
    """In place: each row of `weight` that `indices` looks up whose norm_type-norm exceeds max_norm is scaled by
    max_norm / (norm + 1e-7) (OneFlow 0.9 user/kernels/embedding_kernel_util.cpp EmbeddingReNormFunctor: the norm
    accumulated in double; each row once however often it is looked up). `offset`: the first row of this piece
    when the rows are split; `num_embeddings` the whole weight's rows (an index outside them is refused before any
    row is written)."""
    if xp is not numpy:
        return _embedding_renorm_on_device(xp, weight, indices, max_norm, norm_type, num_embeddings, offset)
    n = weight.shape[0]
    rows = xp.unique(indices.reshape(-1).astype(xp.int64))
    if rows.size and (int(rows[0]) < 0 or int(rows[-1]) >= num_embeddings):  # (checked before any row is written)
        bad = int(rows[0]) if int(rows[0]) < 0 else int(rows[-1])
        raise IndexError("embedding_renorm: index %d is out of range for %d embeddings" % (bad, num_embeddings))
    rows = rows - offset
    rows = rows[(rows >= 0) & (rows < n)]
    if rows.size == 0:
        return
    w = weight[rows].astype(xp.float64)
    if norm_type == float("inf"):
        norms = xp.max(xp.abs(w), axis=1)
    else:
        norms = xp.sum(xp.abs(w) ** norm_type, axis=1) ** (1.0 / norm_type)
    over = norms > max_norm
    if bool(over.any()):
        scale = max_norm / (norms[over] + 1e-7)
        weight[rows[over]] = (w[over] * scale.reshape(-1, 1)).astype(weight.dtype)


def _embedding_renorm_on_device(xp, weight, indices, max_norm, norm_type, num_embeddings, offset):
    """`embedding_renorm` without reading anything back: which rows are looked up is a count per row (bincount),
    every row's norm is computed and only the looked-up rows over max_norm are rewritten (the same formula, so the
    same values). The index check is read with the step's results (`checks`); until then a failed check writes no
    row, so the weight is never half-renormalised."""
    n = weight.shape[0]
    flat = indices.reshape(-1).astype(xp.int64)
    if not flat.size or not n:
        return
    low, high = xp.min(flat), xp.max(flat)
    failed = (low < 0) | (high >= num_embeddings)
    checks.require(xp, failed, "embedding_renorm: index %d is out of range for %d embeddings",
                   xp.where(low < 0, low, high), num_embeddings, error=IndexError)
    local = flat - offset
    inside = (local >= 0) & (local < n)
    looked_up = xp.bincount(xp.where(inside, local, 0), weights=inside.astype(numpy.float64), minlength=n)[:n] > 0
    w = weight.astype(xp.float64)
    if norm_type == float("inf"):
        norms = xp.max(xp.abs(w), axis=1)
    else:
        norms = xp.sum(xp.abs(w) ** norm_type, axis=1) ** (1.0 / norm_type)
    rewrite = looked_up & (norms > max_norm) & ~failed
    scaled = (w * (max_norm / (norms + 1e-7)).reshape(-1, 1)).astype(weight.dtype)
    weight[...] = xp.where(rewrite.reshape((n,) + (1,) * (weight.ndim - 1)), scaled, weight)
