"""Kernels of the OneFlow 0.9 tensor ops the global API's users call at run time (flowvision's models, the basics
pages): flip, cumsum, triu, isnan / isinf, the dim scatters, erfinv.

Each works on the piece it is given (a device's piece under the op's SBP signatures), never on a logical shape.
"""
import math

import numpy

from . import checks, cuda_scatter, indexing, special


def flip(xp, x, *, dims):
    """x reversed along each axis of `dims` (a copy: the output owns its memory)."""
    return xp.ascontiguousarray(xp.flip(x, axis=tuple(dims))) if dims else x.copy()


def cumsum(xp, x, *, dim):
    """Running sums along `dim`, in x's dtype (OneFlow 0.9's cumsum keeps integer inputs as int64)."""
    dtype = xp.int64 if x.dtype.kind in "biu" else x.dtype
    return xp.cumsum(x, axis=dim, dtype=dtype)


def triu(xp, x, *, diagonal):
    """The entries on and above the `diagonal`-th diagonal of the last two axes; 0 below."""
    rows, cols = x.shape[-2], x.shape[-1]
    keep = (xp.arange(cols).reshape(1, cols) - xp.arange(rows).reshape(rows, 1)) >= diagonal
    return xp.where(keep, x, xp.zeros((), dtype=x.dtype))


def isnan(xp, x):
    """int8 1 where x is NaN (integer inputs have none)."""
    if x.dtype.kind not in "fc":
        return xp.zeros(x.shape, dtype=xp.int8)
    return xp.isnan(x).astype(xp.int8)


def isinf(xp, x):
    """int8 1 where x is +inf or -inf."""
    if x.dtype.kind not in "fc":
        return xp.zeros(x.shape, dtype=xp.int8)
    return xp.isinf(x).astype(xp.int8)


def _scatter_positions(xp, index, dim, size):
    """Index tuples addressing out[i_0, ..., index[i], ..., i_n] for every position i of `index`."""
    idx = index.astype(xp.int64)
    if idx.size:
        # read with the step's results on a device (`checks`), not here: no wait for the device inside the kernel
        low, high = xp.min(idx), xp.max(idx)
        checks.require(xp, (low < -size) | (high >= size), "scatter: index %d is out of bounds for dimension %d "
                       "with size %d", xp.where(high >= size, high, low), dim, size, error=IndexError)
    idx = xp.where(idx < 0, idx + size, idx)
    if xp is not numpy:  # valid writes until the check is read
        idx = xp.clip(idx, 0, max(size - 1, 0))
    # numpy's indices(..., sparse=True) written out: CuPy's indices has no `sparse`
    grids = [xp.arange(n, dtype=xp.int64).reshape(tuple(n if k == axis else 1 for k in range(index.ndim)))
             for axis, n in enumerate(index.shape)]
    grids[dim] = idx
    return tuple(grids)


def _src_part(src, index):
    """The part of src that index addresses (torch/OneFlow read src[i] for each position i of index)."""
    return src[tuple(slice(0, n) for n in index.shape)]


def dim_scatter_update(xp, x, index, src, *, dim):
    """A copy of x with out[..., index[i], ...] = src[i] along `dim` (the last write wins on repeated indices)."""
    out = x.copy()
    out[_scatter_positions(xp, index, dim, x.shape[dim])] = _src_part(src, index)
    return out


def dim_scatter_add(xp, x, index, src, *, dim):
    """A copy of x with src[i] added at out[..., index[i], ...] along `dim`, repeated indices accumulating."""
    out = x.copy()
    pos, values = _scatter_positions(xp, index, dim, x.shape[dim]), _src_part(src, index)
    if xp is numpy:
        numpy.add.at(out, pos, values)
    elif out.size and values.size:  # the sums in numpy's order on a device too (indexing.add_at_rows: no atomics)
        indexing.add_at_rows(xp, out.reshape(-1, 1), _flat_positions(xp, pos, index, x.shape),
                             values.reshape(-1, 1))
    return out


def dim_scatter_src_grad(xp, dy, index, like, *, dim):
    """d src of the dim scatters: dy read where each src entry was written, zeros where src was not read (src may
    be larger than index); `like` is src, for its shape."""
    out = xp.zeros(like.shape, dtype=dy.dtype)
    out[tuple(slice(0, n) for n in index.shape)] = dy[_scatter_positions(xp, index, dim, dy.shape[dim])]
    return out


_GILES_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                -0.00417768164, 0.246640727, 1.50140941)
_GILES_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients, t):
    """The polynomial with these coefficients (highest power first) at t (numpy.polyval's order of operations)."""
    y = t * 0.0 + coefficients[0]
    for c in coefficients[1:]:
        y = y * t + c
    return y


