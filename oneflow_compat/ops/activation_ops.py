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
# The gradients of the gradient kernels (inputs dy, y), so that gradients of gradients
# (`autograd.grad(create_graph=True)`) go through relu, sigmoid and tanh:
#   relu_grad = dy * (y > 0):   d/d dy = relu_grad(g, y), d/dy = 0 (away from y = 0)
#   sigmoid_grad = dy * y * (1 - y):   d/d dy = sigmoid_grad(g, y), d/dy = g * dy * (1 - 2y)
#   tanh_grad = dy * (1 - y^2):   d/d dy = tanh_grad(g, y), d/dy = -2 * g * dy * y
def _relu_grad_grad(op, dys):
    return [apply("relu_grad", [dys[0], op.inputs[1]]), apply("fill_like", [op.inputs[1]], {"value": 0.0})]


def _sigmoid_grad_grad(op, dys):
    dy, y = op.inputs
    one_minus_2y = apply("scalar_add", [apply("scalar_mul", [y], {"value": -2.0})], {"value": 1.0})
    return [apply("sigmoid_grad", [dys[0], y]),
            apply("multiply", [apply("multiply", [dys[0], dy]), one_minus_2y])]


def _tanh_grad_grad(op, dys):
    dy, y = op.inputs
    return [apply("tanh_grad", [dys[0], y]),
            apply("multiply", [apply("multiply", [dys[0], dy]), apply("scalar_mul", [y], {"value": -2.0})])]


register(OpDef("relu_grad", infer=_same_meta, kernel=K.relu_grad, sbp=lambda op: _pairwise(op),
               grad=_relu_grad_grad))
register(OpDef("sigmoid", infer=_same_meta, kernel=K.sigmoid, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("sigmoid_grad", [dys[0], op.outputs[0]])]))
register(OpDef("sigmoid_grad", infer=_same_meta, kernel=K.sigmoid_grad, sbp=lambda op: _pairwise(op),
               grad=_sigmoid_grad_grad))
register(OpDef("tanh", infer=_same_meta, kernel=K.tanh, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("tanh_grad", [dys[0], op.outputs[0]])]))
register(OpDef("tanh_grad", infer=_same_meta, kernel=K.tanh_grad, sbp=lambda op: _pairwise(op),
               grad=_tanh_grad_grad))


register(OpDef("gelu", infer=_same_meta, kernel=K.gelu, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("gelu_grad", [dys[0], op.inputs[0]])]))
register(OpDef("gelu_grad", infer=_same_meta, kernel=K.gelu_grad, sbp=lambda op: _pairwise(op)))


def _leaky_relu_grad(op, dys):
    return [apply("leaky_relu_grad", [dys[0], op.inputs[0]], {"alpha": op.attrs["alpha"]})]


register(OpDef("leaky_relu", infer=_same_meta, kernel=K.leaky_relu,
               kernel_attrs=lambda op: {"alpha": op.attrs["alpha"]}, sbp=sbp_rules.unary, grad=_leaky_relu_grad))
def _leaky_relu_grad_grad(op, dys):
    """leaky_relu_grad = dy where x > 0, alpha * dy elsewhere: linear in dy, flat in x (for gradients of
    gradients)."""
    return [apply("leaky_relu_grad", [dys[0], op.inputs[1]], {"alpha": op.attrs["alpha"]}),
            apply("fill_like", [op.inputs[1]], {"value": 0.0})]


register(OpDef("leaky_relu_grad", infer=_same_meta, kernel=K.leaky_relu_grad,
               kernel_attrs=lambda op: {"alpha": op.attrs["alpha"]}, sbp=lambda op: _pairwise(op),
               grad=_leaky_relu_grad_grad))


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
def _softmax_grad_grad(op, dys):
    """softmax_grad = y * (dy - s), s = sum(dy * y) along the axis: d/d dy = softmax_grad(g, y); d/dy =
    g * (dy - s) - dy * sum(g * y) (for gradients of gradients)."""
    dy, y = op.inputs
    g = dys[0]
    axis = op.attrs["axis"] % len(y.shape)

    def along(t):
        return apply("reduce_sum", [t], {"axis": [axis], "keepdims": True})

    s = along(apply("multiply", [dy, y]))
    t = along(apply("multiply", [g, y]))
    d_y = apply("subtract", [apply("multiply", [g, apply("subtract", [dy, s])]), apply("multiply", [dy, t])])
    return [apply("softmax_grad", [g, y], {"axis": op.attrs["axis"]}), d_y]


