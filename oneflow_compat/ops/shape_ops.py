"""Array ops beyond reshape: transpose, concat (and the split that is its gradient), slice, expand_dims, squeeze,
flatten, gather / batch_gather, one_hot, pad, where, clip_by_value, top_k.

Kernels work on each device's local piece and read sizes from the arrays they get (not from the logical shape), so
the same kernel serves split pieces, mirrored pieces and dynamic batches. SBP signatures list only layouts whose
local results assemble into the single-device result.
"""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir import sbp as sbp_mod
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import elementwise as E
from oneflow_compat.kernels import indexing
from oneflow_compat.kernels import shape as K
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _unbroadcast(g, shape):
    if tuple(g.shape) == tuple(shape):
        return g
    return apply("reduce_to_shape", [g], {"shape": tuple(shape)})


def _zeros_like(x):
    return apply("fill_like", [x], {"value": 0.0})


# --- transpose -------------------------------------------------------------------------------------------------
def _transpose_meta(op):
    x, perm = op.inputs[0], op.attrs["perm"]
    return [TensorMeta(tuple(x.shape[p] for p in perm), x.dtype, x.is_dynamic)]


def _transpose_sbp(op):
    perm = op.attrs["perm"]
    # output axis j holds input axis perm[j]
    return [_sig([S(perm[j])], [S(j)]) for j in range(len(perm))] + [_sig([B], [B]), _sig([P], [P])]


register(OpDef("transpose", infer=_transpose_meta, kernel=K.transpose,
               kernel_attrs=lambda op: {"perm": op.attrs["perm"]}, sbp=_transpose_sbp,
               grad=lambda op, dys: [apply("transpose", [dys[0]], {"perm": K.inverse_perm(op.attrs["perm"])})]))


# --- concat and split_like -------------------------------------------------------------------------------------
def _concat_meta(op):
    axis, xs = op.attrs["axis"], op.inputs
    first = xs[0]
    for x in xs[1:]:
        if x.dtype is not first.dtype:
            raise ValueError("concat '%s': all inputs must have one dtype, got %s and %s"
                             % (op.name, first.dtype.name, x.dtype.name))
        if len(x.shape) != len(first.shape) or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != axis):
            raise ValueError("concat '%s': shapes %s and %s differ outside axis %d"
                             % (op.name, first.shape, x.shape, axis))
    dynamic = any(x.is_dynamic for x in xs)
    size = sum(x.shape[axis] for x in xs)
    if dynamic and op.attrs.get("max_dim_size") is not None:
        size = op.attrs["max_dim_size"]  # the static bound of a dynamic axis
    shape = list(first.shape)
    shape[axis] = size
    return [TensorMeta(shape, first.dtype, dynamic)]


def _concat_sbp(op):
    n, axis = len(op.inputs), op.attrs["axis"]
    nd = len(op.outputs[0].shape)
    sigs = [_sig([S(i)] * n, [S(i)]) for i in range(nd) if i != axis]
    return sigs + [_sig([B] * n, [B]), _sig([P] * n, [P])]


def _concat_grad(op, dys):
    parts = apply("split_like", [dys[0]] + list(op.inputs), {"axis": op.attrs["axis"]})
    return parts if isinstance(parts, list) else [parts]


register(OpDef("concat", infer=_concat_meta, kernel=K.concat, kernel_attrs=lambda op: {"axis": op.attrs["axis"]},
               sbp=_concat_sbp, grad=_concat_grad))


def _split_like_sbp(op):
    n, axis = len(op.outputs), op.attrs["axis"]
    nd = len(op.inputs[0].shape)
    sigs = [_sig([S(i)] * (n + 1), [S(i)] * n) for i in range(nd) if i != axis]
    return sigs + [_sig([B] * (n + 1), [B] * n), _sig([P] + [B] * n, [P] * n)]


def _split_like_grad(op, dys):
    parts = [dy if dy is not None else _zeros_like(like) for dy, like in zip(dys, op.inputs[1:])]
    dx = parts[0] if len(parts) == 1 else apply("concat", parts, {"axis": op.attrs["axis"]})
    return [dx] + [None] * len(parts)


