"""Shape-manipulating kernels: slicing, concat/split, transpose, pad, one-hot.

Every kernel returns a fresh array (never a view of an input), so the runtime may
reuse or write into outputs without aliasing its inputs.

`balanced_ranges` is the project-wide rule for splitting a size over parts.
"""


def balanced_ranges(n, k):
    """Split `n` items over `k` parts as [(start, stop), ...].

    The first `n % k` parts get one extra item. Used by S(axis) splits, boxing,
    variables and checkpoints alike, so it must never change.
    """
    n, k = int(n), int(k)
    if k <= 0:
        raise ValueError("balanced_ranges: number of parts must be positive, got %d" % k)
    if n < 0:
        raise ValueError("balanced_ranges: size must be non-negative, got %d" % n)
    base, extra = divmod(n, k)
    ranges = []
    start = 0
    for part in range(k):
        stop = start + base + (1 if part < extra else 0)
        ranges.append((start, stop))
        start = stop
    return ranges


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


def slice_grad(xp, dy, *, input_shape, slice_tup):
    """Gradient of `slice_nd`: dy scattered into zeros of `input_shape`."""
    dx = xp.zeros(tuple(input_shape), dtype=dy.dtype)
    dx[normalize_slice_tup(slice_tup, len(input_shape))] = dy
    return dx


def concat(xp, *xs, axis=0):
    return xp.concatenate(xs, axis=axis)


def split_sizes(shapes, axis):
    """Sizes along `axis` of the inputs of a concat: what `split` needs for its grad."""
    return [int(shape[axis]) for shape in shapes]


def split(xp, x, *, sizes, axis):
    """Cut `x` along `axis` into consecutive pieces of the given sizes (concat's grad)."""
    axis = axis % x.ndim
    if sum(sizes) != x.shape[axis]:
        raise ValueError("split: sizes %s do not add up to dimension %d of shape %s"
                         % (list(sizes), x.shape[axis], tuple(x.shape)))
    pieces = []
    start = 0
    for size in sizes:
        index = (slice(None),) * axis + (slice(start, start + size),)
        pieces.append(x[index].copy())
        start += size
    return tuple(pieces)


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
    if indices.size:
        low, high = int(xp.min(indices)), int(xp.max(indices))
        if low < 0 or high >= depth:
            bad = low if low < 0 else high
            raise ValueError("one_hot: index %d out of range [0, %d)" % (bad, depth))
    hot = indices[..., None] == xp.arange(depth, dtype=indices.dtype)
    out = xp.where(hot, xp.asarray(on_value, dtype=dtype), xp.asarray(off_value, dtype=dtype))
    if axis not in (-1, indices.ndim):
        out = xp.ascontiguousarray(xp.moveaxis(out, -1, axis))
    return out