register(OpDef("softmax_grad", infer=_same_meta, kernel=K.softmax_grad, kernel_attrs=_axis_attr,
               sbp=_along_axis_sbp, grad=_softmax_grad_grad))


# --- sparse softmax cross entropy ---------------------------------------------------------------------------------
def _sce_meta(op):
    logits, labels = op.inputs
    return [TensorMeta(labels.shape, logits.dtype, logits.is_dynamic or labels.is_dynamic),
            TensorMeta(logits.shape, logits.dtype, logits.is_dynamic)]


def _sce_grad(op, dys):
    logits, labels = op.inputs
    prob = op.outputs[1]
    dlogits = None
    if dys[0] is not None:
        dlogits = apply("sparse_softmax_cross_entropy_grad", [dys[0], prob, labels])
    if dys[1] is not None:  # the probabilities used downstream (a gradient of this gradient reads them)
        through_softmax = apply("softmax_grad", [dys[1], prob], {"axis": len(prob.shape) - 1})
        dlogits = through_softmax if dlogits is None else apply("add", [dlogits, through_softmax])
    return [dlogits, None]


def _sce_grad_grad(op, dys):
    """sparse_softmax_cross_entropy_grad = (prob - onehot(labels)) * dloss[..., None]: d/d dloss =
    sum(g * (prob - onehot)) over the classes, d/d prob = g * dloss[..., None] (for gradients of gradients)."""
    dloss, prob, labels = op.inputs
    g = dys[0]
    ones = apply("fill_like", [dloss], {"value": 1.0})
    diff = apply("sparse_softmax_cross_entropy_grad", [ones, prob, labels])
    d_dloss = apply("reduce_sum", [apply("multiply", [g, diff])], {"axis": [len(prob.shape) - 1], "keepdims": False})
    d_prob = apply("multiply", [g, apply("reshape", [dloss], {"shape": tuple(dloss.shape) + (1,)})])
    return [d_dloss, d_prob, None]


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
               kernel=loss_k.sparse_softmax_cross_entropy_grad, sbp=_sce_grad_sbp, grad=_sce_grad_grad))
# fused (passes/fusion.py): the loss and its gradient for a constant loss gradient (backward's seed), one kernel
register(OpDef("sparse_softmax_cross_entropy_and_grad", infer=_sce_meta,
               kernel=loss_k.sparse_softmax_cross_entropy_and_grad, kernel_attrs=lambda op: {"seed": op.attrs["seed"]},
               num_outputs=2, sbp=_sce_sbp))


# --- the nn ops family's activations (kernels/activation.py; OneFlow's op type names) --------------------------
def _attrs_of(*names):
    return lambda op: {k: op.attrs[k] for k in names}


def _elementwise_activation(op_type, forward, backward, grad_reads="x", attrs=()):
    """A unary activation and its `<op>_grad` kernel op: dy with the forward input (grad_reads "x") or output
    ("y"), the same attrs."""
    kattrs = _attrs_of(*attrs) if attrs else None

    def grad(op, dys):
        saved = op.inputs[0] if grad_reads == "x" else op.outputs[0]
        return [apply(op_type + "_grad", [dys[0], saved], {k: op.attrs[k] for k in attrs})]

    register(OpDef(op_type, infer=_floating_same_meta(op_type), kernel=forward, kernel_attrs=kattrs,
                   sbp=sbp_rules.unary, grad=grad))
    register(OpDef(op_type + "_grad", infer=_same_meta, kernel=backward, kernel_attrs=kattrs,
                   sbp=lambda op: _pairwise(op)))


