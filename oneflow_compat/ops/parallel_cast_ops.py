"""OneFlow v0.4.0's hierarchical parallel casts (`oneflow/user/ops/hierarchical_parallel_cast_op.cpp` at v0.4.0):
identities that pin a blob's layout on its placement — one SBP per axis of the placement's hierarchy, an n-D SBP
on a mesh (`flow.hierarchical_parallel_cast`, `_api/legacy_array_api.py`).

* `hierarchical_parallel_cast` (attrs: `sbp`, the layout; `grad_mode`; `grad_sbp`): reads and makes `sbp`, so the
  boxing pass moves whatever its input holds into it. Its gradient, by `grad_mode`: "identity" — the output's
  gradient as it comes; "manual" — cast to `grad_sbp` (OneFlow builds another hierarchical_parallel_cast);
  "restore" (the default) — cast like the forward input lies (`hierarchical_parallel_cast_like`).
* `hierarchical_parallel_cast_like` (inputs: in, like): `in` laid out as `like` was produced (OneFlow: the
  `like` input's distribution hint), output the same.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.kernels import array as array_k
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register

GRAD_MODES = ("restore", "identity", "manual")


def _same_meta(op):
    return [op.inputs[0].meta]


def _cast_sbp(op):
    sbp = op.attrs["sbp"]
    return [((sbp,), (sbp,))]


def _cast_grad(op, dys):
    mode = op.attrs["grad_mode"]
    if mode == "identity":
        return [dys[0]]
    if mode == "manual":
        return [apply("hierarchical_parallel_cast", [dys[0]],
                      {"sbp": op.attrs["grad_sbp"], "grad_mode": "identity", "grad_sbp": None})]
    return [apply("hierarchical_parallel_cast_like", [dys[0], op.inputs[0]])]


register(OpDef("hierarchical_parallel_cast", infer=_same_meta, kernel=array_k.identity, sbp=_cast_sbp,
               grad=_cast_grad, rowwise=True))


def _like_sbp(op):
    """`in`, `like` and the output as `like` was produced (SBP inference runs producers first), where that layout
    is one of this op's placement; otherwise (no producer layout yet: the validator) any layout of `in` whose
    `like` is read alike."""
    like = op.inputs[1]
    held = like.op.sbp_out[like.index] if like.op.sbp_out else None
    pl = op.placement
    if held is not None and like.op.placement == pl:
        if pl.parallel_num == 1:
            held = S.B
        return [((held, held), (held,))]
    return [((s[0][0], s[0][0]), s[1]) for s in sbp_rules.unary_linear(op)]


register(OpDef("hierarchical_parallel_cast_like", infer=_same_meta, kernel=array_k.identity_like, sbp=_like_sbp,
               grad=lambda op, dys: [dys[0], None]))
