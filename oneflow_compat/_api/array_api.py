"""Legacy array functions of `flow.*` (concat, slice, transpose, gather, one_hot, pad, where, ...) and
`flow.math.top_k` / `flow.math.clip_by_value`: argument checking with the legacy rules, then one op (or a few)
from `ops/shape_ops.py`."""
import numbers

from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops import shape_ops  # noqa: F401  (registers the ops used here)
from oneflow_compat.ops.registry import apply


def _blob(x, what):
    if not isinstance(x, LazyBlob):
        raise TypeError("%s expects a blob, got %s" % (what, type(x).__name__))
    return x


def _int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _axis(axis, ndim, what, extra=0):
    """`axis` in [-(ndim + extra), ndim + extra) made non-negative."""
    if not _int(axis):
        raise TypeError("%s: axis must be an int, got %r" % (what, axis))
    n = ndim + extra
    if not -n <= axis < n:
        raise ValueError("%s: axis %d is out of range [%d, %d)" % (what, axis, -n, n))
    return int(axis) % n


def _suffix(name, suffix):
    return None if name is None else name + suffix


# --- transpose / concat / stack --------------------------------------------------------------------------------
def transpose(a, perm=None, conjugate=False, batch_axis_non_change=False, name=None):
    _blob(a, "flow.transpose")
    if not isinstance(perm, (tuple, list)):
        raise TypeError("flow.transpose: perm must be a list or tuple, got %r" % (perm,))
    if conjugate:
        raise NotImplementedError("flow.transpose: conjugate=True is not supported")
    nd = len(a.shape)
    perm = tuple(_axis(p, nd, "flow.transpose") for p in perm)
    if sorted(perm) != list(range(nd)):
        raise ValueError("flow.transpose: perm %s is not a permutation of the %d axes of %s" % (
            list(perm), nd, a.shape))
    return apply("transpose", [a], {"perm": perm}, name=name)


def concat(inputs=None, axis=0, max_dim_size=None, name=None, values=None):
    if values is not None:  # the deprecated spelling of `inputs`
        if inputs is not None:
            raise ValueError("flow.concat: give inputs or values, not both")
        inputs = values
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("flow.concat: inputs must be a list or tuple of blobs, got %s" % type(inputs).__name__)
    if len(inputs) == 0:
        raise ValueError("flow.concat: inputs is empty")
    for x in inputs:
        _blob(x, "flow.concat")
    if len(inputs) == 1:
        return inputs[0]
    nd = len(inputs[0].shape)
    axis = _axis(axis, nd, "flow.concat")
    static = sum(x.shape[axis] for x in inputs if not x.is_dynamic)
    if max_dim_size is not None and max_dim_size < static:
        raise ValueError("flow.concat: max_dim_size %d is too small to hold the concatenated static size %d"
                         % (max_dim_size, static))
    return apply("concat", list(inputs), {"axis": axis, "max_dim_size": max_dim_size}, name=name)


def stack(inputs, axis=0, name=None):
    inputs = list(inputs)
    if not inputs:
        raise ValueError("flow.stack: inputs is empty")
    shape = _blob(inputs[0], "flow.stack").shape
    axis = _axis(axis, len(shape), "flow.stack", extra=1)
    for x in inputs:
        if _blob(x, "flow.stack").shape != shape:
            raise ValueError("flow.stack: every input must have shape %s, got %s" % (shape, x.shape))
    expanded = [expand_dims(x, axis, name=_suffix(name, "expand_dims_%d" % i)) for i, x in enumerate(inputs)]
    return concat(expanded, axis=axis, name=_suffix(name, "concat"))


# --- slicing ---------------------------------------------------------------------------------------------------
def slice(x, begin, size, name=None):  # noqa: A001 - legacy name
    """Per axis: begin (None = 0) and size (None = to the end, -1 = to the end)."""
    _blob(x, "flow.slice")
    nd = len(x.shape)
    if not isinstance(begin, (list, tuple)) or len(begin) != nd:
        raise ValueError("begin must be a list/tuple with the same length as input tensor's number of dimensions")
    if not all(_int(b) or b is None for b in begin):
        raise ValueError("element of begin must be a int or None")
    if not isinstance(size, (list, tuple)) or len(size) != nd:
        raise ValueError("size must be a list/tuple with the same length as input tensor's number of dimensions.")
    if not all(_int(s) or s is None for s in size):
        raise ValueError("element of size must be a int or None")
    tup = []
    for b, s, d in zip(begin, size, x.shape):
        if b is not None and not -d <= b < d:
            raise ValueError("element of begin is out of range")
        start = None if b is None else int(b)
        stop = None
        if s is not None and s != -1:
            if s <= 0 or s > d:
                raise ValueError("element of size is invalid")
            # begin counts from the end when negative; the slice ends `size` entries after it
            first = 0 if b is None else (b + d if b < 0 else b)
            if first + s < d:
                stop = first + int(s)
        tup.append((start, stop, 1))
    return apply("slice", [x], {"slice_tup": tuple(tup)}, name=name)


