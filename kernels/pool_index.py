"""Max pooling that also gives where each maximum came from, and its inverse: OneFlow 0.9's `max_pool_Nd` with its
`indice` output (`return_indices=True`), `adaptive_max_poolNd` and `max_unpool_Nd`, channels first (N, C, *spatial),
1 to 3 spatial dimensions.

An index is the flat position of the maximal cell within its (n, c) plane of the unpadded input, as OneFlow's and
PyTorch's: row-major over the spatial axes. Ties go to the first maximal cell in window order (row-major), padded
cells never win (the rules of `pool_nd.py`). The gradients of both pools add dy into the cells the indices name;
unpooling writes each value into the cell its index names (`max_unpool`) and its gradient reads them back.
"""
import itertools

import numpy as np

from . import checks, pool_nd


def _planes(a):
    """(N * C, cells of one plane) view of a channels-first array."""
    return a.reshape(a.shape[0] * a.shape[1], int(np.prod(a.shape[2:])))


def max_pool_with_indices(xp, x, *, ksize, strides, pads, ceil_mode=False, dilations=None):
    """(window maxima, their int64 flat indices within each input plane)."""
    nd = x.ndim - 2
    spatial = tuple(x.shape[2:])
    dil = tuple(dilations) if dilations is not None else (1,) * nd
    outs, extra = pool_nd._geometry(spatial, ksize, strides, pads, dil, ceil_mode)
    padded = pool_nd._pad(xp, x, pads, extra, pool_nd._lowest(xp, x.dtype))
    where = xp.arange(int(np.prod(spatial)), dtype=np.int64).reshape((1, 1) + spatial)
    where = pool_nd._pad(xp, where, pads, extra, -1)
    best = ind = None
    for off in itertools.product(*[range(k) for k in ksize]):
        v = pool_nd._view(padded, off, outs, strides, dil)
        w = pool_nd._view(where, off, outs, strides, dil)
        if best is None:
            best, ind = v.copy(), xp.broadcast_to(w, v.shape).copy()
            continue
        # strictly greater keeps the first maximum; a window whose cells so far were all padding takes any cell
        better = ((v > best) | (ind < 0)) & (w >= 0)
        best = xp.where(better, v, best)
        ind = xp.where(better, w, ind)
    return xp.ascontiguousarray(best), xp.ascontiguousarray(ind)


def index_grad(xp, dy, indices, *, input_spatial):
    """d input of a pool with indices: each dy added into the input cell its index names (N, C from dy)."""
    rows, cells = dy.shape[0] * dy.shape[1], int(np.prod(input_spatial))
    flat = (xp.arange(rows, dtype=np.int64)[:, None] * cells + _planes(indices)).reshape(-1)
    dx = xp.bincount(flat, weights=_planes(dy).reshape(-1).astype(np.float64), minlength=rows * cells)
    return dx.astype(dy.dtype).reshape(tuple(dy.shape[:2]) + tuple(input_spatial))


def adaptive_max_pool(xp, x, *, output_size):
    """(maxima of PyTorch's adaptive windows, their flat indices within each input plane).

    Every window at once (a handful of launches whatever the output size, no loop over output cells): along each
    axis the o windows are padded to the longest one's length K and gathered as (o, K); the padding reads the
    lowest value, so the first maximum of a window in row-major order (argmax over its K_1 x K_2 ... cells; padding
    comes after the window's cells of the same row and never wins) is the one the window alone gives."""
    spatial = tuple(x.shape[2:])
    nd = len(spatial)
    index, valid, starts, lengths = [], np.ones((1,) * (2 * nd), dtype=bool), [], []
    for d, (n, o) in enumerate(zip(spatial, output_size)):
        bins = pool_nd._bins(n, o)
        first = np.array([a for a, _ in bins], dtype=np.int64)
        k = max(b - a for a, b in bins)
        within = np.arange(k)[None, :] < np.array([b - a for a, b in bins])[:, None]  # (o, K)
        shape = [1] * (2 * nd)
        shape[2 * d], shape[2 * d + 1] = o, k
        index.append(xp.asarray(np.minimum(first[:, None] + np.arange(k)[None, :], n - 1).reshape(shape)))
        valid = valid & within.reshape(shape)
        starts.append(first)
        lengths.append(k)
    cells = x[(slice(None), slice(None)) + tuple(index)]  # (N, C, o_1, K_1, o_2, K_2, ...)
    cells = xp.where(xp.asarray(valid), cells, pool_nd._lowest(xp, x.dtype))
    order = (0, 1) + tuple(2 + 2 * d for d in range(nd)) + tuple(3 + 2 * d for d in range(nd))
    cells = xp.transpose(cells, order).reshape(tuple(x.shape[:2]) + tuple(output_size) + (int(np.prod(lengths)),))
    local = cells.argmax(axis=-1)  # the first maximum in the window's row-major order
    out = xp.take_along_axis(cells, local[..., None], axis=-1)[..., 0]
    ind = xp.zeros(local.shape, dtype=np.int64)
    rest = local
    for d in range(nd - 1, -1, -1):
        shape = [1] * (2 + nd)
        shape[2 + d] = output_size[d]
        coord = rest % lengths[d] + xp.asarray(starts[d].reshape(shape))
        rest = rest // lengths[d]
        ind = ind + coord * int(np.prod(spatial[d + 1:]))
    return xp.ascontiguousarray(out), ind


def max_unpool(xp, x, indices, *, output_spatial):
    """Zeros of (N, C, *output_spatial) with each x written at the flat index `indices` names in its plane."""
    rows, cells = x.shape[0] * x.shape[1], int(np.prod(output_spatial))
    idx = _planes(indices).astype(np.int64, copy=False)
    flat = (xp.arange(rows, dtype=np.int64)[:, None] * cells + idx).reshape(-1)
    invalid = ((idx < 0) | (idx >= cells)).reshape(-1)
    if invalid.size:
        # OneFlow's message and offset (user/kernels/max_unpool_kernel.cpp): the offset in the whole output of the
        # first invalid index; read with the step's results on a device (`checks`), at once on the host
        checks.require(xp, xp.any(invalid), "Found an invalid max index: %d, output volumes are of size %d",
                       flat[xp.argmax(invalid)], rows * cells, error=RuntimeError)
        if xp is not np:  # valid writes until the check is read
            flat = xp.where(invalid, 0, flat)
    y = xp.zeros(rows * cells, dtype=x.dtype)
    y[flat] = _planes(x).reshape(-1)
    return y.reshape(tuple(x.shape[:2]) + tuple(output_spatial))


def max_unpool_grad(xp, dy, indices):
    """d x of `max_unpool`: dy read back at each index (the shape of indices)."""
    rows, cells = dy.shape[0] * dy.shape[1], int(np.prod(dy.shape[2:]))
    flat = (xp.arange(rows, dtype=np.int64)[:, None] * cells + _planes(indices).astype(np.int64)).reshape(-1)
    return dy.reshape(-1)[flat].reshape(indices.shape)
