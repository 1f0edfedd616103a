"""Activations, softmax and the classification losses."""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import activation as K
from oneflow_compat.kernels import loss as loss_k
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


register(OpDef("relu", infer=_same_meta, kernel=K.relu, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("relu_grad", [dys[0], op.outputs[0]])]))
register(OpDef("relu_grad", infer=_same_meta, kernel=K.relu_grad, sbp=lambda op: _pairwise(op)))
register(OpDef("sigmoid", infer=_same_meta, kernel=K.sigmoid, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("sigmoid_grad", [dys[0], op.outputs[0]])]))
register(OpDef("sigmoid_grad", infer=_same_meta, kernel=K.sigmoid_grad, sbp=lambda op: _pairwise(op)))
register(OpDef("tanh", infer=_same_meta, kernel=K.tanh, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("tanh_grad", [dys[0], op.outputs[0]])]))
register(OpDef("tanh_grad", infer=_same_meta, kernel=K.tanh_grad, sbp=lambda op: _pairwise(op)))


register(OpDef("gelu", infer=_same_meta, kernel=K.gelu, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("gelu_grad", [dys[0], op.inputs[0]])]))
register(OpDef("gelu_grad", infer=_same_meta, kernel=K.gelu_grad, sbp=lambda op: _pairwise(op)))


def _leaky_relu_grad(op, dys):
    return [apply("leaky_relu_grad", [dys[0], op.inputs[0]], {"alpha": op.attrs["alpha"]})]


register(OpDef("leaky_relu", infer=_same_meta, kernel=K.leaky_relu,
               kernel_attrs=lambda op: {"alpha": op.attrs["alpha"]}, sbp=sbp_rules.unary, grad=_leaky_relu_grad))
register(OpDef("leaky_relu_grad", infer=_same_meta, kernel=K.leaky_relu_grad,
               kernel_attrs=lambda op: {"alpha": op.attrs["alpha"]}, sbp=lambda op: _pairwise(op)))


def _pairwise(op):
    """Ops of two same-shaped inputs (dy and a forward tensor) that work elementwise."""
    nd = len(op.inputs[0].shape)
    return [((S.S(i), S.S(i)), (S.S(i),)) for i in range(nd)] + [((S.B, S.B), (S.B,))]


# --- softmax ------------------------------------------------------------------------------------------------------
def _axis_attr(op):
    return {"axis": op.attrs["axis"] % len(op.inputs[0].shape)}


def _along_axis_sbp(op):
    nd = len(op.inputs[0].shape)
    ax = op.attrs["axis"] % nd
    n = len(op.inputs)
    return [((S.S(i),) * n, (S.S(i),) * len(op.outputs)) for i in range(nd) if i != ax] + \
        [((S.B,) * n, (S.B,) * len(op.outputs))]


register(OpDef("softmax", infer=_same_meta, kernel=K.softmax, kernel_attrs=_axis_attr, sbp=_along_axis_sbp,
               grad=lambda op, dys: [apply("softmax_grad", [dys[0], op.outputs[0]], {"axis": op.attrs["axis"]})]))
register(OpDef("softmax_grad", infer=_same_meta, kernel=K.softmax_grad, kernel_attrs=_axis_attr,
               sbp=_along_axis_sbp))


# --- sparse softmax cross entropy ---------------------------------------------------------------------------------
def _sce_meta(op):
    logits, labels = op.inputs
    return [TensorMeta(labels.shape, logits.dtype, logits.is_dynamic or labels.is_dynamic),
            TensorMeta(logits.shape, logits.dtype, logits.is_dynamic)]


def _sce_grad(op, dys):
    logits, labels = op.inputs
    dlogits = apply("sparse_softmax_cross_entropy_grad", [dys[0], op.outputs[1], labels])
    return [dlogits, None]


def _sce_sbp(op):
    nd = len(op.inputs[1].shape)
    return [((S.S(i), S.S(i)), (S.S(i), S.S(i))) for i in range(nd)] + [((S.B, S.B), (S.B, S.B))]


def _sce_grad_sbp(op):
    nd = len(op.inputs[0].shape)
    return [((S.S(i), S.S(i), S.S(i)), (S.S(i),)) for i in range(nd)] + [((S.B, S.B, S.B), (S.B,))]


register(OpDef("sparse_softmax_cross_entropy", infer=_sce_meta, kernel=loss_k.sparse_softmax_cross_entropy,
               num_outputs=2, grad=_sce_grad, sbp=_sce_sbp))
register(OpDef("sparse_softmax_cross_entropy_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape,
                                                                                 op.inputs[1].dtype,
                                                                                 op.inputs[1].is_dynamic)],
               kernel=loss_k.sparse_softmax_cross_entropy_grad, sbp=_sce_grad_sbp))
# fused (passes/fusion.py): the loss and its gradient for a constant loss gradient (backward's seed), one kernel
register(OpDef("sparse_softmax_cross_entropy_and_grad", infer=_sce_meta,
               kernel=loss_k.sparse_softmax_cross_entropy_and_grad, kernel_attrs=lambda op: {"seed": op.attrs["seed"]},
               num_outputs=2, sbp=_sce_sbp))
