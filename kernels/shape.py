"""Shape-manipulating kernels: reshapes, slicing, concat/split, transpose, pad, one-hot.

The reshape family (reshape, reshape_like, expand_dims, squeeze, flatten) returns views of its input: those ops only
relabel the data. Every other kernel here returns a fresh array, never a view of an input.
"""
from . import indexing


# --- views ------------------------------------------------------------------------------------------------------
def reshape(xp, x, *, shape):
    return x.reshape(shape)


def reshape_like(xp, x, like):
    return x.reshape(like.shape)


def expand_dims(xp, x, *, axis):
    return xp.expand_dims(x, axis)


def squeezed_shape(shape, axes):
    """`shape` without `axes` (each of size 1); removing every axis leaves (1,), as the legacy op does."""
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def squeeze(xp, x, *, axes):
    return x.reshape(squeezed_shape(x.shape, axes))


def flattened_shape(shape, start_dim, end_dim):
    """`shape` with axes start_dim..end_dim (inclusive, negative counting from the end) merged into one."""
    start_dim, end_dim = start_dim % len(shape), end_dim % len(shape)
    merged = 1
    for d in shape[start_dim:end_dim + 1]:
        merged *= int(d)
    return tuple(shape[:start_dim]) + (merged,) + tuple(shape[end_dim + 1:])


def flatten(xp, x, *, start_dim, end_dim):
    return x.reshape(flattened_shape(x.shape, start_dim, end_dim))


# --- copies -----------------------------------------------------------------------------------------------------
def _as_slice(entry):
    if isinstance(entry, slice):
        return entry
    if entry is None:
        return slice(None)
    start, stop, step = (tuple(entry) + (None, None, None))[:3]
    return slice(start, stop, step)


def normalize_slice_tup(slice_tup, ndim):
    """Turn `slice_tup` (per-dimension `slice` objects or (start, stop, step) triples,
    with None allowed; shorter than ndim = remaining dims whole) into a tuple of slices."""
    slice_tup = tuple(slice_tup)
    if len(slice_tup) > ndim:
        raise ValueError("slice: %d slice entries for a %d-d array" % (len(slice_tup), ndim))
    return tuple(_as_slice(e) for e in slice_tup) + (slice(None),) * (ndim - len(slice_tup))


def slice_nd(xp, x, *, slice_tup):
    """x[slice_tup] as a new array (see `normalize_slice_tup` for the entry forms)."""
    return x[normalize_slice_tup(slice_tup, x.ndim)].copy()


def slice_grad(xp, dy, like, *, slice_tup):
    """Gradient of `slice_nd`: dy scattered into zeros shaped like `like` (the sliced input)."""
    dx = xp.zeros(like.shape, dtype=dy.dtype)
    dx[normalize_slice_tup(slice_tup, like.ndim)] = dy
    return dx


def concat(xp, *xs, axis=0):
    return xp.concatenate(xs, axis=axis)


def split_like(xp, x, *likes, axis):
    """Cut `x` along `axis` into consecutive pieces as long as each of `likes` is there (concat's gradient); one
    piece is returned as an array, several as a tuple."""
    axis = axis % x.ndim
    sizes = [like.shape[axis] for like in likes]
    if sum(sizes) != x.shape[axis]:
        raise ValueError("split_like: sizes %s do not add up to dimension %d of shape %s"
                         % (sizes, x.shape[axis], tuple(x.shape)))
    pieces = []
    start = 0
    for size in sizes:
        index = (slice(None),) * axis + (slice(start, start + size),)
        pieces.append(x[index].copy())
        start += size
    return pieces[0] if len(pieces) == 1 else tuple(pieces)


def transpose(xp, x, *, perm):
    return xp.ascontiguousarray(xp.transpose(x, tuple(perm)))


def inverse_perm(perm):
    """The permutation that undoes `perm` (transpose's grad uses it)."""
    inverse = [0] * len(perm)
    for position, axis in enumerate(perm):
        inverse[axis] = position
    return tuple(inverse)


def _check_paddings(paddings, ndim):
    paddings = tuple((int(before), int(after)) for before, after in paddings)
    if len(paddings) != ndim:
        raise ValueError("pad: %d (before, after) pairs for a %d-d array" % (len(paddings), ndim))
    if any(before < 0 or after < 0 for before, after in paddings):
        raise ValueError("pad: negative paddings are not supported: %s" % (paddings,))
    return paddings


def pad(xp, x, *, paddings, constant_value=0):
    """Constant padding; `paddings` is one (before, after) pair per dimension."""
    paddings = _check_paddings(paddings, x.ndim)
    out_shape = tuple(d + b + a for d, (b, a) in zip(x.shape, paddings))
    out = xp.full(out_shape, constant_value, dtype=x.dtype)
    out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, paddings))] = x
    return out


def pad_grad(xp, dy, *, paddings):
    paddings = _check_paddings(paddings, dy.ndim)
    inner = tuple(slice(b, n - a) for n, (b, a) in zip(dy.shape, paddings))
    return dy[inner].copy()


def one_hot(xp, indices, *, depth, on_value=1, off_value=0, dtype="float32", axis=-1):
    """One-hot encoding along a new axis `axis` (default last).

    Indices outside [0, depth) raise ValueError (the legacy kernel aborts on them).
    """
    depth = int(depth)
    # (no wait for a device: a bad index fails with the step's results, kernels/checks.py)
    indices = indexing.in_range(xp, indices, depth, "one_hot: index %d out of range [0, %d)")
    hot = indices[..., None] == xp.arange(depth, dtype=indices.dtype)
    out = xp.where(hot, xp.asarray(on_value, dtype=dtype), xp.asarray(off_value, dtype=dtype))
    if axis not in (-1, indices.ndim):
        out = xp.ascontiguousarray(xp.moveaxis(out, -1, axis))
    return out