def _check_slice_tup_list(slice_tup_list, shape):
    nd = len(shape)
    if not isinstance(slice_tup_list, (list, tuple)) or len(slice_tup_list) > nd:
        raise ValueError("slice_tup_list must be a list or tuple with length less than or equal to number of "
                         "dimensions of input tensor")
    tup = list(slice_tup_list) + [(None, None, None)] * (nd - len(slice_tup_list))
    out = []
    for entry, d in zip(tup, shape):
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            raise ValueError("element of slice_tup_list must be a list or tuple with form (start, stop, step)")
        if not all(_int(i) or i is None for i in entry):
            raise ValueError("element of slice tuple must int or None")
        start, stop, step = entry
        step = 1 if step is None else int(step)
        if step == 0:
            raise ValueError("slice step can't be 0")
        if start is not None and not -d <= start < d:
            raise ValueError("slice start must be in range [-size, size)")
        if stop is not None and not -d - 1 <= stop <= d:
            raise ValueError("slice stop must be in range [-size-1, size]")
        out.append((None if start is None else int(start), None if stop is None else int(stop), step))
    return tuple(out)


def slice_v2(x, slice_tup_list, name=None):
    """Python-style (start, stop, step) per axis; missing trailing axes are taken whole."""
    _blob(x, "flow.slice_v2")
    return apply("slice", [x], {"slice_tup": _check_slice_tup_list(slice_tup_list, x.shape)}, name=name)


def reverse(input, axis, name=None):  # noqa: A002
    _blob(input, "flow.reverse")
    if _int(axis):
        axis = [axis]
    if not isinstance(axis, (tuple, list)) or not all(_int(a) for a in axis):
        raise ValueError("axis must be a int or a list/tuple of int")
    nd = len(input.shape)
    tup = [(None, None, None)] * nd
    for a in axis:
        if not -nd <= a < nd:
            raise ValueError("axis is out of range")
        tup[a % nd] = (None, None, -1)
    return slice_v2(input, tup, name=name)


# --- adding and removing axes ----------------------------------------------------------------------------------
def expand_dims(input, axis, name=None):  # noqa: A002
    _blob(input, "flow.expand_dims")
    axis = _axis(axis, len(input.shape), "flow.expand_dims", extra=1)
    return apply("expand_dims", [input], {"axis": axis}, name=name)


def squeeze(input, axis=None, name=None):  # noqa: A002
    _blob(input, "flow.squeeze")
    nd = len(input.shape)
    if axis is None:
        axes = [i for i, d in enumerate(input.shape) if d == 1]
    else:
        if not isinstance(axis, (list, tuple)):
            raise TypeError("flow.squeeze: axis must be a list or tuple, got %r" % (axis,))
        axes = [_axis(a, nd, "flow.squeeze") for a in axis]
    return apply("squeeze", [input], {"axes": tuple(sorted(set(axes)))}, name=name)


def flatten(input, start_dim=0, end_dim=-1, name=None):  # noqa: A002
    _blob(input, "flow.flatten")
    nd = len(input.shape)
    start = _axis(start_dim, nd, "flow.flatten")
    end = _axis(end_dim, nd, "flow.flatten")
    if start > end:
        raise ValueError("flow.flatten: start_dim %d comes after end_dim %d" % (start_dim, end_dim))
    return apply("flatten", [input], {"start_dim": start, "end_dim": end}, name=name)


# --- gather / one_hot ------------------------------------------------------------------------------------------
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """params.take(indices, axis); indices >= params.shape[axis] read zeros, negative ones are an error.
    batch_dims > 0 (with axis == batch_dims) gathers per batch row, along axis indices.ndim - 1 (OneFlow's
    batch_gather)."""
    _blob(params, "flow.gather")
    _blob(indices, "flow.gather")
    nd = len(params.shape)
    axis = batch_dims if axis is None else _axis(axis, nd, "flow.gather")
    if batch_dims > 0:
        if axis < batch_dims:
            raise AttributeError("flow.gather: axis %d is smaller than batch_dims %d" % (axis, batch_dims))
        if axis > batch_dims:
            raise NotImplementedError("flow.gather: axis > batch_dims is not supported")
        # OneFlow (v0.4.0 ops/array_ops.py) then builds `batch_gather`, which gathers along axis
        # indices.ndim - 1 whatever batch_dims says: BERT's pretraining heads call it with axis=batch_dims=2 on
        # (batch, seq, hidden) params and (batch, positions) indices
        return apply("batch_gather", [params, indices], name=name)
    return apply("gather", [params, indices], {"axis": axis}, name=name)


def one_hot(indices, depth, on_value=1, off_value=0, axis=-1, dtype=None, name=None):
    """dtype None gives float32 (legacy required a dtype)."""
    _blob(indices, "flow.one_hot")
    if not _int(depth) or depth <= 0:
        raise ValueError("flow.one_hot: depth must be a positive int, got %r" % (depth,))
    out_nd = len(indices.shape) + 1
    if not -out_nd <= axis < out_nd:
        raise ValueError("Expected axis to between [%d, %d).  But received: %d " % (-out_nd, out_nd, axis))
    dt = dtypes.as_dtype(dtype) or dtypes.float32
    return apply("one_hot", [indices], {"depth": int(depth), "on_value": on_value, "off_value": off_value,
                                        "dtype": dt, "axis": axis % out_nd}, name=name)


