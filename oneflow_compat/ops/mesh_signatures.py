"""An op's SBP signatures on its placement: as it declares them, or on an n-D placement (a mesh) derived from its
declared 1-D ones, OneFlow's rule (the "2D SBP" page of OneFlow's parallelism chapter: "independently derive in the
respective dimensions"; v0.9.0 `Operator::GetNdSbpSignatureList`): every choice of one declared signature per mesh
axis is an n-D signature. Read by SBP inference (`passes/sbp_infer.py`) and by `tools/validate.py`, which checks
every one of them against one device."""
import itertools

from oneflow_compat.ir import sbp as S


def nd_signatures(sigs, mesh):
    """The n-D signatures on a mesh of shape `mesh` of an op declaring `sigs`: a declared signature that names n-D
    layouts already (an input pinned to a value's layout, a variable's, hints) is kept, its 1-D entries read as that
    symbol on every mesh axis; the 1-D ones are combined, one per mesh axis, in their order of preference."""
    k = len(mesh)
    given, one_d = [], []
    for sig in sigs:
        if any(S.is_nd(s) for side in sig for s in side):
            given.append(tuple(tuple(s if S.is_nd(s) else S.nd((s,) * k, mesh) for s in side) for side in sig))
        else:
            one_d.append(sig)
    out = list(given)
    seen = set(out)
    for choice in itertools.product(one_d, repeat=k):
        sig = tuple(tuple(S.nd([c[side][i] for c in choice], mesh) for i in range(len(choice[0][side])))
                    for side in (0, 1))
        if sig not in seen:
            seen.add(sig)
            out.append(sig)
    return out


def signatures(op):
    """The op's legal signatures on its placement: as declared, or derived per mesh axis on an n-D placement."""
    sigs = op.defn.sbp(op) if op.defn.sbp is not None else None
    if sigs and op.placement.is_nd:
        return nd_signatures(sigs, op.placement.hierarchy)
    return sigs
