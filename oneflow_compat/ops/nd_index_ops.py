"""Indexing ops of the legacy API beyond gather: gather_nd / scatter_nd / scatter_nd_like / tensor_scatter_nd_update /
tensor_scatter_nd_add, dim_gather / dim_scatter_add_like, unsorted_segment_sum(_like), unsorted_batch_segment_sum,
in_top_k.

Shapes, SBP signatures and gradient rules as OneFlow v0.3.4 declares them (`oneflow/user/ops/nd_index_slice_ops.cpp`,
`dim_gather_op.cpp`, `unsorted_segment_sum_op.cpp`, `unsorted_batch_segment_sum_op.cpp`, `in_top_k_op.cpp`); index
inputs take no gradient.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir import sbp as sbp_mod
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import nd_index as K
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _check_index(op, blob, what):
    if blob.dtype.np is None or blob.dtype.np.kind not in "iu":
        raise TypeError("%s '%s': %s must be an integer blob, got %s" % (op.type, op.name, what, blob.dtype.name))


def _dynamic(op):
    return any(x.is_dynamic for x in op.inputs)


# --- the nd family: indices (b..., q) index the first q axes of the dense tensor ----------------------------------
def _check_scatter_shapes(op, dense_shape, indices, updates):
    """OneFlow's CheckScatterNdShape: updates = indices' batch dims + the dense tensor's slice dims."""
    _check_index(op, indices, "indices")
    nb = len(indices.shape) - 1
    q = indices.shape[-1]
    want = tuple(indices.shape[:-1]) + tuple(dense_shape[q:])
    if q > len(dense_shape) or tuple(updates.shape) != want:
        raise ValueError("%s '%s': updates of shape %s do not fit indices %s into shape %s (want %s)" % (
            op.type, op.name, tuple(updates.shape), tuple(indices.shape), tuple(dense_shape), want))
    return nb, q


def _gather_nd_meta(op):
    params, indices = op.inputs
    _check_index(op, indices, "indices")
    q = indices.shape[-1]
    if q > len(params.shape):
        raise ValueError("gather_nd '%s': index rows of length %d for params of rank %d" % (
            op.name, q, len(params.shape)))
    return [TensorMeta(tuple(indices.shape[:-1]) + tuple(params.shape[q:]), params.dtype, _dynamic(op))]


def _gather_nd_sbp(op):
    params, indices = op.inputs
    nb, q = len(indices.shape) - 1, indices.shape[-1]
    sigs = [_sig([B, S(i)], [S(i)]) for i in range(nb)]
    sigs += [_sig([S(i), B], [S(i - q + nb)]) for i in range(q, len(params.shape))]
    return sigs + [_sig([B, B], [B]), _sig([P, B], [P])]


register(OpDef("gather_nd", infer=_gather_nd_meta, kernel=K.gather_nd, sbp=_gather_nd_sbp,
               grad=lambda op, dys: [apply("scatter_nd_like", [op.inputs[0], op.inputs[1], dys[0]]), None]))


def _scatter_nd_meta(op):
    indices, updates = op.inputs
    shape = tuple(op.attrs["shape"])
    _check_scatter_shapes(op, shape, indices, updates)
    return [TensorMeta(shape, updates.dtype, _dynamic(op))]


def _scatter_nd_sbp(op):
    indices, _ = op.inputs
    nb, q = len(indices.shape) - 1, indices.shape[-1]
    shape = op.attrs["shape"]
    sigs = [_sig([S(i), S(i)], [P]) for i in range(nb)]  # OneFlow says B here; each piece's adds sum to it
    sigs += [_sig([B, S(i + nb)], [S(i + q)]) for i in range(len(shape) - q)]
    return sigs + [_sig([B, B], [B]), _sig([B, P], [P])]


register(OpDef("scatter_nd", infer=_scatter_nd_meta, kernel=K.scatter_nd,
               kernel_attrs=lambda op: {"shape": tuple(op.attrs["shape"])},
               local_attrs=lambda op, dev: {"shape": tuple(dev.out_shapes[0])}, sbp=_scatter_nd_sbp,
               grad=lambda op, dys: [None, apply("gather_nd", [dys[0], op.inputs[0]])]))


def _scatter_nd_like_meta(op):
    like, indices, updates = op.inputs
    _check_scatter_shapes(op, like.shape, indices, updates)
    return [TensorMeta(like.shape, updates.dtype, _dynamic(op))]


def _scatter_nd_like_sbp(op):
    like, indices, _ = op.inputs
    nb, q = len(indices.shape) - 1, indices.shape[-1]
    sigs = [_sig([B, S(i), S(i)], [P]) for i in range(nb)]
    sigs += [_sig([S(i + q), B, S(i + nb)], [S(i + q)]) for i in range(len(like.shape) - q)]
    return sigs + [_sig([B, B, B], [B]), _sig([B, B, P], [P]), _sig([P, B, P], [P])]


register(OpDef("scatter_nd_like", infer=_scatter_nd_like_meta, kernel=K.scatter_nd_like, sbp=_scatter_nd_like_sbp,
               grad=lambda op, dys: [None, None, apply("gather_nd", [dys[0], op.inputs[1]])]))