# --- pad / where / clip ----------------------------------------------------------------------------------------
def pad(x, paddings, constant_value=0, name=None):
    _blob(x, "flow.pad")
    if not isinstance(paddings, (list, tuple)):
        raise ValueError("paddings must be a tuple or a list.")
    if len(paddings) != len(x.shape):
        raise ValueError("paddings must be the same size of input dims")
    pairs = []
    for p in paddings:
        if not isinstance(p, (list, tuple)) or len(p) != 2 or not all(_int(v) for v in p):
            raise ValueError("the elem of paddings must be a tuple or a list with length of 2")
        if p[0] < 0 or p[1] < 0:
            raise ValueError("flow.pad: paddings must be non-negative, got %s" % (list(p),))
        pairs.append((int(p[0]), int(p[1])))
    value = constant_value if x.dtype.is_floating else int(constant_value)
    return apply("pad", [x], {"paddings": tuple(pairs), "constant_value": value}, name=name)


def where(condition, x=None, y=None, name=None):
    """Elementwise x where condition != 0, else y (numpy broadcasting)."""
    _blob(condition, "flow.where")
    if x is None and y is None:  # OneFlow: argwhere(condition), a dynamic blob of the non-zero entries' indices
        from oneflow_compat.ir import dtypes

        output, size = apply("argwhere", [condition], {"dtype": dtypes.int32}, name=name)
        return apply("sync_dynamic_resize", [output, size])
    if x is None or y is None:
        raise ValueError("it is not supported when exactly one of x or y is non-None")
    return apply("where", [condition, _blob(x, "flow.where"), _blob(y, "flow.where")], name=name)


def masked_fill(x, mask, value, name=None):
    _blob(x, "flow.masked_fill")
    filled = apply("fill_like", [x], {"value": float(value)}, name=_suffix(name, "_ConstantLike"))
    return where(mask, filled, x, name=_suffix(name, "_Where"))


def clip_by_value(values, min_value=None, max_value=None, name=None):
    """min(max(values, min_value), max_value); a gradient passes where min_value <= values <= max_value."""
    _blob(values, "flow.clip_by_value")
    if min_value is None and max_value is None:
        raise ValueError("min_value and max_value cannot be None at the same time")
    return apply("clip_by_value", [values], {"min_value": min_value, "max_value": max_value}, name=name)


clip_by_scalar = clip = clamp = clip_by_value


# --- broadcast_like / top_k ------------------------------------------------------------------------------------
def broadcast_like(x, like, broadcast_axes=None, name=None):
    """x repeated along `broadcast_axes` of `like`; x has like's shape with those axes 1, or with them removed."""
    _blob(x, "flow.broadcast_like")
    _blob(like, "flow.broadcast_like")
    nd = len(like.shape)
    axes = list(range(nd)) if broadcast_axes is None else broadcast_axes
    if not isinstance(axes, (list, tuple)):
        raise TypeError("flow.broadcast_like: broadcast_axes must be a list or tuple, got %r" % (axes,))
    if len(axes) <= 0 or len(axes) > nd:
        raise ValueError("The length of broadcast_axes must be greater than 0 and less than or equal to number of "
                         "axes of like shape")
    axes = sorted({_axis(a, nd, "flow.broadcast_like") for a in axes})
    kept = tuple(1 if i in axes else d for i, d in enumerate(like.shape))
    removed = tuple(d for i, d in enumerate(like.shape) if i not in axes)
    if tuple(x.shape) == kept:
        pass
    elif nd > len(x.shape) and tuple(x.shape) == (removed or (1,)):
        x = apply("reshape", [x], {"shape": kept}, name=_suffix(name, "_reshape"))
    else:
        raise ValueError("flow.broadcast_like: x of shape %s cannot be broadcast like %s along axes %s" % (
            x.shape, like.shape, axes))
    return apply("broadcast_like", [x, like], name=name)


def top_k(input, axis=-1, k=1, sorted=True, name=None):  # noqa: A002
    """int32 indices of the k largest entries along `axis`, largest first (ties: lower index first)."""
    _blob(input, "flow.math.top_k")
    nd = len(input.shape)
    axis = _axis(axis, nd, "flow.math.top_k")
    if not _int(k) or k < 1:
        raise ValueError("flow.math.top_k: k must be a positive int, got %r" % (k,))
    if axis == nd - 1:
        return apply("top_k", [input], {"k": int(k), "sorted": bool(sorted)}, name=name)
    perm = tuple(i for i in range(nd) if i != axis) + (axis,)
    x = transpose(input, perm, name=_suffix(name, "_transpose"))
    x = apply("top_k", [x], {"k": int(k), "sorted": bool(sorted)}, name=name)
    inverse = [0] * nd
    for position, a in enumerate(perm):
        inverse[a] = position
    return transpose(x, inverse, name=_suffix(name, "_inverse_transpose"))
