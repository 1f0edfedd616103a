"""Shape ops: reshape, transpose, concat, slice, expand/squeeze, constants."""
import numpy as np

from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import array as array_k
from oneflow_compat.kernels import shape as shape_k
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


def infer_reshape(in_shape, shape, what="reshape"):
    shape = list(shape)
    n = int(np.prod(in_shape))
    if shape.count(-1) > 1:
        raise ValueError("%s: at most one -1 in shape %s" % (what, tuple(shape)))
    for d in shape:
        if d < -1:  # a 0 dim is a size like any other (a zero-size tensor reshapes to (0, 1, 5, 2))
            raise ValueError("%s: dims of shape %s must be non-negative or -1" % (what, tuple(shape)))
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1]))
        if known == 0 or n % known:
            raise ValueError("%s: cannot reshape %s into %s" % (what, tuple(in_shape), tuple(shape)))
        shape[shape.index(-1)] = n // known
    if int(np.prod(shape)) != n:
        raise ValueError("%s: cannot reshape %s (%d elements) into %s" % (what, tuple(in_shape), n, tuple(shape)))
    return tuple(shape)


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
