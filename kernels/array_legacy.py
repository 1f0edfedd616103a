"""Array kernels of the legacy API's less common ops: sorting, argwhere and the dynamic-shape helpers around it,
range, the element count of a shape, non-finite counts, broadcast to a compatible shape, slice_update and the
logical slices, expand, diag.

Rules as OneFlow v0.3.4/v0.4.0's kernels compute them (files under `oneflow/user/kernels/` and
`oneflow/core/kernel/` of the same names); where a rule is OneFlow's own it is said in the function.
"""
import numpy


# --- sorting (the last axis) -------------------------------------------------------------------------------------
def _sort_key(xp, x, descending):
    key = x.astype(xp.int64) if x.dtype.kind in "ub" else x
    return -key if descending else key


def arg_sort(xp, x, *, direction):
    """int32 positions that sort each row of the last axis; equal entries keep their order (stable)."""
    order = xp.argsort(_sort_key(xp, x, direction == "DESCENDING"), axis=-1, kind="stable")
    return order.astype(xp.int32)


def sort(xp, x, *, direction):
    """Each row of the last axis sorted, ascending or descending."""
    order = xp.argsort(_sort_key(xp, x, direction == "DESCENDING"), axis=-1, kind="stable")
    return xp.take_along_axis(x, order, axis=-1)


# --- argwhere and dynamic shapes ----------------------------------------------------------------------------------
def argwhere(xp, x, *, dtype):
    """(indices of the non-zero entries, row-major, as (count, ndim) of `dtype`; their count as a (1,) array).
    The first output is dynamic: its static shape is (x.size, ndim)."""
    idx = xp.stack(xp.nonzero(x), axis=-1) if x.ndim else xp.zeros((int(x != 0), 0), dtype=xp.int64)
    return idx.astype(dtype), xp.asarray([idx.shape[0]], dtype=dtype)


def sync_dynamic_resize(xp, x, size):
    """x's first `size[0]` rows (the dynamic blob argwhere's count describes)."""
    n = int(size.reshape(-1)[0])
    if n < 0 or n > x.shape[0]:
        raise ValueError("sync_dynamic_resize: size %d outside [0, %d]" % (n, x.shape[0]))
    return x[:n]


def cast_to_static_shape(xp, x, *, shape):
    """x as a blob of its static `shape`: a piece with fewer entries than the static shape (a dynamic blob that
    was not full) is padded with zeros at the end of each axis."""
    if tuple(x.shape) == tuple(shape):
        return x
    out = xp.zeros(tuple(shape), dtype=x.dtype)
    out[tuple(slice(0, d) for d in x.shape)] = x
    return out


def dynamic_reshape(xp, x, *, shape):
    """x reshaped at run time: one -1 in `shape` takes what the piece's element count leaves."""
    return xp.reshape(x, tuple(shape))


def shape_elem_cnt(xp, x, *, axis, dtype):
    """The number of elements of this piece over `axis` (None: every axis), as a (1,) array of `dtype`."""
    axes = range(x.ndim) if axis is None else axis
    count = 1
    for a in axes:
        count *= x.shape[a]
    return xp.asarray([count], dtype=dtype)


def range_(xp, *, start, limit, delta, dtype):
    """start, start + delta, … below limit (OneFlow's `range` op)."""
    return xp.arange(start, limit, delta).astype(dtype)


# --- counting non-finite entries (the dynamic loss scale's test) -------------------------------------------------
def count_not_finite(xp, x):
    """int64 (1,): how many entries of x are inf or nan."""
    return xp.reshape(xp.sum(~xp.isfinite(x)).astype(xp.int64), (1,))  # (on a device: no read back)


def multi_count_not_finite(xp, *xs):
    """int64 (1,): how many entries of all the xs are inf or nan."""
    total = xp.zeros((1,), dtype=xp.int64)
    for x in xs:
        total += xp.sum(~xp.isfinite(x)).astype(xp.int64)
    return total


