"""Top-level array functions of OneFlow v0.3.4/v0.4.0's legacy API beyond `array_api.py`: sorting, argwhere /
nonzero and the dynamic-shape helpers, range, nd indexing, dim_gather, segment-free scatter, slice_update and the
logical slices, identity_n / amp_white_identity, non-finite counts, elem_cnt, assign, and v0.4.0's expand / diag.

Signatures, defaults, op names and argument errors follow OneFlow's `oneflow/python/ops/array_ops.py`,
`sort_ops.py`, `math_ops.py` (range), `count_not_finite.py` and `assign_op.py` at v0.3.4 (expand, diag: v0.4.0).
"""
import builtins

from oneflow_compat._api.refusals import BUILTIN_OP, NCCL_EAGER, refused
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops.registry import apply, new_op


def _blob(x, what):
    if not isinstance(x, LazyBlob):
        raise TypeError("%s expects a blob, got %s" % (what, type(x).__name__))
    return x


def _unique(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def _axis_to_last(input, axis, fn, name, what):  # noqa: A002
    """fn along `axis`: the op works on the last axis, so another axis is moved there and back, as OneFlow's
    sort_ops does (`name + "_transpose"`, `name + "_inverse_transpose"`)."""
    nd = len(input.shape)
    axis = axis if axis >= 0 else axis + nd
    assert 0 <= axis < nd, "axis out of range"
    if axis == nd - 1:
        return fn(input, name)
    perm = [i for i in builtins.range(nd) if i != axis] + [axis]
    inverse = [perm.index(i) for i in builtins.range(nd)]
    x = apply("transpose", [input], {"perm": tuple(perm)}, name=name + "_transpose")
    x = fn(x, name)
    return apply("transpose", [x], {"perm": tuple(inverse)}, name=name + "_inverse_transpose")


def sort(input, axis=-1, direction="ASCENDING", name=None):  # noqa: A002
    """input sorted along `axis` ("ASCENDING" or "DESCENDING")."""
    assert direction in ["ASCENDING", "DESCENDING"]
    _blob(input, "flow.sort")
    name = _unique(name, "Sort_", "flow.sort")
    return _axis_to_last(input, axis, lambda x, n: apply("sort", [x], {"direction": direction}, name=n), name,
                         "flow.sort")


def argsort(input, axis=-1, direction="ASCENDING", name=None):  # noqa: A002
    """int32 positions that sort input along `axis` (stable: equal entries keep their order)."""
    assert direction in ["ASCENDING", "DESCENDING"]
    _blob(input, "flow.argsort")
    name = _unique(name, "ArgSort_", "flow.argsort")
    return _axis_to_last(input, axis, lambda x, n: apply("arg_sort", [x], {"direction": direction}, name=n), name,
                         "flow.argsort")


# --- argwhere and dynamic shapes ----------------------------------------------------------------------------------
def argwhere(condition, dtype=None, name=None):
    """The indices of condition's non-zero entries, one row each (count, ndim), as a dynamic blob (int32 unless
    `dtype` says otherwise): OneFlow's argwhere op followed by sync_dynamic_resize to the count."""
    _blob(condition, "flow.argwhere")
    name = _unique(name, "ArgWhere_", "flow.argwhere")
    dt = dtypes.as_dtype(dtype) or dtypes.int32
    output, output_size = apply("argwhere", [condition], {"dtype": dt}, name=name)
    return sync_dynamic_resize(output, output_size)


def nonzero(a, name=None):
    """argwhere's indices transposed: (ndim, count), one row of indices per axis."""
    if name is None:
        argwhere_name = _unique(None, "Nonzero_ArgWhere_", "flow.nonzero")
        transpose_name = _unique(None, "Nonzero_Transpose_", "flow.nonzero")
    else:
        argwhere_name, transpose_name = name + "_ArgWhere", name + "_Transpose"
    indices = argwhere(a, name=argwhere_name)
    return apply("transpose", [indices], {"perm": (1, 0)}, name=transpose_name)


def sync_dynamic_resize(inputs, size, name=None):
    """inputs' first size[0] rows, as a dynamic blob."""
    return apply("sync_dynamic_resize", [_blob(inputs, "flow.sync_dynamic_resize"), size],
                 name=_unique(name, "SyncDynamicResize_", "flow.sync_dynamic_resize"))


def cast_to_static_shape(x, name=None):
    """A dynamic blob as a blob of its static shape (a blob that is static already is returned as it is)."""
    _blob(x, "flow.cast_to_static_shape")
    if not x.is_dynamic:
        return x
    return apply("cast_to_static_shape", [x], name=_unique(name, "CastToStaticShape_", "flow.cast_to_static_shape"))


def dynamic_reshape(x, shape, name=None):
    """reshape whose -1 is resolved at run time from each piece's element count (a dynamic batch keeps working)."""
    assert isinstance(shape, tuple) or isinstance(shape, list)
    return apply("dynamic_reshape", [_blob(x, "flow.dynamic_reshape")], {"shape": tuple(int(d) for d in shape)},
                 name=_unique(name, "DynamicReshape_", "flow.dynamic_reshape"))


def elem_cnt(inputs, dtype=None, name=None):
    """The element count of `inputs` (of each piece of a dynamic blob) as a (1,) blob, int32 unless `dtype`."""
    return apply("shape_elem_cnt", [_blob(inputs, "flow.elem_cnt")],
                 {"axis": None, "dtype": dtypes.as_dtype(dtype) or dtypes.int32},
                 name=_unique(name, "ElemCnt_", "flow.elem_cnt"))


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - OneFlow's name
    """start, start + delta, … below limit as a 1-d blob; OneFlow's argument checks (as assertions)."""
    assert dtype is not None, "Please specified data type"
    if limit is None:
        start, limit = 0, start
    assert limit > start, "Limit should be larger than start"
    assert delta <= limit - start, "Delta is ilegal"
    assert type(start) == int, "Params `start`'s type should be int"
    assert type(limit) == int, "Params `limit`'s type should be int"
    assert type(delta) == int, "Params `delta`'s type should be int"
    return apply("range", [], {"start": start, "limit": limit, "delta": delta, "dtype": dtypes.as_dtype(dtype)},
                 name=_unique(name, "Range_", "flow.range"))


# --- nd indexing --------------------------------------------------------------------------------------------------
def gather_nd(params, indices, name=None):
    """params' slices at the index rows of `indices` (its last axis indexes params' first axes)."""
    return apply("gather_nd", [_blob(params, "flow.gather_nd"), _blob(indices, "flow.gather_nd")],
                 name=_unique(name, "GatherNd_", "flow.gather_nd"))


def scatter_nd(indices, updates, shape, name=None):
    """zeros of `shape` with updates added at their index rows (repeated rows add up)."""
    return apply("scatter_nd", [_blob(indices, "flow.scatter_nd"), _blob(updates, "flow.scatter_nd")],
                 {"shape": tuple(int(d) for d in shape)}, name=_unique(name, "ScatterNd_", "flow.scatter_nd"))


def tensor_scatter_nd_update(params, indices, updates, name=None):
    """params with the slices at the index rows replaced by updates."""
    return apply("tensor_scatter_nd_update", [_blob(params, "flow.tensor_scatter_nd_update"), updates, indices],
                 name=_unique(name, "TensorScatterNdUpdate_", "flow.tensor_scatter_nd_update"))


def tensor_scatter_nd_add(params, indices, updates, name=None):
    """params with updates added at the index rows."""
    return apply("tensor_scatter_nd_add", [_blob(params, "flow.tensor_scatter_nd_add"), updates, indices],
                 name=_unique(name, "TensorScatterNdAdd_", "flow.tensor_scatter_nd_add"))


def dim_gather(input, dim, index, name=None):  # noqa: A002
    """out[i][j][k] = input[i][index[i][j][k]][k] for dim = 1 (torch.gather); OneFlow's checks as ValueError."""
    if len(input.shape) != len(index.shape):
        raise ValueError("Dimensions of input and index should equal")
    for i in builtins.range(len(input.shape)):
        if dim != i and input.shape[i] != index.shape[i]:
            raise ValueError("Dimensions of input and index should be same except at dim")
    if dim >= len(index.shape):
        raise ValueError("Value of dim is out of range(dim should be less than len(index.shape))")
    return apply("dim_gather", [input, index], {"dim": int(dim)}, name=_unique(name, "DimGather_", "flow.dim_gather"))


# --- slices -------------------------------------------------------------------------------------------------------
def slice_update(x, update, slice_tup_list, name=None):
    """A copy of x with its slice (Python (start, stop, step) per axis) replaced by `update`."""
    from oneflow_compat._api.array_api import _check_slice_tup_list

    if name is not None and not isinstance(name, str):
        raise ValueError("name must be a string")
    _blob(x, "flow.slice_update")
    return apply("slice_update", [x, update], {"slice_tup": _check_slice_tup_list(slice_tup_list, x.shape)},
                 name=_unique(name, "SliceUpdate_", "flow.slice_update"))


def _slice_attrs(slice_tup_list, shape):
    """OneFlow's _GetSliceAttrs: (start, stop, step) lists with step > 0, start in [-size, size), stop in
    [-size, size]; missing trailing axes are whole."""
    ndim = len(shape)
    if not (isinstance(slice_tup_list, (list, tuple)) and len(slice_tup_list) <= ndim):
        raise ValueError("slice_tup_list must be a list or tuple with length less than or equal to number of "
                         "dimensions of input tensor")
    tups = list(slice_tup_list) + [(None, None, None)] * (ndim - len(slice_tup_list))
    start_list, stop_list, step_list = [], [], []
    for tup, size in zip(tups, shape):
        if not (isinstance(tup, (tuple, list)) and len(tup) == 3):
            raise ValueError("element of slice_tup_list must be a list or tuple with form (start, stop, step)")
        if not all(isinstance(i, int) or i is None for i in tup):
            raise ValueError("element of slice tuple must int or None")
        start, stop, step = tup
        step = 1 if step is None else step
        if step <= 0:
            raise ValueError("slice_assign/logical_slice step must be greater than 0")
        if start is None:
            start = 0
        elif start < -size or start >= size:
            raise ValueError("slice_assign/logical_slice start must be in range [-size, size)")
        elif start < 0:
            start += size
        if stop is None:
            stop = size
        elif stop < -size or stop > size:
            raise ValueError("slice_assign/logical_slice start must be in range [-size, size]")
        elif stop < 0:
            stop += size
        start_list.append(start)
        stop_list.append(stop)
        step_list.append(step)
    return {"start": tuple(start_list), "stop": tuple(stop_list), "step": tuple(step_list)}


def logical_slice(x, slice_tup_list, name=None):
    """The slice of x's logical value, read from its pieces where they lie (no gathering of x)."""
    name = _unique(name, "LogicalSlice_", "flow.experimental.logical_slice")
    if not isinstance(name, str):
        raise ValueError("name must be a string")
    return apply("logical_slice", [_blob(x, "flow.experimental.logical_slice")], _slice_attrs(slice_tup_list, x.shape),
                 name=name)


def logical_slice_assign(x, value, slice_tup_list, name=None):
    """Writes `value` into the slice of the variable x, on the devices holding it; returns None."""
    name = _unique(name, "LogicalSliceAssign_", "flow.experimental.logical_slice_assign")
    if not isinstance(name, str):
        raise ValueError("name must be a string")
    _blob(x, "flow.experimental.logical_slice_assign")
    new_op("logical_slice_assign", [x, value], _slice_attrs(slice_tup_list, x.shape), name=name)


# --- identities, counts, assignment -----------------------------------------------------------------------------
def identity_n(inputs, name=None):
    """The blobs themselves, through one op (OneFlow's tuple_identity): a list of as many blobs."""
    inputs = list(inputs)
    out = apply("tuple_identity", inputs, name=_unique(name, "IdentityN_", "flow.identity_n"))
    return out if isinstance(out, list) else [out]


def amp_white_identity(x, name=None):
    """The identity that automatic mixed precision treats as a white-listed op (runs in float16 there)."""
    return apply("amp_white_identity", [_blob(x, "flow.amp_white_identity")],
                 name=_unique(name, "AmpWhiteIdentity_", "flow.amp_white_identity"))


def count_not_finite(x, name=None):
    """int64 (1,): how many entries of x are inf or nan."""
    return apply("count_not_finite", [_blob(x, "flow.count_not_finite")],
                 name=_unique(name, "CountNotFinite_", "flow.count_not_finite"))


def multi_count_not_finite(x=None, name=None):
    """int64 (1,): how many entries of the blobs in the list x are inf or nan."""
    return apply("multi_count_not_finite", list(x), name=_unique(name, "MultiCountNotFinite_",
                                                                 "flow.multi_count_not_finite"))


def assign(ref, value, dtype=None, name=None):
    """Writes value into the variable ref when the job runs (OneFlow's `assign` op; returns None)."""
    _blob(ref, "flow.assign")
    new_op("assign", [ref, value], name=_unique(name, "Assign_", "flow.assign"))


def system_assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """flow.system.assign: the same write, returning ref (OneFlow's system assign op)."""
    assign(ref, value, name=name)
    return ref


def eager_assign_121(ref, value):
    """flow.experimental.eager_assign_121: in eager mode, ref's pieces take value's pieces one to one."""
    from oneflow_compat.framework import session as sess

    assert sess.eager_execution_enabled(), "flow.experimental.eager_assign_121 works in eager mode only"
    assign(ref, value)
    return ref


def expand(x, expand_size, name=None):
    """x broadcast to `expand_size` (OneFlow v0.4.0: -1 keeps an axis' size; new axes go in front)."""
    _blob(x, "flow.expand")
    size = list(expand_size)
    lead = len(size) - len(x.shape)
    assert lead >= 0, "The desired expanded dims should not be less than the input dims."
    shape = [x.shape[i - lead] if d == -1 else int(d) for i, d in enumerate(size)]
    return apply("expand", [x], {"shape": tuple(shape)}, name=_unique(name, "Expand_", "flow.expand"))


def diag(input, diagonal=0, name=None):  # noqa: A002
    """A 1-d input: the matrix with it on the `diagonal`-th diagonal; a 2-d input: that diagonal (v0.4.0)."""
    return apply("diag", [_blob(input, "flow.diag")], {"diagonal": int(diagonal)},
                 name=_unique(name, "Diag_", "flow.diag"))


def pad_grad(x, paddings, constant_value=0, name=None):
    """The gradient of flow.pad: x (a padded blob's gradient) with the `paddings` ((before, after) per axis) cut
    away (OneFlow v0.3.4 `pad.py`'s pad_grad; constant_value is accepted and, as there, does not matter)."""
    if isinstance(paddings, (list, tuple)):
        assert len(paddings) == len(x.shape), ValueError("paddings must be the same size of input dims")
        for p in paddings:
            assert isinstance(p, (list, tuple)) and len(p) == 2, ValueError(
                "the elem of paddings must be a tuple or a list with length of 2")
    else:
        raise ValueError("paddings must be a tuple or a list.")
    return apply("pad_grad", [_blob(x, "flow.pad_grad")], {"paddings": tuple((int(b), int(a)) for b, a in paddings)},
                 name=_unique(name, "PadGrad_", "flow.pad_grad"))


eager_nccl_all_reduce = refused("eager_nccl_all_reduce", NCCL_EAGER)


# --- v0.4.0: hierarchical_parallel_cast (framework/ops.py) ---------------------------------------------------------
def hierarchical_parallel_cast(input, parallel_distribution, grad_mode=None, grad_parallel_distribution=None,  # noqa: A002
                               name=None):
    """The blob laid out as `parallel_distribution` says on the current placement: one SBP per axis of its
    hierarchy ("S(k)", "B", "P" or distribute objects), an n-D SBP on a mesh (`flow.scope.placement(tag, ids,
    hierarchy)`); the boxing pass moves the input there, one mesh axis at a time. grad_mode as OneFlow's gradient
    rule: "restore" (the default: the gradient is cast to the layout the input had), "identity" (passed back as it
    comes) or "manual" (cast to `grad_parallel_distribution`). The op is OneFlow's `hierarchical_parallel_cast`
    (ops/parallel_cast_ops.py)."""
    from oneflow_compat import distribute as dist

    what = "flow.hierarchical_parallel_cast"
    input = _blob(input, what)  # noqa: A001
    name = _unique(name, "HierarchicalParallelCast_", what)
    grad_mode = grad_mode or "restore"
    if grad_mode not in ("restore", "identity", "manual"):
        raise ValueError("%s: grad_mode must be 'restore', 'identity' or 'manual', got %r" % (what, grad_mode))
    placement = builder.current(what).placement
    sbp = dist.to_parallel_distribution(parallel_distribution, placement, what)
    if sbp is None:
        raise ValueError("%s: parallel_distribution is empty: give one entry per dimension of the placement %s"
                         % (what, placement))
    grad = None
    if grad_mode == "manual":
        grad = dist.to_parallel_distribution(grad_parallel_distribution, placement, what + ": grad_parallel_"
                                             "distribution")
        if grad is None:
            raise ValueError("%s: grad_mode 'manual' needs grad_parallel_distribution, one entry per dimension of "
                             "the placement %s" % (what, placement))
    return apply("hierarchical_parallel_cast", [input], {"sbp": sbp, "grad_mode": grad_mode, "grad_sbp": grad},
                 name=name)


# v0.4.0 `ops/builtin_ops.py`: OneFlow's C++ user ops by type name (refused, _api/refusals.py)
builtin_op = refused("builtin_op", BUILTIN_OP)
