"""Shape ops: reshape, transpose, concat, slice, expand/squeeze, constants."""
import numpy as np

from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import array as array_k
from oneflow_compat.kernels import shape as shape_k
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


class ShapeInferenceError(RuntimeError, ValueError):
    """A target shape that does not fit: OneFlow 0.9 raises RuntimeError (its words below, from
    core/functional/impl/common.cpp InferShapeUnspecifiedDim); a ValueError too, as this project raised before."""


def _shape_text(shape):
    return "(%s)" % ",".join(str(int(d)) for d in shape)  # OneFlow's Shape::ToString


def infer_reshape(in_shape, shape, what="reshape"):
    shape = list(shape)
    n = int(np.prod(in_shape))
    for d in shape:
        if d < -1:
            raise ShapeInferenceError("%s: Invalid shape dimension %d" % (what, d))
    if shape.count(-1) > 1:
        raise ShapeInferenceError("%s: only one dimension can be inferred (shape %s)" % (what, tuple(shape)))
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        if known == 0 or n % known:
            raise _invalid_shape(what, shape, n)
        shape[shape.index(-1)] = n // known
    if int(np.prod(shape)) != n:
        raise _invalid_shape(what, shape, n)
    return tuple(shape)


def _invalid_shape(what, shape, n):
    # (built only on failure: reshape is on the eager hot path)
    return ShapeInferenceError("%s: shape '%s' is invalid for input of size %d" % (what, _shape_text(shape), n))


def _reshape_meta(op):
    x = op.inputs[0]
    return [TensorMeta(infer_reshape(x.shape, op.attrs["shape"], "reshape '%s'" % op.name), x.dtype, x.is_dynamic)]


def _reshape_sbp(op):
    """Splits survive when the leading dims up to and including the split axis are unchanged."""
    xs, ys = op.inputs[0].shape, op.outputs[0].shape
    sigs = []
    for i in range(min(len(xs), len(ys))):
        if xs[: i + 1] == ys[: i + 1]:
            sigs.append(((S.S(i),), (S.S(i),)))
        else:
            break
    return sigs + [((S.B,), (S.B,)), ((S.P,), (S.P,))]


def _reshape_local(op, dev):
    if op.inputs[0].is_dynamic:
        # mirrored pieces may hold fewer rows than the static shape: the batch dim stays free
        return {"shape": (-1,) + tuple(op.outputs[0].shape[1:])}
    return {"shape": tuple(dev.out_shapes[0])}


register(OpDef("reshape", infer=_reshape_meta, kernel=shape_k.reshape,
               local_attrs=_reshape_local, sbp=_reshape_sbp,
               grad=lambda op, dys: [apply("reshape_like", [dys[0], op.inputs[0]])]))


def _reshape_like_sbp(op):
    xs, ys = op.inputs[0].shape, op.inputs[1].shape
    sigs = []
    for i in range(min(len(xs), len(ys))):
        if xs[: i + 1] == ys[: i + 1]:
            sigs.append(((S.S(i), S.S(i)), (S.S(i),)))
        else:
            break
    return sbp_rules.shape_only(sigs + [((S.B, S.B), (S.B,)), ((S.P, S.B), (S.P,))], 1)


register(OpDef("reshape_like", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype,
                                                            op.inputs[1].is_dynamic)],
               kernel=shape_k.reshape_like, sbp=_reshape_like_sbp,
               grad=lambda op, dys: [apply("reshape_like", [dys[0], op.inputs[0]]), None]))


def _constant_meta(op):
    return [TensorMeta(op.attrs["shape"], op.attrs["dtype"])]


def _constant_local(op, dev):
    return {"shape": tuple(dev.out_shapes[0])}


register(OpDef("constant", infer=_constant_meta,
               kernel=array_k.full,
               kernel_attrs=lambda op: {"value": op.attrs["value"], "dtype": op.attrs["dtype"].np},
               local_attrs=_constant_local, sbp=sbp_rules.source))
