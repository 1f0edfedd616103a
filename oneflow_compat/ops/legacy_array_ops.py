"""Array ops of the legacy API beyond shape_ops.py: arg_sort / sort, argwhere with the dynamic-shape ops around it
(sync_dynamic_resize, cast_to_static_shape, dynamic_reshape, shape_elem_cnt), range, tuple_identity (identity_n),
amp_white_identity, count_not_finite / multi_count_not_finite, broadcast_to_compatible_with, slice_update,
logical_slice, the in-place assign / logical_slice_assign on variables, and v0.4.0's expand and diag.

Shape rules, SBP signatures and gradients as OneFlow v0.3.4 declares them (`oneflow/user/ops/arg_sort_op.cpp`,
`sort_op.cpp`, `arg_where_op.cpp`, `range_op.cpp`, `tuple_identity_op.cpp`, `cast_to_static_shape_op.cpp`,
`amp_white_identity_op.cpp`, `count_not_finite_op.cpp`, `slice_op.cpp`, `assign_op.cpp`; `oneflow/core/operator/
sync_dynamic_resize_op.cpp`, `dynamic_reshape_op.cpp`, `shape_elem_cnt_op.cpp`, `broadcast_to_compatible_with_op.cpp`;
v0.4.0 `expand_op.cpp`, `diag_op.cpp`). sort has no gradient in OneFlow, nor here.
"""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir import sbp as sbp_mod
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import array as array_k
from oneflow_compat.kernels import array_legacy as K
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register
from oneflow_compat.ops.shape_ops import _full_axes, _local_slice_tup


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _leading_splits(op, n_out=1):
    """S(i) for every axis but the last, and B: ops along the last axis."""
    nd = len(op.inputs[0].shape)
    return [_sig([S(i)], [S(i)] * n_out) for i in range(nd - 1)] + [_sig([B], [B] * n_out)]


# --- sorting -----------------------------------------------------------------------------------------------------
def _check_direction(op):
    if op.attrs["direction"] not in ("ASCENDING", "DESCENDING"):
        raise ValueError("%s '%s': direction must be 'ASCENDING' or 'DESCENDING', got %r" % (
            op.type, op.name, op.attrs["direction"]))


def _arg_sort_meta(op):
    _check_direction(op)
    x = op.inputs[0]
    return [TensorMeta(x.shape, dtypes.int32, x.is_dynamic)]


def _sort_meta(op):
    _check_direction(op)
    return _same_meta(op)


register(OpDef("arg_sort", infer=_arg_sort_meta, kernel=K.arg_sort,
               kernel_attrs=lambda op: {"direction": op.attrs["direction"]}, sbp=_leading_splits))
register(OpDef("sort", infer=_sort_meta, kernel=K.sort, kernel_attrs=lambda op: {"direction": op.attrs["direction"]},
               sbp=_leading_splits))


# --- argwhere and dynamic shapes ---------------------------------------------------------------------------------
def _argwhere_meta(op):
    x = op.inputs[0]
    dt = op.attrs["dtype"]
    if dt.np is None or dt.np.kind not in "iu":
        raise TypeError("argwhere '%s': dtype must be an integer dtype, got %s" % (op.name, dt.name))
    return [TensorMeta((int(np.prod(x.shape)), len(x.shape)), dt, True), TensorMeta((1,), dt)]


register(OpDef("argwhere", infer=_argwhere_meta, kernel=K.argwhere, num_outputs=2,
               kernel_attrs=lambda op: {"dtype": op.attrs["dtype"].np},
               sbp=lambda op: [_sig([B], [B, B])]))


def _sync_dynamic_resize_meta(op):
    x, size = op.inputs
    if size.dtype.np is None or size.dtype.np.kind not in "iu" or tuple(size.shape) != (1,):
        raise ValueError("sync_dynamic_resize '%s': size must be an integer blob of shape (1,), got %s %s" % (
            op.name, size.dtype.name, size.shape))
    return [TensorMeta(x.shape, x.dtype, True)]