# --- broadcast to the shape of others -------------------------------------------------------------------------
def broadcast_to_compatible_with(xp, x, *compatible, shape):
    """x broadcast to `shape` (numpy rules; the compatible blobs only give the shape)."""
    return xp.broadcast_to(x, tuple(shape))


def expand(xp, x, *, shape):
    """x broadcast to `shape`: new leading axes, and axes of size 1 stretched (OneFlow v0.4.0 `expand`)."""
    return xp.broadcast_to(x, tuple(shape))


def diag(xp, x, *, diagonal):
    """A 1-d x: the square matrix with x on its `diagonal`-th diagonal; a 2-d x: that diagonal of it."""
    return xp.diag(x, k=diagonal).copy()


def diag_grad(xp, dy, x, *, diagonal):
    """The gradient of diag: a matrix's diagonal for a vector input, the diagonal matrix for a matrix input (shaped
    like the forward input x)."""
    if x.ndim == 1:
        return xp.diag(dy, k=diagonal).copy()
    out = xp.zeros(x.shape, dtype=dy.dtype)
    rows, cols = x.shape
    i = xp.arange(dy.shape[0])
    r, c = (i, i + diagonal) if diagonal >= 0 else (i - diagonal, i)
    out[r, c] = dy
    return out


# --- slices with (start, stop, step) per axis, step > 0 (slice_update, logical_slice) ----------------------------
def slice_update(xp, x, update, *, slice_tup):
    """A copy of x whose slice (Python (start, stop, step) per axis, None for the defaults) holds `update`."""
    out = x.copy()
    out[tuple(slice(*entry) for entry in slice_tup)] = update
    return out


def logical_slice(xp, x, *, start, stop, step, offsets=None):
    """The slice of the logical tensor that falls in this piece: `offsets` is where the piece starts on each axis
    (0 on axes that are not split). The logical slice's entries held elsewhere are not in this piece's result:
    the partial sum of the pieces' zero-padded results is the slice (OneFlow's logical_slice gives P)."""
    offsets = offsets or [0] * x.ndim
    out_shape = tuple(len(range(a, b, c)) for a, b, c in zip(start, stop, step))
    out = xp.zeros(out_shape, dtype=x.dtype)
    src, dst = _piece_regions(x.shape, start, stop, step, offsets)
    if src is not None:
        out[dst] = x[src]
    return out


def logical_slice_assign(xp, ref, value, *, start, stop, step, offsets=None):
    """ref's piece with the entries of the logical slice that fall in it set from `value` (in place)."""
    offsets = offsets or [0] * ref.ndim
    src, dst = _piece_regions(ref.shape, start, stop, step, offsets)
    if src is not None:
        ref[src] = value[dst]


def _piece_regions(piece_shape, start, stop, step, offsets):
    """(region of the piece, region of the slice) for the slice entries the piece holds, or (None, None)."""
    src, dst = [], []
    for a, b, c, off, n in zip(start, stop, step, offsets, piece_shape):
        # slice indices k with off <= a + k c < off + n
        k0 = max(0, -(-(off - a) // c))
        k1 = min(len(range(a, b, c)), -(-(off + n - a) // c))
        if k1 <= k0:
            return None, None
        src.append(slice(a + k0 * c - off, a + (k1 - 1) * c - off + 1, c))
        dst.append(slice(k0, k1))
    return tuple(src), tuple(dst)


# --- identities and in-place assignment ------------------------------------------------------------------------
def tuple_identity(xp, *xs):
    """The inputs themselves (OneFlow's tuple_identity, behind flow.identity_n)."""
    return tuple(xs) if len(xs) > 1 else xs[0]


def assign(xp, ref, value):
    """ref's storage (a variable's piece) takes value's entries, in place."""
    ref[...] = value


def assign_if(xp, ref, value, condition):
    """assign when condition[0] is non-zero."""
    if int(condition.reshape(-1)[0]) != 0:
        ref[...] = value


def assign_if_not(xp, ref, value, condition):
    """assign when condition[0] is zero."""
    if int(condition.reshape(-1)[0]) == 0:
        ref[...] = value
