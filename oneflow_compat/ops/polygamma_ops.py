"""digamma and polygamma: ψ(x) = d lgamma(x)/dx and its derivatives ψ^(n).

OneFlow 0.9 has neither (its lgamma gradient functor is a TODO that asserts, `dy * digamma(x)`:
oneflow/user/kernels/math_unary_elementwise_func.h at v0.9.0); torch has `digamma` and `polygamma(n, x)`, whose
names and argument order the surface takes. They are here so that lgamma's gradient has a derivative: lgamma_grad
(dy · ψ(x)) differentiates to ψ'(x) (ops/second_order.py), ψ to ψ', ψ^(n) to ψ^(n+1), each from these ops, so
gradients of any order compose. Kernels: kernels/special.py (series and asymptotic formulas, no scipy).
"""
from oneflow_compat.kernels import special
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.elementwise_math_ops import _floating_meta
from oneflow_compat.ops.registry import OpDef, apply, register


def _polygamma_of(x, n, dy):
    return apply("multiply", [dy, apply("polygamma", [x], {"n": n})])


def _digamma_grad(op, dys):
    return [None if dys[0] is None else _polygamma_of(op.inputs[0], 1, dys[0])]


def _polygamma_grad(op, dys):
    return [None if dys[0] is None else _polygamma_of(op.inputs[0], int(op.attrs["n"]) + 1, dys[0])]


def _polygamma_meta(op):
    n = op.attrs.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError("polygamma '%s': n must be a non-negative integer, got %r" % (op.name, n))
    return _floating_meta(op)


register(OpDef("digamma", infer=_floating_meta, kernel=special.digamma, sbp=sbp_rules.unary, grad=_digamma_grad))
register(OpDef("polygamma", infer=_polygamma_meta, kernel=special.polygamma,
               kernel_attrs=lambda op: {"n": int(op.attrs["n"])}, sbp=sbp_rules.unary, grad=_polygamma_grad))
