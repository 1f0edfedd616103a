"""Reductions, their gradients, argmax, and broadcast helpers.

Legacy rule: a reduction over every axis with keepdims=False yields shape (1,), not a
scalar. An empty axis list reduces nothing (the result is a copy of the input).
"""


def normalize_axes(axis, ndim):
    """Sorted tuple of non-negative axes; None means all axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    axes = sorted({int(a) % ndim if ndim else int(a) for a in axis})
    for a in axis:
        if not -ndim <= int(a) < ndim:
            raise ValueError("reduce: axis %d out of range for a %d-d array" % (a, ndim))
    return tuple(axes)


def _finish(xp, out, x, axes, keepdims):
    # numpy returns 0-d results for full reductions; the legacy framework returns (1,)
    if not keepdims and len(axes) == x.ndim:
        return xp.reshape(out, (1,))
    return out


def reduce_sum(xp, x, *, axis=None, keepdims=False):
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.copy()
    return _finish(xp, xp.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype), x, axes, keepdims)


def _count(shape, axes):
    count = 1
    for a in axes:
        count *= shape[a]
    return count


def reduce_mean(xp, x, *, axis=None, keepdims=False):
    """sum(x) * (1/count), the legacy formula; the result has x's dtype."""
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.copy()
    total = reduce_sum(xp, x, axis=axes, keepdims=keepdims)
    return (total * (1.0 / _count(x.shape, axes))).astype(x.dtype, copy=False)


def reduce_max(xp, x, *, axis=None, keepdims=False):
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.copy()
    return _finish(xp, xp.max(x, axis=axes, keepdims=keepdims), x, axes, keepdims)


def reduce_min(xp, x, *, axis=None, keepdims=False):
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.copy()
    return _finish(xp, xp.min(x, axis=axes, keepdims=keepdims), x, axes, keepdims)


def reduce_prod(xp, x, *, axis=None, keepdims=False):
    axes = normalize_axes(axis, x.ndim)
    if not axes:
        return x.copy()
    return _finish(xp, xp.prod(x, axis=axes, keepdims=keepdims, dtype=x.dtype), x, axes, keepdims)


def _expand_to_input(xp, g, input_shape, axes):
    """Reshape a reduced array (any keepdims, or the legacy (1,)) so it broadcasts
    against the input: reduced axes become size 1."""
    kept_shape = tuple(1 if a in axes else d for a, d in enumerate(input_shape))
    return xp.reshape(g, kept_shape)


def reduce_sum_grad(xp, dy, *, input_shape, axis=None):
    axes = normalize_axes(axis, len(input_shape))
    dy = _expand_to_input(xp, dy, input_shape, axes)
    return xp.ascontiguousarray(xp.broadcast_to(dy, tuple(input_shape)))


def reduce_mean_grad(xp, dy, *, input_shape, axis=None):
    axes = normalize_axes(axis, len(input_shape))
    scaled = dy * (1.0 / max(_count(input_shape, axes), 1))
    return reduce_sum_grad(xp, scaled.astype(dy.dtype, copy=False), input_shape=input_shape, axis=axes)


def _extremum_grad(xp, dy, x, y, axes):
    # every element equal to the extremum shares the gradient equally (ties split)
    y = _expand_to_input(xp, y, x.shape, axes)
    dy = _expand_to_input(xp, dy, x.shape, axes)
    hit = (x == y).astype(dy.dtype)
    share = dy / xp.sum(hit, axis=axes, keepdims=True)
    return hit * share


def reduce_max_grad(xp, dy, x, y, *, axis=None):
    """Gradient of reduce_max; tied maxima share dy equally. `y` is the forward output."""
    return _extremum_grad(xp, dy, x, y, normalize_axes(axis, x.ndim))


def reduce_min_grad(xp, dy, x, y, *, axis=None):
    """Gradient of reduce_min; tied minima share dy equally. `y` is the forward output."""
    return _extremum_grad(xp, dy, x, y, normalize_axes(axis, x.ndim))


def reduce_prod_grad(xp, dy, x, *, axis=None):
    """Gradient of reduce_prod: the product of the *other* elements, exact with zeros.

    Dividing the product by x fails at zeros, so zeros are counted instead: with no
    zero in the group the grad is prod/x; with exactly one zero only that element
    gets the product of the non-zeros; with more zeros everything is 0.
    """
    axes = normalize_axes(axis, x.ndim)
    dy = _expand_to_input(xp, dy, x.shape, axes)
    is_zero = x == 0
    nonzero_x = xp.where(is_zero, xp.ones_like(x), x)
    prod_nonzero = xp.prod(nonzero_x, axis=axes, keepdims=True, dtype=x.dtype)
    zeros = xp.sum(is_zero, axis=axes, keepdims=True)
    others = xp.where(is_zero,
                      xp.where(zeros == 1, prod_nonzero, 0),
                      xp.where(zeros == 0, prod_nonzero / nonzero_x, 0))
    return (dy * others).astype(x.dtype, copy=False)


def argmax(xp, x, *, axis=-1):
    """Index of the first maximum along `axis`, as int32."""
    return xp.argmax(x, axis=axis).astype(xp.int32)


def unbroadcast(xp, g, shape):
    """Sum a gradient of a broadcast result back to the operand's `shape`."""
    shape = tuple(shape)
    extra = g.ndim - len(shape)
    if g.shape == shape:
        return g.copy()
    if extra < 0:
        raise ValueError("unbroadcast: gradient shape %s has fewer dims than %s" % (g.shape, shape))
    if extra:
        g = xp.sum(g, axis=tuple(range(extra)), dtype=g.dtype)
    stretched = tuple(a for a, (n, m) in enumerate(zip(shape, g.shape)) if n == 1 and m != 1)
    if stretched:
        g = xp.sum(g, axis=stretched, keepdims=True, dtype=g.dtype)
    if g.shape != shape:
        raise ValueError("unbroadcast: gradient shape %s cannot reduce to %s" % (g.shape, shape))
    return xp.ascontiguousarray(g)


def broadcast_to(xp, x, shape):
    """numpy broadcasting to `shape`, materialized (not a read-only view)."""
    return xp.ascontiguousarray(xp.broadcast_to(x, tuple(shape)))
