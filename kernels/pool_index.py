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
    """(maxima of PyTorch's adaptive windows, their flat indices within each input plane)."""
    spatial = tuple(x.shape[2:])
    out = xp.empty(tuple(x.shape[:2]) + tuple(output_size), dtype=x.dtype)
    ind = xp.empty(out.shape, dtype=np.int64)
    bins = [pool_nd._bins(n, o) for n, o in zip(spatial, output_size)]
    for idx in itertools.product(*[range(o) for o in output_size]):
        win = [bins[d][i] for d, i in enumerate(idx)]
        region = x[(Ellipsis,) + tuple(slice(a, b) for a, b in win)]
        shape = region.shape[2:]
        flat = region.reshape(region.shape[:2] + (int(np.prod(shape)),))
        local = flat.argmax(axis=2)  # the first maximum in row-major order
        out[(Ellipsis,) + idx] = xp.take_along_axis(flat, local[..., None], axis=2)[..., 0]
        # local index within the window -> flat index within the plane
        total = xp.zeros(local.shape, dtype=np.int64)
        rest = local
        for d in range(len(shape) - 1, -1, -1):
            coord = rest % shape[d] + win[d][0]
            rest = rest // shape[d]
            total = total + coord * int(np.prod(spatial[d + 1:]))
        ind[(Ellipsis,) + idx] = total
    return out, ind


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
