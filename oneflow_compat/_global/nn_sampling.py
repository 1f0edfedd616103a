"""`nn.functional.grid_sample` and `affine_grid` (OneFlow 0.9 `nn/functional` docstrings; torch's formulas):
sampling an (N, C, H, W) input at the (x, y) positions of a grid in [-1, 1].

Composed from registered ops: the corner positions come from `floor` (no gradient), their values from one
`batch_gather` per corner over the flattened image, and the bilinear weights from arithmetic on the grid, so the
gradient reaches both the input (through the gathers) and the grid (through the weights), eagerly and in nn.Graph.
Out-of-range corners read zeros (`padding_mode='zeros'`); 'border' clamps the positions to the image, 'reflection'
reflects them back into it first.
"""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, functional as F, tensor_functions as T
from oneflow_compat._global.dispatch import apply_op


def _unnormalize(coord, size, align_corners):
    """Grid coordinates in [-1, 1] to pixel positions: -1/1 the centres of the corner pixels (align_corners) or
    their outer edges."""
    if align_corners:
        return F.mul(F.add(coord, 1.0), (size - 1) / 2.0)
    return F.div(F.sub(F.mul(F.add(coord, 1.0), float(size)), 1.0), 2.0)


def _reflect(pos, low, high):
    """Positions reflected into [low, high] (as many bounces as it takes)."""
    span = high - low
    if span <= 0:
        return F.mul(pos, 0.0)
    rel = F.abs(F.sub(pos, low))
    flips = F.floor(F.div(rel, span)).detach()
    extra = F.sub(rel, F.mul(flips, span))
    even = F.cast(F.eq(F.sub(flips, F.mul(F.floor(F.div(flips, 2.0)), 2.0)), 0), pos.dtype)
    return F.add(F.mul(even, F.add(extra, low)), F.mul(F.sub(1.0, even), F.sub(high, extra)))


def _source_positions(coord, size, padding_mode, align_corners):
    pos = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        return F.clamp(pos, 0.0, float(size - 1))
    if padding_mode == "reflection":
        pos = _reflect(pos, 0.0, float(size - 1)) if align_corners else _reflect(pos, -0.5, size - 0.5)
        return F.clamp(pos, 0.0, float(size - 1))
    return pos


def _corner(flat, ix, iy, weight, h, w, n, c, hw_out):
    """weight * input[n, :, iy, ix] where (ix, iy) lies in the image, 0 elsewhere; ix/iy are float positions of
    whole pixels (N, Hout*Wout)."""
    inside = F.mul(F.mul(F.cast(F.ge(ix, 0.0), ix.dtype), F.cast(F.le(ix, w - 1.0), ix.dtype)),
                   F.mul(F.cast(F.ge(iy, 0.0), iy.dtype), F.cast(F.le(iy, h - 1.0), iy.dtype)))
    lin = F.add(F.mul(F.clamp(iy, 0.0, h - 1.0), float(w)), F.clamp(ix, 0.0, w - 1.0))
    index = F.cast(lin, dtypes.int64)
    index = F.reshape(index, (n, 1, hw_out))
    index = T.expand(index, (n, c, hw_out))
    values = apply_op("batch_gather", [flat, index])  # (N, C, Hout*Wout)
    return F.mul(values, F.unsqueeze(F.mul(weight, inside), 1))


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):  # noqa: A002
    """Samples input (N, C, H, W) at grid (N, Hout, Wout, 2) positions (x, y) -> (N, C, Hout, Wout)."""
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise NotImplementedError("grid_sample(): 4-D input (N, C, H, W) and grid (N, H_out, W_out, 2) are "
                                  "supported, got input %s and grid %s" % (tuple(input.shape), tuple(grid.shape)))
    if mode not in ("bilinear", "nearest"):
        raise ValueError("grid_sample(): mode must be 'bilinear' or 'nearest', got %r" % (mode,))
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("grid_sample(): padding_mode must be 'zeros', 'border' or 'reflection', got %r"
                         % (padding_mode,))
    n, c, h, w = (int(d) for d in input.shape)
    if grid.shape[0] != n:
        raise ValueError("grid_sample(): grid has %d samples, input %d" % (grid.shape[0], n))
    hout, wout = int(grid.shape[1]), int(grid.shape[2])
    hw_out = hout * wout
    g = F.reshape(F.cast(grid, input.dtype), (n, hw_out, 2))
    gx = F.reshape(F.index(g, (slice(None), slice(None), 0)), (n, hw_out))
    gy = F.reshape(F.index(g, (slice(None), slice(None), 1)), (n, hw_out))
    x = _source_positions(gx, w, padding_mode, align_corners)
    y = _source_positions(gy, h, padding_mode, align_corners)
    flat = F.reshape(input, (n, c, h * w))
    if mode == "nearest":
        # round half to even, as torch's nearbyint
        out = _corner(flat, F.round(x).detach(), F.round(y).detach(), creation.ones_like(x), h, w, n, c, hw_out)
    else:
        x0, y0 = F.floor(x).detach(), F.floor(y).detach()
        x1, y1 = F.add(x0, 1.0), F.add(y0, 1.0)
        wx1, wy1 = F.sub(x, x0), F.sub(y, y0)
        wx0, wy0 = F.sub(1.0, wx1), F.sub(1.0, wy1)
        out = F.add(F.add(_corner(flat, x0, y0, F.mul(wx0, wy0), h, w, n, c, hw_out),
                          _corner(flat, x1, y0, F.mul(wx1, wy0), h, w, n, c, hw_out)),
                    F.add(_corner(flat, x0, y1, F.mul(wx0, wy1), h, w, n, c, hw_out),
                          _corner(flat, x1, y1, F.mul(wx1, wy1), h, w, n, c, hw_out)))
    return F.reshape(out, (n, c, hout, wout))


def _base_coords(size, align_corners):
    if size <= 1:
        return np.zeros((size,), np.float64)
    coords = np.linspace(-1.0, 1.0, size)
    return coords if align_corners else coords * (size - 1) / size


def affine_grid(theta, size, align_corners=False):
    """The (N, H, W, 2) sampling grid of the 2-D affine maps theta (N, 2, 3) for an output of `size`
    (N, C, H, W): grid[n, i, j] = theta[n] @ (x_j, y_i, 1)."""
    if len(size) != 4 or theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise NotImplementedError("affine_grid(): 2-D grids (theta (N, 2, 3), size (N, C, H, W)) are supported, "
                                  "got theta %s and size %s" % (tuple(theta.shape), tuple(size)))
    n, _, h, w = (int(s) for s in size)
    xs, ys = _base_coords(w, align_corners), _base_coords(h, align_corners)
    base = np.stack([np.broadcast_to(xs[None, :], (h, w)), np.broadcast_to(ys[:, None], (h, w)),
                     np.ones((h, w))], axis=-1).reshape(1, h * w, 3)
    base_t = creation.new_tensor_like(np.broadcast_to(base, (n, h * w, 3)).copy(), theta, dtype=theta.dtype)
    grid = F.matmul(base_t, theta, transpose_b=True)  # (N, H*W, 2)
    return F.reshape(grid, (n, h, w, 2))