def erfinv(xp, x):
    """The inverse error function on (-1, 1) (±inf at ±1, NaN outside): M. Giles' single-precision
    approximation ("Approximating the erfinv function", 2010), then two Newton steps on erf (kernels/special.py's,
    to float64 precision). Array operations only, so that it runs on any device's module alike (no CuPy import
    chosen by the module's name)."""
    v = x.astype(xp.float64)
    w = -xp.log(xp.clip((1.0 - v) * (1.0 + v), 1e-300, None))
    small = w < 5.0
    y = xp.where(small, _horner(_GILES_SMALL, w - 2.5), _horner(_GILES_LARGE, xp.sqrt(w) - 3.0)) * v
    inside = xp.abs(v) < 1.0
    for _ in range(2):
        yi = xp.where(inside, y, 0.0)
        err = special.erf(xp, yi) - v
        y = xp.where(inside, yi - err / (2.0 / math.sqrt(math.pi) * xp.exp(-yi * yi)), y)
    y = xp.where(xp.abs(v) == 1.0, xp.where(v < 0, -xp.inf, xp.inf), y)
    y = xp.where(xp.abs(v) > 1.0, xp.nan, y)
    return y.astype(x.dtype)


def erfinv_grad(xp, dy, y):
    """d erfinv(x) / dx = sqrt(pi) / 2 * exp(erfinv(x)^2), from the forward output y."""
    return dy * (xp.sqrt(xp.pi) / 2 * xp.exp(y * y)).astype(dy.dtype)


# --- api-gaps: scatter(..., reduce='multiply') (OneFlow 0.9's dim_scatter_mul, user_op dim_scatter_ops.cpp) --------
def _flat_positions(xp, pos, index, shape):
    return xp.ravel_multi_index(tuple(xp.broadcast_to(p, index.shape).ravel() for p in pos), shape)


def _multiply_at(xp, out, flat, values):
    """out.flat[flat[i]] *= values[i] for every i, repeated positions multiplying in turn (in the order of i), in
    place on a C-contiguous `out`: numpy's `multiply.at`; on a device that builds raw kernels, one sort and one
    launch (kernels/cuda_scatter.py: CuPy has no `multiply.at`), the same numbers; elsewhere (a device dtype the
    kernel does not take: float16, complex) one fancy write per repeat level, whose count is read back first."""
    if xp is numpy:
        numpy.multiply.at(out.reshape(-1), flat, values)
        return
    if hasattr(xp, "RawModule") and cuda_scatter.supported(out.dtype):
        cuda_scatter.multiply_at(xp, out, flat, values)
        return
    view = out.reshape(-1)
    order = xp.argsort(flat, kind="stable")
    flat, values = flat[order], values.reshape(-1)[order]
    rank = xp.arange(flat.size) - xp.searchsorted(flat, flat, side="left")  # the repeat's number at its spot
    for k in range(int(rank.max()) + 1 if rank.size else 0):
        sel = rank == k
        view[flat[sel]] *= values[sel]


def dim_scatter_mul(xp, x, index, src, *, dim):
    """A copy of x with out[..., index[i], ...] *= src[i] along `dim`, repeated indices multiplying in turn."""
    out = x.copy()
    pos = _scatter_positions(xp, index, dim, x.shape[dim])
    _multiply_at(xp, out, _flat_positions(xp, pos, index, x.shape), _src_part(src, index).ravel())
    return out


def dim_scatter_mul_src_grad(xp, dy, index, x, src, *, dim):
    """d src of dim_scatter_mul: for each src entry i written at position p, dy[p] times x[p] times the product of
    the other src entries written at p (no division by a zero entry: the product of the non-zero entries and the
    count of zeros per position); zeros where src was not read."""
    pos = _scatter_positions(xp, index, dim, x.shape[dim])
    flat = _flat_positions(xp, pos, index, x.shape)
    v = _src_part(src, index).ravel()
    is_zero = v == 0
    nonzero = xp.where(is_zero, xp.ones((), dtype=v.dtype), v)
    prod = xp.ones(x.shape, dtype=v.dtype)
    _multiply_at(xp, prod, flat, nonzero)
    zeros = xp.ones(x.shape, dtype=v.dtype)  # 2 ** (zeros at the position): counted by the same products
    _multiply_at(xp, zeros, flat, xp.where(is_zero, xp.asarray(2.0, dtype=v.dtype), xp.ones((), dtype=v.dtype)))
    others_zero = zeros.reshape(-1)[flat] / xp.where(is_zero, xp.asarray(2.0, dtype=v.dtype),
                                                     xp.ones((), dtype=v.dtype)) > 1.5
    others = xp.where(others_zero, xp.zeros((), dtype=v.dtype), prod.reshape(-1)[flat] / nonzero)
    g = (dy.reshape(-1)[flat] * x.reshape(-1)[flat] * others).reshape(index.shape)
    out = xp.zeros(src.shape, dtype=dy.dtype)
    out[tuple(slice(0, k) for k in index.shape)] = g
    return out