def _tensor_scatter_meta(op):
    params, updates, indices = op.inputs
    if updates.dtype is not params.dtype:
        raise TypeError("%s '%s': updates (%s) must have the dtype of params (%s)" % (
            op.type, op.name, updates.dtype.name, params.dtype.name))
    _check_scatter_shapes(op, params.shape, indices, updates)
    return [TensorMeta(params.shape, params.dtype, _dynamic(op))]


def _tensor_scatter_sbp(op):
    params, _, indices = op.inputs
    nb, q = len(indices.shape) - 1, indices.shape[-1]
    sigs = [_sig([S(i), S(i - q + nb), B], [S(i)]) for i in range(q, len(params.shape))]
    return sigs + [_sig([B, B, B], [B]), _sig([P, P, B], [P])]


def _tensor_scatter_update_grad(op, dys):
    params, updates, indices = op.inputs
    dy = dys[0]
    zeros = apply("fill_like", [updates], {"value": 0.0})
    return [apply("tensor_scatter_nd_update", [dy, zeros, indices]), apply("gather_nd", [dy, indices]), None]


def _tensor_scatter_add_grad(op, dys):
    return [dys[0], apply("gather_nd", [dys[0], op.inputs[2]]), None]


register(OpDef("tensor_scatter_nd_update", infer=_tensor_scatter_meta, kernel=K.tensor_scatter_nd_update,
               sbp=_tensor_scatter_sbp, grad=_tensor_scatter_update_grad))
register(OpDef("tensor_scatter_nd_add", infer=_tensor_scatter_meta, kernel=K.tensor_scatter_nd_add,
               sbp=_tensor_scatter_sbp, grad=_tensor_scatter_add_grad))


# --- dim_gather ---------------------------------------------------------------------------------------------------
def _dim_gather_meta(op):
    x, index = op.inputs
    dim = op.attrs["dim"]
    _check_index(op, index, "index")
    if len(x.shape) != len(index.shape) or not 0 <= dim < len(x.shape):
        raise ValueError("dim_gather '%s': input %s and index %s must have one rank, dim %d within it" % (
            op.name, x.shape, index.shape, dim))
    if any(a != b for i, (a, b) in enumerate(zip(x.shape, index.shape)) if i != dim):
        raise ValueError("dim_gather '%s': input %s and index %s must agree outside dim %d" % (
            op.name, x.shape, index.shape, dim))
    return [TensorMeta(index.shape, x.dtype, _dynamic(op))]


def _dim_gather_sbp(op):
    dim, nd = op.attrs["dim"], len(op.inputs[1].shape)
    sigs = [_sig([S(i) if i != dim else B, S(i)], [S(i)]) for i in range(nd)]
    return sigs + [_sig([B, B], [B]), _sig([P, B], [P])]


register(OpDef("dim_gather", infer=_dim_gather_meta, kernel=K.dim_gather,
               kernel_attrs=lambda op: {"dim": op.attrs["dim"]}, sbp=_dim_gather_sbp,
               grad=lambda op, dys: [apply("dim_scatter_add_like", [dys[0], op.inputs[1], op.inputs[0]],
                                           {"dim": op.attrs["dim"]}), None]))


def _dim_scatter_meta(op):
    dy, index, like = op.inputs
    if tuple(dy.shape) != tuple(index.shape) or len(like.shape) != len(index.shape):
        raise ValueError("dim_scatter_add_like '%s': input %s, index %s and like %s do not fit" % (
            op.name, dy.shape, index.shape, like.shape))
    return [TensorMeta(like.shape, dy.dtype, like.is_dynamic)]


def _dim_scatter_sbp(op):
    dim, nd = op.attrs["dim"], len(op.inputs[1].shape)
    sigs = [_sig([S(i), S(i), S(i)], [S(i)]) for i in range(nd) if i != dim]
    return sigs + [_sig([B, B, B], [B]), _sig([P, B, B], [P])]


register(OpDef("dim_scatter_add_like", infer=_dim_scatter_meta, kernel=K.dim_scatter_add_like,
               kernel_attrs=lambda op: {"dim": op.attrs["dim"]}, sbp=_dim_scatter_sbp,
               grad=lambda op, dys: [apply("dim_gather", [dys[0], op.inputs[1]], {"dim": op.attrs["dim"]}),
                                     None, None]))


# --- segment sums -------------------------------------------------------------------------------------------------
def _segment_offset(sbp, axis, shape, dev):
    """Where device `dev`'s piece starts along `axis` (0 unless split there; on a mesh, nested)."""
    return sbp_mod.piece_range(shape, sbp, dev.index, dev.parallel_num, axis)[0]