register(OpDef("sync_dynamic_resize", infer=_sync_dynamic_resize_meta, kernel=K.sync_dynamic_resize,
               sbp=lambda op: [_sig([B, B], [B])]))


def _cast_to_static_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, False)]


register(OpDef("cast_to_static_shape", infer=_cast_to_static_meta, kernel=K.cast_to_static_shape,
               kernel_attrs=lambda op: {"shape": op.outputs[0].shape},
               local_attrs=lambda op, dev: {"shape": dev.out_shapes[0]}, sbp=sbp_rules.unary_linear,
               grad=lambda op, dys: [apply("identity", [dys[0]])]))


def _dynamic_reshape_meta(op):
    from oneflow_compat.ops.array_ops import infer_reshape

    x = op.inputs[0]
    return [TensorMeta(infer_reshape(x.shape, op.attrs["shape"], "dynamic_reshape '%s'" % op.name), x.dtype,
                       x.is_dynamic)]


def _dynamic_reshape_local(op, dev):
    """The piece's own element count decides the -1 (a dynamic piece may hold fewer rows than the static shape)."""
    shape = list(op.attrs["shape"])
    if -1 not in shape and dev.parallel_num > 1 and sbp_mod.split_axes(dev.sbp_out[0]):
        shape = list(dev.out_shapes[0])
    return {"shape": tuple(shape)}


def _dynamic_reshape_sbp(op):
    """S(0) -> S(0) (the batch axis keeps its pieces, as OneFlow's mirrored dynamic_reshape), B, P."""
    xs, ys = op.inputs[0].shape, op.outputs[0].shape
    sigs = [_sig([S(0)], [S(0)])] if xs[:1] == ys[:1] and -1 not in op.attrs["shape"][1:] else []
    return sigs + [_sig([B], [B]), _sig([P], [P])]


register(OpDef("dynamic_reshape", infer=_dynamic_reshape_meta, kernel=K.dynamic_reshape,
               local_attrs=_dynamic_reshape_local, sbp=_dynamic_reshape_sbp,
               grad=lambda op, dys: [apply("reshape_like", [dys[0], op.inputs[0]])]))


def _shape_elem_cnt_sbp(op):
    axis = op.attrs["axis"]
    nd = len(op.inputs[0].shape)
    counted = set(range(nd)) if axis is None else set(axis)
    # a split of a counted axis divides the count among the devices (P); of another axis, each has it whole (B)
    return [_sig([S(i)], [P if i in counted else B]) for i in range(nd)] + [_sig([B], [B])]


register(OpDef("shape_elem_cnt", infer=lambda op: [TensorMeta((1,), op.attrs["dtype"])], kernel=K.shape_elem_cnt,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"], "dtype": op.attrs["dtype"].np},
               sbp=_shape_elem_cnt_sbp))