register(OpDef("split_like", infer=lambda op: [TensorMeta(like.shape, op.inputs[0].dtype, like.is_dynamic)
                                               for like in op.inputs[1:]],
               kernel=K.split_like, kernel_attrs=lambda op: {"axis": op.attrs["axis"]}, sbp=_split_like_sbp,
               grad=_split_like_grad))


# --- slice (start, stop, step per axis, None = Python's default) -----------------------------------------------
def slice_length(entry, dim):
    return len(range(*slice(*entry).indices(dim)))


def _full_axes(shape, slice_tup):
    """Axes the slice keeps whole and in order: splits along them survive the slice."""
    return [i for i, (entry, d) in enumerate(zip(slice_tup, shape)) if slice(*entry).indices(d) == (0, d, 1)]


def _slice_meta(op):
    x = op.inputs[0]
    shape = tuple(slice_length(e, d) for e, d in zip(op.attrs["slice_tup"], x.shape))
    return [TensorMeta(shape, x.dtype, x.is_dynamic)]


def _local_slice_tup(slice_tup, sbp):
    # a split axis is sliced whole: the device takes its entire piece (the logical bounds do not apply to it)
    axes = sbp_mod.split_axes(sbp)
    if axes:
        slice_tup = list(slice_tup)
        for a in axes:
            slice_tup[a] = (None, None, None)
    return tuple(slice_tup)


def _slice_sbp(op):
    full = _full_axes(op.inputs[0].shape, op.attrs["slice_tup"])
    return [_sig([S(i)], [S(i)]) for i in full] + [_sig([B], [B]), _sig([P], [P])]


register(OpDef("slice", infer=_slice_meta, kernel=K.slice_nd, sbp=_slice_sbp,
               local_attrs=lambda op, dev: {"slice_tup": _local_slice_tup(op.attrs["slice_tup"], dev.sbp_in[0])},
               grad=lambda op, dys: [apply("slice_grad", [dys[0], op.inputs[0]],
                                           {"slice_tup": op.attrs["slice_tup"]})]))


def _slice_grad_sbp(op):
    full = _full_axes(op.inputs[1].shape, op.attrs["slice_tup"])
    return [_sig([S(i), S(i)], [S(i)]) for i in full] + [_sig([B, B], [B]), _sig([P, B], [P])]


register(OpDef("slice_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype,
                                                          op.inputs[1].is_dynamic)],
               kernel=K.slice_grad, sbp=_slice_grad_sbp,
               local_attrs=lambda op, dev: {"slice_tup": _local_slice_tup(op.attrs["slice_tup"], dev.sbp_in[1])},
               grad=lambda op, dys: [apply("slice", [dys[0]], {"slice_tup": op.attrs["slice_tup"]}), None]))


# --- expand_dims / squeeze / flatten (views of the input's data) -----------------------------------------------
def _expand_dims_meta(op):
    x, axis = op.inputs[0], op.attrs["axis"]
    return [TensorMeta(x.shape[:axis] + (1,) + x.shape[axis:], x.dtype, x.is_dynamic)]


def _expand_dims_sbp(op):
    axis = op.attrs["axis"]
    return [_sig([S(i)], [S(i if i < axis else i + 1)]) for i in range(len(op.inputs[0].shape))] + [
        _sig([B], [B]), _sig([P], [P])]


register(OpDef("expand_dims", infer=_expand_dims_meta, kernel=K.expand_dims,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"]}, sbp=_expand_dims_sbp,
               grad=lambda op, dys: [apply("squeeze", [dys[0]], {"axes": (op.attrs["axis"],)})]))


def _squeeze_meta(op):
    x, axes = op.inputs[0], op.attrs["axes"]
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError("squeeze '%s': axis %d of shape %s is not 1" % (op.name, a, x.shape))
    return [TensorMeta(K.squeezed_shape(x.shape, axes), x.dtype, x.is_dynamic)]


def _squeeze_sbp(op):
    axes = op.attrs["axes"]
    sigs = [_sig([S(i)], [S(i - sum(1 for a in axes if a < i))])
            for i in range(len(op.inputs[0].shape)) if i not in axes]
    return sigs + [_sig([B], [B]), _sig([P], [P])]


