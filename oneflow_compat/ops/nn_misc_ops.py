"""The nn ops family's other ops: l2_normalize (and, below, embedding, pixel shuffle, upsample, padding ops).

Kernels come from `kernels/norm.py` and the kernel modules each section names.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import norm as norm_k
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


# --- l2_normalize -------------------------------------------------------------------------------------------------
def _l2_meta(op):
    x = op.inputs[0]
    nd = len(x.shape)
    axis = op.attrs["axis"]
    if not (0 <= axis < nd):
        raise ValueError("l2_normalize '%s': axis %r out of range for input of shape %s" % (op.name, axis, x.shape))
    if not x.dtype.is_floating:
        raise TypeError("l2_normalize '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    kept = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic), TensorMeta(kept, x.dtype, x.is_dynamic)]


def _l2_attrs(op):
    return {"axis": op.attrs["axis"], "epsilon": op.attrs["epsilon"]}


def _l2_sbp(op):
    """Every axis but the normalized one may be split (OneFlow's l2_normalize_op.cpp)."""
    nd, axis = len(op.inputs[0].shape), op.attrs["axis"]
    n_in, n_out = len(op.inputs), len(op.outputs)
    return [_sig([S.S(i)] * n_in, [S.S(i)] * n_out) for i in range(nd) if i != axis] + \
        [_sig([S.B] * n_in, [S.B] * n_out)]


def _l2_grad(op, dys):
    # square_x_sum is the op's saved statistic (OneFlow's kernel keeps it for the gradient): no gradient flows
    # back through it
    if dys[0] is None:
        return [None]
    y, square_x_sum = op.outputs
    return [apply("l2_normalize_grad", [dys[0], y, square_x_sum], dict(_l2_attrs(op)))]


register(OpDef("l2_normalize", infer=_l2_meta, kernel=norm_k.l2_normalize, kernel_attrs=_l2_attrs, sbp=_l2_sbp,
               grad=_l2_grad, num_outputs=2))
register(OpDef("l2_normalize_grad", infer=lambda op: [TensorMeta(op.inputs[0].shape, op.inputs[0].dtype,
                                                                 op.inputs[0].is_dynamic)],
               kernel=norm_k.l2_normalize_grad, kernel_attrs=_l2_attrs, sbp=_l2_sbp))