def _segment_meta(op):
    data, ids = op.inputs[:2]
    _check_index(op, ids, "segment_ids")
    axis, m = op.attrs["axis"], len(ids.shape)
    if tuple(data.shape[axis:axis + m]) != tuple(ids.shape):
        raise ValueError("%s '%s': segment_ids %s must match data %s from axis %d" % (
            op.type, op.name, ids.shape, data.shape, axis))
    if len(op.inputs) == 3:  # the _like variant: the segment count comes from `like`
        like = op.inputs[2]
        want = tuple(data.shape[:axis]) + (like.shape[axis],) + tuple(data.shape[axis + m:])
        if like.dtype is not data.dtype or tuple(like.shape) != want:
            raise ValueError("unsorted_segment_sum_like '%s': like %s %s does not fit data %s %s" % (
                op.name, like.shape, like.dtype.name, data.shape, data.dtype.name))
        return [TensorMeta(like.shape, data.dtype, like.is_dynamic)]
    shape = tuple(data.shape[:axis]) + (op.attrs["num_segments"],) + tuple(data.shape[axis + m:])
    return [TensorMeta(shape, data.dtype, _dynamic(op))]


def _segment_sbp(op):
    data, ids = op.inputs[:2]
    axis, m = op.attrs["axis"], len(ids.shape)
    like = len(op.inputs) == 3
    extra = [B] if like else []
    sigs = [_sig([S(i + axis), S(i)] + extra, [P]) for i in range(m)]
    if like:
        sigs += [_sig([S(i + axis), S(i), P], [P]) for i in range(m)]
    for i in range(len(data.shape)):
        if axis <= i < axis + m:
            continue
        j = i if i < axis else i - m + 1
        sigs.append(_sig([S(i), B] + ([S(j)] if like else []), [S(j)]))
    sigs.append(_sig([P, B] + extra, [P]))
    sigs.append(_sig([B, B] + extra, [B]))
    if like:
        sigs += [_sig([P, B, P], [P]), _sig([B, B, S(axis)], [S(axis)])]
    else:
        sigs.append(_sig([B, B], [S(axis)]))
    return sigs


def _segment_local(op, dev):
    axis = op.attrs["axis"]
    return {"offset": _segment_offset(dev.sbp_out[0], axis, op.outputs[0].shape, dev)}


def _segment_grad(op, dys):
    grads = [apply("gather", [dys[0], op.inputs[1]], {"axis": op.attrs["axis"]}), None]
    return grads + [None] * (len(op.inputs) - 2)


register(OpDef("unsorted_segment_sum", infer=_segment_meta, kernel=K.unsorted_segment_sum,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"], "num_segments": op.attrs["num_segments"]},
               local_attrs=lambda op, dev: dict(_segment_local(op, dev), num_segments=dev.out_shapes[0][
                   op.attrs["axis"]]),
               sbp=_segment_sbp, grad=_segment_grad))
register(OpDef("unsorted_segment_sum_like", infer=_segment_meta, kernel=K.unsorted_segment_sum_like,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"]}, local_attrs=_segment_local,
               sbp=_segment_sbp, grad=_segment_grad))


def _batch_segment_meta(op):
    data, ids = op.inputs
    _check_index(op, ids, "segment_ids")
    nb = len(ids.shape) - 1
    if len(ids.shape) < 1 or len(data.shape) < len(ids.shape) or tuple(data.shape[:nb]) != tuple(ids.shape[:nb]) \
            or data.shape[nb] != ids.shape[-1]:
        raise ValueError("unsorted_batch_segment_sum '%s': segment_ids %s do not fit data %s" % (
            op.name, ids.shape, data.shape))
    if op.attrs["num_segments"] < 1:
        raise ValueError("unsorted_batch_segment_sum '%s': num_segments must be >= 1" % op.name)
    shape = list(data.shape)
    shape[nb] = op.attrs["num_segments"]
    return [TensorMeta(shape, data.dtype, _dynamic(op))]


def _batch_segment_sbp(op):
    nb = len(op.inputs[1].shape) - 1
    return [_sig([S(i), S(i)], [S(i)]) for i in range(nb)] + [_sig([P, B], [P]), _sig([B, B], [B])]


register(OpDef("unsorted_batch_segment_sum", infer=_batch_segment_meta, kernel=K.unsorted_batch_segment_sum,
               kernel_attrs=lambda op: {"num_segments": op.attrs["num_segments"]}, sbp=_batch_segment_sbp,
               grad=lambda op, dys: [apply("batch_gather", [dys[0], op.inputs[1]]), None]))


# --- in_top_k -----------------------------------------------------------------------------------------------------
def _in_top_k_meta(op):
    targets, predictions = op.inputs
    _check_index(op, targets, "targets")
    if len(targets.shape) != 1 or len(predictions.shape) != 2 or predictions.shape[0] != targets.shape[0]:
        raise ValueError("in_top_k '%s': targets must be (n,) and predictions (n, classes), got %s and %s" % (
            op.name, targets.shape, predictions.shape))
    if predictions.dtype is not dtypes.float32:
        raise TypeError("in_top_k '%s': predictions must be float32 (as OneFlow requires), got %s" % (
            op.name, predictions.dtype.name))
    return [TensorMeta(targets.shape, dtypes.int8, _dynamic(op))]


register(OpDef("in_top_k", infer=_in_top_k_meta, kernel=K.in_top_k, kernel_attrs=lambda op: {"k": op.attrs["k"]},
               sbp=lambda op: [_sig([S(0), S(0)], [S(0)]), _sig([B, B], [B])]))
