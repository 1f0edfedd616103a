"""`nn.functional.grid_sample` and `affine_grid` (OneFlow 0.9 `nn/functional` docstrings; torch's formulas):
sampling an (N, C, H, W) input at the (x, y) positions of a grid in [-1, 1], or an (N, C, D, H, W) volume at
(x, y, z) positions (api-gaps: OneFlow 0.9's grid_sample and affine_grid take both).

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


def _corner(flat, idx, weight, sizes, n, c, hw_out):
    """weight * input[n, :, (iz,) iy, ix] where the position lies in the volume, 0 elsewhere; idx = [ix, iy(, iz)]
    are float positions of whole pixels (N, prod(out)), sizes = [w, h(, d)]."""
    inside, lin, stride = None, None, 1.0
    for i, size in zip(idx, sizes):
        ok = F.mul(F.cast(F.ge(i, 0.0), i.dtype), F.cast(F.le(i, size - 1.0), i.dtype))
        inside = ok if inside is None else F.mul(inside, ok)
        term = F.mul(F.clamp(i, 0.0, size - 1.0), stride)
        lin = term if lin is None else F.add(lin, term)
        stride *= size
    index = F.cast(lin, dtypes.int64)
    index = F.reshape(index, (n, 1, hw_out))
    index = T.expand(index, (n, c, hw_out))
    values = apply_op("batch_gather", [flat, index])  # (N, C, prod(out))
    return F.mul(values, F.unsqueeze(F.mul(weight, inside), 1))


def _cubic_weights(t):
    """The four bicubic convolution weights of taps -1, 0, 1, 2 at fraction t (A = -0.75; OneFlow 0.9
    user/kernels/grid_sample_kernel_util.h get_cubic_upsample_coefficients)."""
    a = -0.75

    def near(x):  # ((A + 2) x - (A + 3)) x^2 + 1
        return F.add(F.mul(F.mul(F.sub(F.mul(x, a + 2), a + 3), x), x), 1.0)

    def far(x):  # ((A x - 5A) x + 8A) x - 4A
        return F.sub(F.mul(F.add(F.mul(F.sub(F.mul(x, a), 5 * a), x), 8 * a), x), 4 * a)

    return [far(F.add(t, 1.0)), near(t), near(F.sub(1.0, t)), far(F.sub(2.0, t))]


def _tap(pos, size, padding_mode, align_corners):
    """A bicubic tap's whole-pixel position after the padding rule (GetValueBounded's ComputeCoordinates): border
    clamps, reflection reflects then clamps, zeros leaves it (read as 0 outside)."""
    if padding_mode == "border":
        return F.clamp(pos, 0.0, float(size - 1))
    if padding_mode == "reflection":
        pos = _reflect(pos, 0.0, float(size - 1)) if align_corners else _reflect(pos, -0.5, size - 0.5)
        return F.clamp(pos, 0.0, float(size - 1))
    return pos


def _bicubic(flat, g, sizes, padding_mode, align_corners, n, c, hw_out):
    """Sixteen taps around floor(position) of the unnormalised (unpadded) grid position, weighted by the cubic
    convolution of the fractions, each tap padded on its own (OneFlow's and torch's bicubic grid sampler)."""
    pos = [_unnormalize(F.reshape(F.index(g, (slice(None), slice(None), j)), (n, hw_out)), sizes[j],
                        align_corners) for j in range(2)]
    lows = [F.floor(p).detach() for p in pos]
    wx, wy = (_cubic_weights(F.sub(p, lo)) for p, lo in zip(pos, lows))
    out = None
    for i in range(4):
        py = _tap(F.add(lows[1], float(i - 1)), sizes[1], padding_mode, align_corners).detach()
        for j in range(4):
            px = _tap(F.add(lows[0], float(j - 1)), sizes[0], padding_mode, align_corners).detach()
            term = _corner(flat, [px, py], F.mul(wx[j], wy[i]), sizes, n, c, hw_out)
            out = term if out is None else F.add(out, term)
    return out


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):  # noqa: A002
    """Samples input (N, C, H, W) at grid (N, Hout, Wout, 2) positions (x, y) -> (N, C, Hout, Wout), or a volume
    (N, C, D, H, W) at grid (N, Dout, Hout, Wout, 3) positions (x, y, z) -> (N, C, Dout, Hout, Wout) ('bilinear' is
    then trilinear; 'bicubic' on 4-D inputs only: OneFlow 0.9 user/ops/grid_sample_op.cpp,
    user/kernels/grid_sample_kernel_util.h)."""
    if input.ndim not in (4, 5):
        raise RuntimeError("MUST be 4D or 5D input")
    k = input.ndim - 2
    if grid.ndim != input.ndim:
        raise RuntimeError("Grid and input MUST have same dimention")
    if grid.shape[-1] != k:
        raise RuntimeError("Grid shape MUST (N, H_out, W_out, 2)" if k == 2 else
                           "Grid shape MUST (N, H_out, W_out, 3)")
    if mode == "bicubic" and k == 3:
        raise RuntimeError("Mode='bicubic' supports only 4-D input")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("grid_sample(): mode must be 'bilinear', 'nearest' or 'bicubic', got %r" % (mode,))
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("grid_sample(): padding_mode must be 'zeros', 'border' or 'reflection', got %r"
                         % (padding_mode,))
    n, c = int(input.shape[0]), int(input.shape[1])
    spatial = [int(d) for d in input.shape[2:]]  # (D,) H, W
    if grid.shape[0] != n:
        raise ValueError("grid_sample(): grid has %d samples, input %d" % (grid.shape[0], n))
    out_sizes = tuple(int(d) for d in grid.shape[1:-1])
    hw_out = int(np.prod(out_sizes))
    g = F.reshape(F.cast(grid, input.dtype), (n, hw_out, k))
    sizes = spatial[::-1]  # w, h(, d): the grid's coordinate order
    pos = [_source_positions(F.reshape(F.index(g, (slice(None), slice(None), j)), (n, hw_out)), sizes[j],
                             padding_mode, align_corners) for j in range(k)]
    flat = F.reshape(input, (n, c, int(np.prod(spatial))))
    if mode == "bicubic":
        return F.reshape(_bicubic(flat, g, sizes, padding_mode, align_corners, n, c, hw_out), (n, c) + out_sizes)
    if mode == "nearest":
        # round half to even, as torch's nearbyint
        out = _corner(flat, [F.round(p).detach() for p in pos], creation.ones_like(pos[0]), sizes, n, c, hw_out)
    else:
        lows = [F.floor(p).detach() for p in pos]
        fracs = [F.sub(p, lo) for p, lo in zip(pos, lows)]
        out = None
        for corner in range(2 ** k):  # each corner: bit j set = the upper neighbour along coordinate j
            idx, weight = [], None
            for j in range(k):
                upper = (corner >> j) & 1
                idx.append(F.add(lows[j], 1.0) if upper else lows[j])
                wj = fracs[j] if upper else F.sub(1.0, fracs[j])
                weight = wj if weight is None else F.mul(weight, wj)
            term = _corner(flat, idx, weight, sizes, n, c, hw_out)
            out = term if out is None else F.add(out, term)
    return F.reshape(out, (n, c) + out_sizes)


def _base_coords(size, align_corners):
    if size <= 1:
        return np.zeros((size,), np.float64)
    coords = np.linspace(-1.0, 1.0, size)
    return coords if align_corners else coords * (size - 1) / size


def affine_grid(theta, size, align_corners=False):
    """The sampling grid of the affine maps theta for an output of `size`: 2-D, theta (N, 2, 3) and size
    (N, C, H, W) -> (N, H, W, 2), grid[n, i, j] = theta[n] @ (x_j, y_i, 1); 3-D, theta (N, 3, 4) and size
    (N, C, D, H, W) -> (N, D, H, W, 3), grid[n, l, i, j] = theta[n] @ (x_j, y_i, z_l, 1) (OneFlow 0.9
    user/ops/affine_grid_op.cpp)."""
    size = [int(s) for s in size]
    if theta.ndim != 3 or theta.shape[1] not in (2, 3):
        raise RuntimeError("Theta MUST be 2D or 3D grid")
    if theta.shape[1] == 2:
        if theta.shape[2] != 3:
            raise RuntimeError("Theta shape  MUST be (N, 2, 3) or (N, 3, 4)")
        if len(size) != 4:
            raise RuntimeError("Dimension of size MUST be 4, when 2d affine grid")
    else:
        if theta.shape[2] != 4:
            raise RuntimeError("Theta shape  MUST be (N, 2, 3) or (N, 3, 4)")
        if len(size) != 5:
            raise RuntimeError("Dimension of size MUST be 4, when 3d affine grid")  # (OneFlow's words)
    if theta.shape[0] != size[0]:
        raise RuntimeError("Theta and size MUST have same batch dimension")
    n, spatial = size[0], size[2:]
    k = len(spatial)
    coords = [_base_coords(m, align_corners) for m in spatial[::-1]]  # x over W, y over H(, z over D)
    shape = tuple(spatial)
    columns = []
    for j, cs in enumerate(coords):  # coordinate j varies along spatial axis k - 1 - j
        view = [1] * k
        view[k - 1 - j] = len(cs)
        columns.append(np.broadcast_to(cs.reshape(view), shape))
    columns.append(np.ones(shape))
    cells = int(np.prod(shape))
    base = np.stack(columns, axis=-1).reshape(1, cells, k + 1)
    base_t = creation.new_tensor_like(np.broadcast_to(base, (n, cells, k + 1)).copy(), theta, dtype=theta.dtype)
    grid = F.matmul(base_t, theta, transpose_b=True)  # (N, cells, k)
    return F.reshape(grid, (n,) + shape + (k,))
