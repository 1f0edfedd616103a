"""OneFlow 0.9's `inv` user op (flow.linalg.inv): the inverse of square matrices, batched over leading axes.

The op type and its input/output are OneFlow v0.9.0's (oneflow/core/functional/impl/math_functor.cpp InvFunctor:
`OpBuilder("inv").Input("x").Output("y")`), so a duplicate on another branch shows as a registration clash. Its
gradient is OneFlow's (oneflow/core/autograd/gradient_funcs/inv.cpp): dx = -y^T dy y^T, built from matmuls.
Kernel: `kernels/linalg.inv`.
"""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, S
from oneflow_compat.kernels import linalg as K
from oneflow_compat.ops.registry import OpDef, apply, register


def _inv_meta(op):
    x = op.inputs[0]
    if len(x.shape) < 2:
        raise ValueError("inv '%s': linalg.inv: The input tensor must be at least 2 dimensions." % op.name)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError("inv '%s': linalg.inv: A must be batches of square matrices, but they are %d by %d matrices"
                         % (op.name, x.shape[-2], x.shape[-1]))
    if not x.dtype.is_floating:
        raise TypeError("inv '%s': linalg.inv: expected a floating tensor, got %s" % (op.name, x.dtype.name))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _inv_sbp(op):
    """Split on a batch axis (each matrix whole on one device), or broadcast; no partial sum (not linear)."""
    nd = len(op.inputs[0].shape)
    return [((S(i),), (S(i),)) for i in range(nd - 2)] + [((B,), (B,))]


def _inv_grad(op, dys):
    y = op.outputs[0]
    yt_dy = apply("matmul", [y, dys[0]], {"transpose_a": True, "transpose_b": False, "alpha": 1.0})
    return [apply("matmul", [yt_dy, y], {"transpose_a": False, "transpose_b": True, "alpha": -1.0})]


register(OpDef("inv", infer=_inv_meta, kernel=K.inv, sbp=_inv_sbp, grad=_inv_grad))
