"""Gradient clipping by a global norm of any type (nn.Graph, a param group's `clip_grad_norm_type`), as OneFlow
0.9's ClipGradientByGlobalNorm builds it (job_rewriter/autograd.cpp, v0.9.0): the total norm over every gradient
of the group is (Σ Σ |g|^p)^(1/p) for finite p (GlobalNorm: multi_reduce_sum_pow_abs, add, scalar_pow 1/p), the
largest |g| for p = inf and the smallest for p = -inf (GlobalAbsMaxMin); every gradient is then multiplied by
min(max_norm / (norm + 1e-6), 1). The norm type 2 keeps the optimizer pass's sum of squares
(passes/optimizer_pass.py `_clip_by_global_norm`)."""
import math

from oneflow_compat.passes.autodiff import GradScope
from oneflow_compat.ops import registry


def _reduce_all(op_type, x):
    r = registry.apply(op_type, [x], {"axis": None, "keepdims": False})
    return registry.apply("reshape", [r], {"shape": (1,)})


def clip(ctx, job, grads, max_norm, norm_type):
    """{name: (variable op, gradient)} clipped by their joint norm of type `norm_type`."""
    parts = []
    for name, (vop, g) in grads.items():
        with GradScope(ctx, vop, "optimizer"):
            a = registry.apply("abs", [g])
            if math.isinf(norm_type):
                parts.append(_reduce_all("reduce_max" if norm_type > 0 else "reduce_min", a))
            else:
                parts.append(_reduce_all("reduce_sum", registry.apply("scalar_pow", [a], {"value": norm_type})))
    ctx.section = "optimizer"
    if math.isinf(norm_type):
        total = parts[0] if len(parts) == 1 else _reduce_all("reduce_max" if norm_type > 0 else "reduce_min",
                                                             registry.apply("concat", parts, {"axis": 0}))
    else:
        total = parts[0] if len(parts) == 1 else registry.apply("add_n", parts)
        total = registry.apply("scalar_pow", [total], {"value": 1.0 / norm_type})
    coeff = registry.apply("reciprocal", [registry.apply("scalar_add", [total], {"value": 1e-6})])
    coeff = registry.apply("scalar_mul", [coeff], {"value": float(max_norm)})
    coeff = registry.apply("clip_by_value", [coeff], {"min_value": None, "max_value": 1.0})
    out = {}
    for name, (vop, g) in grads.items():
        with GradScope(ctx, vop, "optimizer"):
            out[name] = (vop, registry.apply("mul_by_scalar_tensor", [g, coeff]))
    return out