def _range_meta(op):
    a = op.attrs
    n = max(0, -(-(a["limit"] - a["start"]) // a["delta"]))
    return [TensorMeta((n,), a["dtype"])]


def _range_local(op, dev):
    """A split piece of the range starts where its balanced slice of the logical range starts."""
    a = op.attrs
    if dev.parallel_num > 1 and sbp_mod.split_axes(dev.sbp_out[0]):
        lo, hi = sbp_mod.piece_range(op.outputs[0].shape, dev.sbp_out[0], dev.index, dev.parallel_num, 0)
        return {"start": a["start"] + lo * a["delta"], "limit": a["start"] + hi * a["delta"]}
    return {}


register(OpDef("range", infer=_range_meta, kernel=K.range_,
               kernel_attrs=lambda op: {k: op.attrs[k] for k in ("start", "limit", "delta")} | {
                   "dtype": op.attrs["dtype"].np},
               local_attrs=_range_local, sbp=lambda op: [_sig([], [B]), _sig([], [S(0)])]))


# --- identities ----------------------------------------------------------------------------------------------------
def _tuple_identity_sbp(op):
    """Each output has its input's layout (OneFlow infers it per pair from the input's hint): every combination
    of the pairs' own layouts is legal; the ones listed are all pairs alike."""
    n = len(op.inputs)
    nd = min(len(x.shape) for x in op.inputs)
    return [_sig([S(i)] * n, [S(i)] * n) for i in range(nd)] + [_sig([B] * n, [B] * n), _sig([P] * n, [P] * n)]


register(OpDef("tuple_identity", infer=lambda op: [TensorMeta(x.shape, x.dtype, x.is_dynamic) for x in op.inputs],
               kernel=K.tuple_identity, sbp=_tuple_identity_sbp,
               grad=lambda op, dys: list(dys)))
register(OpDef("amp_white_identity", infer=_same_meta, kernel=array_k.identity, sbp=sbp_rules.unary_linear,
               grad=lambda op, dys: [apply("amp_white_identity", [dys[0]])]))


# --- non-finite counts ------------------------------------------------------------------------------------------
register(OpDef("count_not_finite", infer=lambda op: [TensorMeta((1,), dtypes.int64)], kernel=K.count_not_finite,
               sbp=lambda op: [_sig([S(i)], [P]) for i in range(len(op.inputs[0].shape))] + [_sig([B], [B])]))


def _multi_count_meta(op):
    first = op.inputs[0].dtype
    if any(x.dtype is not first for x in op.inputs):
        raise TypeError("multi_count_not_finite '%s': every input must have one dtype, got %s" % (
            op.name, ", ".join(x.dtype.name for x in op.inputs)))
    return [TensorMeta((1,), dtypes.int64)]


def _multi_count_sbp(op):
    n, nd = len(op.inputs), min(len(x.shape) for x in op.inputs)
    return [_sig([S(i)] * n, [P]) for i in range(nd)] + [_sig([B] * n, [B])]


register(OpDef("multi_count_not_finite", infer=_multi_count_meta, kernel=K.multi_count_not_finite,
               sbp=_multi_count_sbp))


# --- broadcast to a compatible shape / expand -------------------------------------------------------------------
def _compatible_meta(op):
    shapes = [tuple(x.shape) for x in op.inputs]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError("broadcast_to_compatible_with '%s': shapes %s do not broadcast together" % (
            op.name, ", ".join(map(str, shapes)))) from None
    return [TensorMeta(shape, op.inputs[0].dtype, any(x.is_dynamic for x in op.inputs))]


def _compatible_sbp(op):
    sigs = sbp_rules.broadcast_elementwise(op)
    # linear in x; the compatible blobs only lend their shape, read whole
    return sigs + [_sig([P] + [B] * (len(op.inputs) - 1), [P])]


def _unbroadcast(g, shape):
    if tuple(g.shape) == tuple(shape):
        return g
    return apply("reduce_to_shape", [g], {"shape": tuple(shape)})


register(OpDef("broadcast_to_compatible_with", infer=_compatible_meta, kernel=K.broadcast_to_compatible_with,
               kernel_attrs=lambda op: {"shape": op.outputs[0].shape},
               local_attrs=lambda op, dev: {"shape": dev.out_shapes[0]}, sbp=_compatible_sbp,
               grad=lambda op, dys: [_unbroadcast(dys[0], op.inputs[0].shape)] + [None] * (len(op.inputs) - 1)))


def _expand_meta(op):
    x, shape = op.inputs[0], tuple(op.attrs["shape"])
    lead = len(shape) - len(x.shape)
    if lead < 0 or any(d != s and d != 1 for d, s in zip(x.shape, shape[lead:])):
        raise ValueError("expand '%s': cannot expand shape %s to %s" % (op.name, x.shape, shape))
    return [TensorMeta(shape, x.dtype, x.is_dynamic)]


def _expand_sbp(op):
    x, shape = op.inputs[0].shape, op.outputs[0].shape
    lead = len(shape) - len(x)
    sigs = []
    for j, d in enumerate(shape):
        i = j - lead
        if i >= 0 and x[i] == d:
            sigs.append(_sig([S(i)], [S(j)]))
        elif d > 1:
            sigs.append(_sig([B], [S(j)]))
    return sigs + [_sig([B], [B]), _sig([P], [P])]


register(OpDef("expand", infer=_expand_meta, kernel=K.expand, kernel_attrs=lambda op: {"shape": op.outputs[0].shape},
               local_attrs=lambda op, dev: {"shape": dev.out_shapes[0]}, sbp=_expand_sbp,
               grad=lambda op, dys: [_unbroadcast(dys[0], op.inputs[0].shape)]))


def _diag_meta(op):
    x, k = op.inputs[0], op.attrs["diagonal"]
    if len(x.shape) == 1:
        n = x.shape[0] + abs(k)
        return [TensorMeta((n, n), x.dtype, x.is_dynamic)]
    if len(x.shape) != 2:
        raise ValueError("diag '%s': the input must be 1-d or 2-d, got shape %s" % (op.name, x.shape))
    rows, cols = x.shape
    n = max(0, min(rows, cols - k) if k >= 0 else min(rows + k, cols))
    return [TensorMeta((n,), x.dtype, x.is_dynamic)]


register(OpDef("diag", infer=_diag_meta, kernel=K.diag, kernel_attrs=lambda op: {"diagonal": op.attrs["diagonal"]},
               sbp=lambda op: [_sig([B], [B]), _sig([P], [P])],
               grad=lambda op, dys: [apply("diag_grad", [dys[0], op.inputs[0]], {"diagonal": op.attrs["diagonal"]})]))
register(OpDef("diag_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype)],
               kernel=K.diag_grad, kernel_attrs=lambda op: {"diagonal": op.attrs["diagonal"]},
               sbp=lambda op: [_sig([B, B], [B]), _sig([P, B], [P])]))


# --- slice_update and the logical slices -------------------------------------------------------------------------
def _slice_update_meta(op):
    from oneflow_compat.ops.shape_ops import slice_length

    x, update = op.inputs
    want = tuple(slice_length(e, d) for e, d in zip(op.attrs["slice_tup"], x.shape))
    if update.dtype is not x.dtype or tuple(update.shape) != want:
        raise ValueError("slice_update '%s': update must be %s %s (the slice of x), got %s %s" % (
            op.name, x.dtype.name, want, update.dtype.name, tuple(update.shape)))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _slice_update_sbp(op):
    full = _full_axes(op.inputs[0].shape, op.attrs["slice_tup"])
    return [_sig([S(i), S(i)], [S(i)]) for i in full] + [_sig([B, B], [B]), _sig([P, P], [P])]


def _slice_update_grad(op, dys):
    x, update = op.inputs
    zeros = apply("fill_like", [update], {"value": 0.0})
    tup = op.attrs["slice_tup"]
    return [apply("slice_update", [dys[0], zeros], {"slice_tup": tup}), apply("slice", [dys[0]], {"slice_tup": tup})]


register(OpDef("slice_update", infer=_slice_update_meta, kernel=K.slice_update, sbp=_slice_update_sbp,
               local_attrs=lambda op, dev: {"slice_tup": _local_slice_tup(op.attrs["slice_tup"], dev.sbp_in[0])},
               grad=_slice_update_grad))


def _bounds(op, shape):
    start, stop, step = op.attrs["start"], op.attrs["stop"], op.attrs["step"]
    for a, b, c, d in zip(start, stop, step, shape):
        if c <= 0 or a < 0 or b <= 0 or a >= b or b > d:
            raise ValueError("%s '%s': needs 0 <= start < stop <= size and step > 0 on every axis, got start %s, "
                             "stop %s, step %s for shape %s" % (op.type, op.name, start, stop, step, tuple(shape)))


def _logical_slice_meta(op):
    x = op.inputs[0]
    _bounds(op, x.shape)
    shape = tuple(len(range(a, b, c)) for a, b, c in zip(op.attrs["start"], op.attrs["stop"], op.attrs["step"]))
    return [TensorMeta(shape, x.dtype, x.is_dynamic)]


def _offsets(shape, sbp, dev):
    return [start for start, _ in sbp_mod.region(shape, sbp, dev.index, dev.parallel_num)]


def _logical_slice_attrs(op):
    return {k: tuple(op.attrs[k]) for k in ("start", "stop", "step")}


register(OpDef("logical_slice", infer=_logical_slice_meta, kernel=K.logical_slice, kernel_attrs=_logical_slice_attrs,
               local_attrs=lambda op, dev: {"offsets": _offsets(op.inputs[0].shape, dev.sbp_in[0], dev)},
               sbp=lambda op: [_sig([S(i)], [P]) for i in range(len(op.inputs[0].shape))] + [
                   _sig([B], [B]), _sig([P], [P])],
               grad=lambda op, dys: [apply("slice_grad", [dys[0], op.inputs[0]], {"slice_tup": tuple(
                   zip(op.attrs["start"], op.attrs["stop"], op.attrs["step"]))})]))


def _ref_sbp(op):
    """The variable is written where it lies: its own layout (or B), the value read whole (or alike)."""
    ref = op.inputs[0]
    return ref.op.out_hints.get(ref.index) or B


def _logical_slice_assign_meta(op):
    ref, value = op.inputs
    if ref.op.defn.role != "variable":
        raise TypeError("logical_slice_assign '%s': ref must be a variable (flow.get_variable), got the output of "
                        "'%s'" % (op.name, ref.op.name))
    if value.dtype is not ref.dtype:
        raise TypeError("logical_slice_assign '%s': value must be %s, got %s" % (op.name, ref.dtype.name,
                                                                               value.dtype.name))
    _bounds(op, ref.shape)
    want = tuple(len(range(a, b, c)) for a, b, c in zip(op.attrs["start"], op.attrs["stop"], op.attrs["step"]))
    if tuple(value.shape) != want:
        raise ValueError("logical_slice_assign '%s': value must have the slice's shape %s, got %s" % (
            op.name, want, tuple(value.shape)))
    return []


register(OpDef("logical_slice_assign", infer=_logical_slice_assign_meta, kernel=K.logical_slice_assign,
               kernel_attrs=_logical_slice_attrs,
               local_attrs=lambda op, dev: {"offsets": _offsets(op.inputs[0].shape, dev.sbp_in[0], dev)},
               sbp=lambda op: [_sig([_ref_sbp(op), B], [])], in_place=True))


def _assign_meta(op):
    ref, value = op.inputs[:2]
    if ref.op.defn.role != "variable":
        raise TypeError("%s '%s': ref must be a variable (flow.get_variable), got the output of '%s'" % (
            op.type, op.name, ref.op.name))
    if tuple(ref.shape) != tuple(value.shape) or ref.dtype is not value.dtype:
        raise ValueError("%s '%s': value %s %s must match the variable %s %s" % (
            op.type, op.name, value.dtype.name, tuple(value.shape), ref.dtype.name, tuple(ref.shape)))
    if len(op.inputs) == 3:
        cond = op.inputs[2]
        if cond.dtype.np is None or cond.dtype.np.kind not in "iu" or tuple(cond.shape) != (1,):
            raise ValueError("%s '%s': condition must be an integer blob of shape (1,), got %s %s" % (
                op.type, op.name, cond.dtype.name, cond.shape))
    return []


def _assign_sbp(op):
    s = _ref_sbp(op)
    return [_sig([s, s] + [B] * (len(op.inputs) - 2), [])]


register(OpDef("assign", infer=_assign_meta, kernel=K.assign, sbp=_assign_sbp, in_place=True))
register(OpDef("assign_if", infer=_assign_meta, kernel=K.assign_if, sbp=_assign_sbp, in_place=True))
register(OpDef("assign_if_not", infer=_assign_meta, kernel=K.assign_if_not, sbp=_assign_sbp, in_place=True))
