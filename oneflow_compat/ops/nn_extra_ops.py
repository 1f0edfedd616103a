"""OneFlow 0.9's further activations (celu, selu, hardshrink, softshrink, softsign, threshold, quick_gelu), cumprod
and broadcast_fmod (issue 21, the nnextra helper).

Op types and attribute names are OneFlow v0.9.0's user ops (oneflow/ir/include/OneFlow/OneFlowUserOps.td:
celu `alpha`, hardshrink `lambd`, softshrink `alpha`, threshold `threshold_val` / `value`, cumprod `dim`), so that
another branch adding one shows as a registration clash. Kernels: `kernels/activation_extra.py`. GLU is no op of
its own (OneFlow's functional composes it from a split, sigmoid and a product; so does the surface).
"""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.sbp import B, S
from oneflow_compat.kernels import activation_extra as K
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.activation_ops import _elementwise_activation
from oneflow_compat.ops.math_ops import _broadcast_meta, _unbroadcast
from oneflow_compat.ops.registry import OpDef, apply, register
from oneflow_compat.ops.tensor_ops import _check_axes, _splits_except

# --- activations: each with its `<op>_grad` (dy with the forward input "x" or output "y", as OneFlow saves) --------
_elementwise_activation("celu", K.celu, K.celu_grad, "x", ("alpha",))
_elementwise_activation("selu", K.selu, K.selu_grad)
_elementwise_activation("hardshrink", K.hardshrink, K.hardshrink_grad, "y", ("lambd",))
_elementwise_activation("softshrink", K.softshrink, K.softshrink_grad, "y", ("alpha",))
_elementwise_activation("softsign", K.softsign, K.softsign_grad)
_elementwise_activation("threshold", K.threshold, K.threshold_grad, "x", ("threshold_val", "value"))
_elementwise_activation("quick_gelu", K.quick_gelu, K.quick_gelu_grad)


# --- cumprod ------------------------------------------------------------------------------------------------------
def _cumprod_meta(op):
    x = op.inputs[0]
    _check_axes(op, [op.attrs["dim"]])
    return [TensorMeta(x.shape, x.dtype if x.dtype.is_floating else dtypes.int64, x.is_dynamic)]


def _cumprod_grad_meta(op):
    x = op.inputs[1]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _dim_attr(op):
    return {"dim": op.attrs["dim"]}


def _cumprod_grad_sbp(op):
    """dy and x split alike on any axis but `dim`, or both broadcast."""
    nd = len(op.inputs[0].shape)
    return [((S(i), S(i)), (S(i),)) for i in range(nd) if i != op.attrs["dim"]] + [((B, B), (B,))]


register(OpDef("cumprod", infer=_cumprod_meta, kernel=K.cumprod, kernel_attrs=_dim_attr,
               sbp=lambda op: _splits_except(op, [op.attrs["dim"]], linear=False),
               grad=lambda op, dys: [apply("cumprod_grad", [dys[0], op.inputs[0]], {"dim": op.attrs["dim"]})]))
# (dy, x) -> dx: recomputes the product (zeros in x handled; kernels/activation_extra.cumprod_grad)
register(OpDef("cumprod_grad", infer=_cumprod_grad_meta, kernel=K.cumprod_grad, kernel_attrs=_dim_attr,
               sbp=_cumprod_grad_sbp))


# --- broadcast_fmod -----------------------------------------------------------------------------------------------
def _fmod_grad(op, dys):
    """OneFlow's BroadcastFMod gradient (oneflow/core/autograd/gradient_funcs/broadcast_binary_ops.cpp, v0.9.0):
    dx = dy, dy_other = -dy * trunc(x / other), with trunc(x / other) = (x - fmod(x, other)) / other."""
    a, b = op.inputs
    dy = dys[0]
    quotient = apply("divide", [apply("subtract", [a, op.outputs[0]]), b])
    db = apply("negative", [apply("multiply", [dy, quotient])])
    return [_unbroadcast(dy, a.shape), _unbroadcast(db, b.shape)]


def _fmod_meta(op):
    a, b = op.inputs
    if a.dtype is not b.dtype:
        raise TypeError("broadcast_fmod '%s': operands differ in dtype (%s, %s)" % (op.name, a.dtype.name,
                                                                                 b.dtype.name))
    return _broadcast_meta(op)


register(OpDef("broadcast_fmod", infer=_fmod_meta, kernel=K.broadcast_fmod, grad=_fmod_grad,
               sbp=lambda op: sbp_rules.broadcast_elementwise(op, partial=None)))