def _squeeze_grad(op, dys):
    x, axes = op.inputs[0], op.attrs["axes"]
    dy = dys[0]
    if len(axes) == len(x.shape):
        return [apply("reshape_like", [dy, x])]
    for a in sorted(axes):
        dy = apply("expand_dims", [dy], {"axis": a})
    return [dy]


register(OpDef("squeeze", infer=_squeeze_meta, kernel=K.squeeze,
               kernel_attrs=lambda op: {"axes": op.attrs["axes"]}, sbp=_squeeze_sbp, grad=_squeeze_grad))


def _flatten_meta(op):
    x = op.inputs[0]
    return [TensorMeta(K.flattened_shape(x.shape, op.attrs["start_dim"], op.attrs["end_dim"]), x.dtype,
                       x.is_dynamic)]


def _flatten_sbp(op):
    start, end = op.attrs["start_dim"], op.attrs["end_dim"]
    # a split on a merged axis would need other boundaries than the balanced split of the merged axis
    sigs = [_sig([S(i)], [S(i)]) for i in range(start)]
    if start == end:
        sigs.append(_sig([S(start)], [S(start)]))
    sigs += [_sig([S(i)], [S(i - (end - start))]) for i in range(end + 1, len(op.inputs[0].shape))]
    return sigs + [_sig([B], [B]), _sig([P], [P])]


register(OpDef("flatten", infer=_flatten_meta, kernel=K.flatten,
               kernel_attrs=lambda op: {"start_dim": op.attrs["start_dim"], "end_dim": op.attrs["end_dim"]},
               sbp=_flatten_sbp, grad=lambda op, dys: [apply("reshape_like", [dys[0], op.inputs[0]])]))


# --- gather ----------------------------------------------------------------------------------------------------
def _check_indices(op, indices):
    if indices.dtype.np is None or indices.dtype.np.kind not in "iu":
        raise TypeError("%s '%s': indices must be an integer blob, got %s" % (op.type, op.name, indices.dtype.name))


def _gather_meta(op):
    params, indices = op.inputs
    _check_indices(op, indices)
    a = op.attrs["axis"]
    return [TensorMeta(params.shape[:a] + indices.shape + params.shape[a + 1:], params.dtype,
                       params.is_dynamic or indices.is_dynamic)]


def _split_offset(sbp, axis, logical_shape, dev):
    """Where device `dev`'s piece starts along `axis` (0 unless split there; on a mesh, nested)."""
    return sbp_mod.piece_range(logical_shape, sbp, dev.index, dev.parallel_num, axis)[0]


def _gather_local(op, dev):
    a = op.attrs["axis"]
    return {"offset": _split_offset(dev.sbp_in[0], a, op.inputs[0].shape, dev)}


def _gather_sbp(op):
    params, indices = op.inputs
    a, m = op.attrs["axis"], len(indices.shape)
    sigs = [_sig([B, S(j)], [S(a + j)]) for j in range(m)]
    for i in range(len(params.shape)):
        if i != a:
            sigs.append(_sig([S(i), B], [S(i if i < a else i + m - 1)]))
    return sigs + [_sig([S(a), B], [P]), _sig([B, B], [B]), _sig([P, B], [P])]


def _gather_grad_rule(op, dys):
    params, indices = op.inputs
    return [apply("gather_grad", [dys[0], indices, params], {"axis": op.attrs["axis"]}), None]


register(OpDef("gather", infer=_gather_meta, kernel=indexing.gather, kernel_attrs=lambda op: {"axis": op.attrs["axis"]},
               local_attrs=_gather_local, sbp=_gather_sbp, grad=_gather_grad_rule))


def _gather_grad_local(op, dev):
    a = op.attrs["axis"]
    return {"offset": _split_offset(dev.sbp_in[2], a, op.inputs[2].shape, dev)}


def _gather_grad_sbp(op):
    dy, indices, like = op.inputs
    a, m = op.attrs["axis"], len(indices.shape)
    sigs = [_sig([S(a + j), S(j), B], [P]) for j in range(m)]
    for i in range(len(like.shape)):
        if i != a:
            sigs.append(_sig([S(i if i < a else i + m - 1), B, S(i)], [S(i)]))
    return sigs + [_sig([B, B, S(a)], [S(a)]), _sig([B, B, B], [B]), _sig([P, B, B], [P])]


