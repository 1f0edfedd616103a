"""Reductions, argmax, and the sum / broadcast pair that undoes numpy broadcasting.

Legacy rule: a reduction over every axis with keepdims=False yields shape (1,), not a scalar, and the result keeps
the input's dtype (an integer sum wraps as the legacy kernel's does). `axis` is a tuple of axes or None (all); an
empty tuple reduces nothing.
"""


def _legacy_result(xp, out, dtype):
    out = xp.asarray(out, dtype=dtype)
    return out.reshape((1,)) if out.ndim == 0 else out


def reduce_sum(xp, x, *, axis=None, keepdims=False):
    return _legacy_result(xp, xp.sum(x, axis=axis, keepdims=keepdims), x.dtype)


def reduce_mean(xp, x, *, axis=None, keepdims=False):
    return _legacy_result(xp, xp.mean(x, axis=axis, keepdims=keepdims), x.dtype)


def reduce_max(xp, x, *, axis=None, keepdims=False):
    return _legacy_result(xp, xp.max(x, axis=axis, keepdims=keepdims), x.dtype)


def reduce_min(xp, x, *, axis=None, keepdims=False):
    return _legacy_result(xp, xp.min(x, axis=axis, keepdims=keepdims), x.dtype)


def reduce_prod(xp, x, *, axis=None, keepdims=False):
    return _legacy_result(xp, xp.prod(x, axis=axis, keepdims=keepdims), x.dtype)


def reduce_any(xp, x, *, axis=None, keepdims=False):
    """1 where any element is non-zero, in x's dtype."""
    return _legacy_result(xp, xp.any(x != 0, axis=axis, keepdims=keepdims), x.dtype)


def reduce_all(xp, x, *, axis=None, keepdims=False):
    """1 where every element is non-zero, in x's dtype."""
    return _legacy_result(xp, xp.all(x != 0, axis=axis, keepdims=keepdims), x.dtype)


def argmax(xp, x):
    """int32 index of the first maximum along the last axis; a 1-d input gives shape (1,)."""
    return xp.argmax(x, axis=-1).astype(xp.int32).reshape(x.shape[:-1] if x.ndim > 1 else (1,))


def axis0_count(xp, x):
    """The number of rows of x as a (1,) array, floating (x's dtype if floating, else float32): the divisor that
    averages per-row values over a (possibly dynamic) batch."""
    return xp.asarray([x.shape[0]], dtype=x.dtype if x.dtype.kind == "f" else xp.float32)


def reduce_to_shape(xp, g, *, shape):
    """The gradient of a broadcast: g summed over the axes numpy broadcasting added or stretched, so that it has the
    operand's `shape` (a view of g when nothing needs summing)."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape) if d == 1 and g.shape[i + lead] != 1)
    out = g.sum(axis=axes, keepdims=True) if axes else g
    return out.reshape(shape)


def broadcast_like(xp, x, like):
    """x broadcast to like's shape, as a read-only view: consumers only read it."""
    return xp.broadcast_to(x, like.shape)