def _floating_same_meta(op_type):
    def infer(op):
        x = op.inputs[0]
        if not x.dtype.is_floating:
            raise TypeError("%s '%s': input must be floating, got %s" % (op_type, op.name, x.dtype.name))
        return _same_meta(op)
    return infer


_elementwise_activation("hardtanh", K.hardtanh, K.hardtanh_grad, "y", ("min_val", "max_val"))
_elementwise_activation("elu", K.elu, K.elu_grad, "x", ("alpha",))
_elementwise_activation("hardsigmoid", K.hardsigmoid, K.hardsigmoid_grad)
_elementwise_activation("hardswish", K.hardswish, K.hardswish_grad)
_elementwise_activation("softplus", K.softplus, K.softplus_grad, "x", ("beta", "threshold"))
_elementwise_activation("log_sigmoid", K.log_sigmoid, K.log_sigmoid_grad)
_elementwise_activation("silu", K.silu, K.silu_grad)
_elementwise_activation("mish", K.mish, K.mish_grad)
_elementwise_activation("fast_gelu", K.fast_gelu, K.fast_gelu_grad)


def _prelu_meta(op):
    x, alpha = op.inputs
    if len(alpha.shape) != len(x.shape) - 1 or any(a not in (1, d) for a, d in zip(alpha.shape, x.shape[1:])):
        raise ValueError("prelu '%s': alpha of shape %s does not fit input of shape %s (alpha has the input's axes "
                         "after the first, each of the input's size or 1)" % (op.name, tuple(alpha.shape),
                                                                             tuple(x.shape)))
    if alpha.dtype is not x.dtype:
        raise TypeError("prelu '%s': alpha dtype %s differs from input dtype %s" % (op.name, alpha.dtype.name,
                                                                                 x.dtype.name))
    return _floating_same_meta("prelu")(op)


def _prelu_sbp(op):
    """Batch split with alpha broadcast (OneFlow's prelu_op.cpp); an axis alpha spans splits with alpha; an axis
    alpha shares (size 1) splits x alone."""
    x, alpha = op.inputs
    sigs = [((S.S(0), S.B), (S.S(0),))]
    for i in range(1, len(x.shape)):
        if alpha.shape[i - 1] == x.shape[i]:
            sigs.append(((S.S(i), S.S(i - 1)), (S.S(i),)))
        else:
            sigs.append(((S.S(i), S.B), (S.S(i),)))
    return sigs + [((S.B, S.B), (S.B,))]


def _prelu_grad_sbp(op):
    """[dy, x, alpha] -> (dx, dalpha): dalpha sums over the batch and the shared axes, so splitting those gives
    partial sums."""
    dy, x, alpha = op.inputs
    sigs = [((S.S(0), S.S(0), S.B), (S.S(0), S.P))]
    for i in range(1, len(x.shape)):
        if alpha.shape[i - 1] == x.shape[i]:
            sigs.append(((S.S(i), S.S(i), S.S(i - 1)), (S.S(i), S.S(i - 1))))
        else:
            sigs.append(((S.S(i), S.S(i), S.B), (S.S(i), S.P)))
    return sigs + [((S.B, S.B, S.B), (S.B, S.B)), ((S.P, S.B, S.B), (S.P, S.P))]


def _prelu_grad(op, dys):
    dx, dalpha = apply("prelu_grad", [dys[0], op.inputs[0], op.inputs[1]])
    return [dx, dalpha]


register(OpDef("prelu", infer=_prelu_meta, kernel=K.prelu, sbp=_prelu_sbp, grad=_prelu_grad))
register(OpDef("prelu_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype,
                                                          op.inputs[1].is_dynamic),
                                               TensorMeta(op.inputs[2].shape, op.inputs[2].dtype)],
               kernel=K.prelu_grad, sbp=_prelu_grad_sbp, num_outputs=2))