register(OpDef("gather_grad", infer=lambda op: [TensorMeta(op.inputs[2].shape, op.inputs[0].dtype)],
               kernel=indexing.gather_grad, kernel_attrs=lambda op: {"axis": op.attrs["axis"]},
               indexed_rows=lambda op: op.inputs[1] if op.attrs["axis"] == 0 else None,
               local_attrs=_gather_grad_local, sbp=_gather_grad_sbp,
               grad=lambda op, dys: [apply("gather", [dys[0], op.inputs[1]], {"axis": op.attrs["axis"]}),
                                     None, None]))


# --- batch_gather: params (b..., n, r...), indices (b..., k) -> (b..., k, r...) ---------------------------------
def _batch_gather_meta(op):
    params, indices = op.inputs
    _check_indices(op, indices)
    nb = len(indices.shape) - 1
    if len(params.shape) <= nb or params.shape[:nb] != indices.shape[:nb]:
        raise ValueError("batch_gather '%s': indices %s must share the leading %d dims of params %s"
                         % (op.name, indices.shape, nb, params.shape))
    return [TensorMeta(indices.shape + params.shape[nb + 1:], params.dtype, params.is_dynamic or indices.is_dynamic)]


def _batch_gather_sbp(op):
    nb = len(op.inputs[1].shape) - 1
    return [_sig([S(i), S(i)], [S(i)]) for i in range(nb)] + [_sig([B, B], [B]), _sig([P, B], [P])]


def _batch_gather_grad_sbp(op):
    nb = len(op.inputs[1].shape) - 1
    return [_sig([S(i), S(i), S(i)], [S(i)]) for i in range(nb)] + [_sig([B, B, B], [B]), _sig([P, B, B], [P])]


register(OpDef("batch_gather", infer=_batch_gather_meta, kernel=indexing.batch_gather, sbp=_batch_gather_sbp,
               grad=lambda op, dys: [apply("batch_gather_grad", [dys[0], op.inputs[1], op.inputs[0]]), None]))
register(OpDef("batch_gather_grad", infer=lambda op: [TensorMeta(op.inputs[2].shape, op.inputs[0].dtype)],
               kernel=indexing.batch_gather_grad, sbp=_batch_gather_grad_sbp,
               grad=lambda op, dys: [apply("batch_gather", [dys[0], op.inputs[1]]), None, None]))


# --- one_hot ---------------------------------------------------------------------------------------------------
def _one_hot_meta(op):
    x = op.inputs[0]
    _check_indices(op, x)
    a = op.attrs["axis"]
    return [TensorMeta(x.shape[:a] + (op.attrs["depth"],) + x.shape[a:], op.attrs["dtype"], x.is_dynamic)]


def _one_hot_attrs(op):
    dt = op.attrs["dtype"]
    cast = float if dt.is_floating else int
    return {"depth": op.attrs["depth"], "on_value": cast(op.attrs["on_value"]),
            "off_value": cast(op.attrs["off_value"]), "dtype": dt.np, "axis": op.attrs["axis"]}


def _one_hot_sbp(op):
    a = op.attrs["axis"]
    return [_sig([S(i)], [S(i if i < a else i + 1)]) for i in range(len(op.inputs[0].shape))] + [_sig([B], [B])]


register(OpDef("one_hot", infer=_one_hot_meta, kernel=K.one_hot, kernel_attrs=_one_hot_attrs, sbp=_one_hot_sbp))


# --- pad -------------------------------------------------------------------------------------------------------
def _pad_meta(op):
    x = op.inputs[0]
    shape = tuple(d + b + a for d, (b, a) in zip(x.shape, op.attrs["paddings"]))
    return [TensorMeta(shape, x.dtype, x.is_dynamic)]


def _unpadded_axes(paddings):
    return [i for i, (b, a) in enumerate(paddings) if b == 0 and a == 0]


def _pad_sbp(op):
    sigs = [_sig([S(i)], [S(i)]) for i in _unpadded_axes(op.attrs["paddings"])] + [_sig([B], [B])]
    if op.attrs["constant_value"] == 0:
        sigs.append(_sig([P], [P]))  # a non-zero border would be counted once per device
    return sigs


