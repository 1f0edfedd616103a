"""Activations, softmax and the classification losses."""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _relu(xp, x):
    return xp.maximum(x, x.dtype.type(0))


def _relu_grad(xp, dy, y):
    return dy * (y > 0)


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


register(OpDef("relu", infer=_same_meta, kernel=_relu, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("relu_grad", [dys[0], op.outputs[0]])]))
register(OpDef("relu_grad", infer=_same_meta, kernel=_relu_grad, sbp=lambda op: _pairwise(op)))
register(OpDef("sigmoid", infer=_same_meta, kernel=_sigmoid, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("sigmoid_grad", [dys[0], op.outputs[0]])]))
register(OpDef("sigmoid_grad", infer=_same_meta, kernel=lambda xp, dy, y: dy * y * (1 - y),
               sbp=lambda op: _pairwise(op)))
register(OpDef("tanh", infer=_same_meta, kernel=lambda xp, x: xp.tanh(x), sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("tanh_grad", [dys[0], op.outputs[0]])]))
register(OpDef("tanh_grad", infer=_same_meta, kernel=lambda xp, dy, y: dy * (1 - y * y),
               sbp=lambda op: _pairwise(op)))


def _leaky_relu_grad(op, dys):
    return [apply("leaky_relu_grad", [dys[0], op.inputs[0]], {"alpha": op.attrs["alpha"]})]


register(OpDef("leaky_relu", infer=_same_meta, kernel=lambda xp, x, alpha: xp.where(x > 0, x, x * x.dtype.type(alpha)),
               kernel_attrs=lambda op: {"alpha": op.attrs["alpha"]}, sbp=sbp_rules.unary, grad=_leaky_relu_grad))
register(OpDef("leaky_relu_grad", infer=_same_meta,
               kernel=lambda xp, dy, x, alpha: xp.where(x > 0, dy, dy * dy.dtype.type(alpha)),
               kernel_attrs=lambda op: {"alpha": op.attrs["alpha"]}, sbp=lambda op: _pairwise(op)))


def _pairwise(op):
    """Ops of two same-shaped inputs (dy and a forward tensor) that work elementwise."""
    nd = len(op.inputs[0].shape)
    return [((S.S(i), S.S(i)), (S.S(i),)) for i in range(nd)] + [((S.B, S.B), (S.B,))]


# --- softmax ------------------------------------------------------------------------------------------------------
def _softmax(xp, x, axis):
    e = xp.exp(x - x.max(axis=axis, keepdims=True))
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _softmax_grad(xp, dy, y, axis):
    return y * (dy - (dy * y).sum(axis=axis, keepdims=True))


def _axis_attr(op):
    return {"axis": op.attrs["axis"] % len(op.inputs[0].shape)}


def _along_axis_sbp(op):
    nd = len(op.inputs[0].shape)
    ax = op.attrs["axis"] % nd
    n = len(op.inputs)
    return [((S.S(i),) * n, (S.S(i),) * len(op.outputs)) for i in range(nd) if i != ax] + \
        [((S.B,) * n, (S.B,) * len(op.outputs))]


register(OpDef("softmax", infer=_same_meta, kernel=_softmax, kernel_attrs=_axis_attr, sbp=_along_axis_sbp,
               grad=lambda op, dys: [apply("softmax_grad", [dys[0], op.outputs[0]], {"axis": op.attrs["axis"]})]))
register(OpDef("softmax_grad", infer=_same_meta, kernel=_softmax_grad, kernel_attrs=_axis_attr, sbp=_along_axis_sbp))


# --- sparse softmax cross entropy ---------------------------------------------------------------------------------
def _sce_meta(op):
    logits, labels = op.inputs
    return [TensorMeta(labels.shape, logits.dtype, logits.is_dynamic or labels.is_dynamic),
            TensorMeta(logits.shape, logits.dtype, logits.is_dynamic)]


def _sce(xp, logits, labels):
    depth = logits.shape[-1]
    if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= depth):
        bad = int(labels.min()) if int(labels.min()) < 0 else int(labels.max())
        raise ValueError("sparse_softmax_cross_entropy: label %d is out of range [0, %d)" % (bad, depth))
    prob = _softmax(xp, logits, -1)
    picked = xp.take_along_axis(prob, labels[..., None].astype("int64"), axis=-1)[..., 0]
    loss = -xp.log(xp.maximum(picked, logits.dtype.type(1e-20)))
    return loss.astype(logits.dtype), prob


def _sce_grad_kernel(xp, dloss, prob, labels):
    g = prob.copy()
    idx = labels[..., None].astype("int64")
    xp.put_along_axis(g, idx, xp.take_along_axis(g, idx, axis=-1) - 1, axis=-1)
    return g * dloss[..., None]


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


register(OpDef("sparse_softmax_cross_entropy", infer=_sce_meta, kernel=_sce, num_outputs=2, grad=_sce_grad,
               sbp=_sce_sbp))
register(OpDef("sparse_softmax_cross_entropy_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape,
                                                                                 op.inputs[1].dtype,
                                                                                 op.inputs[1].is_dynamic)],
               kernel=_sce_grad_kernel, sbp=_sce_grad_sbp))