register(OpDef("pad", infer=_pad_meta, kernel=K.pad, sbp=_pad_sbp,
               kernel_attrs=lambda op: {"paddings": op.attrs["paddings"], "constant_value": op.attrs["constant_value"]},
               grad=lambda op, dys: [apply("pad_grad", [dys[0]], {"paddings": op.attrs["paddings"]})]))


def _pad_grad_meta(op):
    dy = op.inputs[0]
    shape = tuple(d - b - a for d, (b, a) in zip(dy.shape, op.attrs["paddings"]))
    return [TensorMeta(shape, dy.dtype, dy.is_dynamic)]


register(OpDef("pad_grad", infer=_pad_grad_meta, kernel=K.pad_grad,
               kernel_attrs=lambda op: {"paddings": op.attrs["paddings"]},
               sbp=lambda op: [_sig([S(i)], [S(i)]) for i in _unpadded_axes(op.attrs["paddings"])]
               + [_sig([B], [B]), _sig([P], [P])],
               grad=lambda op, dys: [apply("pad", [dys[0]], {"paddings": op.attrs["paddings"],
                                                              "constant_value": 0})]))


# --- where -----------------------------------------------------------------------------------------------------
def _where_meta(op):
    cond, x, y = op.inputs
    if x.dtype is not y.dtype:
        raise ValueError("where '%s': x and y must have one dtype, got %s and %s" % (op.name, x.dtype.name,
                                                                                  y.dtype.name))
    try:
        shape = np.broadcast_shapes(cond.shape, x.shape, y.shape)
    except ValueError:
        raise ValueError("where '%s': shapes %s, %s and %s do not broadcast together" % (
            op.name, cond.shape, x.shape, y.shape)) from None
    return [TensorMeta(shape, x.dtype, cond.is_dynamic or x.is_dynamic or y.is_dynamic)]


def _where_sbp(op):
    # where(c, x1 + x2, y1 + y2) = where(c, x1, y1) + where(c, x2, y2): partial sums pass through x and y together
    return sbp_rules.broadcast_elementwise(op) + [_sig([B, P, P], [P])]


def _where_grad(op, dys):
    cond, x, y = op.inputs
    dy = dys[0]
    zeros = _zeros_like(dy)
    dx = apply("where", [cond, dy, zeros])
    dyy = apply("where", [cond, zeros, dy])
    return [None, _unbroadcast(dx, x.shape), _unbroadcast(dyy, y.shape)]


register(OpDef("where", infer=_where_meta, kernel=E.where,
               sbp=_where_sbp, grad=_where_grad))


# --- clip_by_value ---------------------------------------------------------------------------------------------
def _clip_attrs(op):
    return {"min_value": op.attrs["min_value"], "max_value": op.attrs["max_value"]}


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _elementwise_sbp(op):
    nd = len(op.inputs[0].shape)
    return [_sig([S(i)], [S(i)]) for i in range(nd)] + [_sig([B], [B])]


def _clip_grad_sbp(op):
    nd = len(op.inputs[0].shape)
    return [_sig([S(i), S(i)], [S(i)]) for i in range(nd)] + [_sig([B, B], [B]), _sig([P, B], [P])]


register(OpDef("clip_by_value", infer=_same_meta, kernel=E.clip_by_value, kernel_attrs=_clip_attrs,
               sbp=_elementwise_sbp,
               grad=lambda op, dys: [apply("clip_by_value_grad", [dys[0], op.inputs[0]], dict(op.attrs))]))
register(OpDef("clip_by_value_grad", infer=_same_meta, kernel=E.clip_by_value_grad, kernel_attrs=_clip_attrs,
               sbp=_clip_grad_sbp))


# --- top_k (indices only, along the last axis) ------------------------------------------------------------------
def _top_k_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape[:-1] + (min(op.attrs["k"], x.shape[-1]),), dtypes.int32, x.is_dynamic)]


register(OpDef("top_k", infer=_top_k_meta, kernel=indexing.top_k, kernel_attrs=lambda op: {"k": op.attrs["k"]},
               sbp=lambda op: [_sig([S(i)], [S(i)]) for i in range(len(op.inputs[0].shape) - 1)] + [_sig([B], [B])]))
