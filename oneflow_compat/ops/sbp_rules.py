"""Generators for the SBP signatures ops declare (as data: lists of (input SBPs, output SBPs))."""
import itertools

from oneflow_compat.ir import sbp as _sbp
from oneflow_compat.ir.sbp import B, P, S


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def identity_like(op, linear=True):
    """One input, outputs shaped like it: S(i)->S(i), B->B, and P->P when the op is linear."""
    nd = len(op.inputs[0].shape)
    nout = len(op.outputs)
    sigs = [_sig([S(i)], [S(i)] * nout) for i in range(nd)]
    sigs.append(_sig([B], [B] * nout))
    if linear:
        sigs.append(_sig([P], [P] * nout))
    return sigs


def unary(op):
    return identity_like(op, linear=False)


def unary_linear(op):
    return identity_like(op, linear=True)


def broadcast_elementwise(op, partial=None):
    """n inputs broadcast together to the output shape. Splits follow output axes where the input spans the full
    axis; inputs broadcast along that axis read B. `partial`: 'all' (sum-like: every input P), 'one' (product-like:
    one input P, the rest B), or None."""
    out_shape = op.outputs[0].shape
    nd = len(out_shape)
    sigs = []
    for ax in range(nd):
        ins = []
        for x in op.inputs:
            xs = x.shape
            off = nd - len(xs)
            if ax >= off and xs[ax - off] == out_shape[ax] and out_shape[ax] > 1:
                ins.append(S(ax - off))
            else:
                ins.append(B)
        if any(s != B for s in ins):
            sigs.append(_sig(ins, [S(ax)]))
    n = len(op.inputs)
    sigs.append(_sig([B] * n, [B]))
    if partial == "all":
        sigs.append(_sig([P] * n, [P]))
    elif partial == "one":
        for k in range(n):
            sigs.append(_sig([P if j == k else B for j in range(n)], [P]))
    return sigs


def reduction(op, axes, keepdims, linear):
    """Reducing `axes`: a split reduced axis gives P; a split kept axis stays split (renumbered)."""
    nd = len(op.inputs[0].shape)
    axes = sorted(a % nd for a in axes) if axes is not None else list(range(nd))
    sigs = []
    for i in range(nd):
        if i in axes:
            if linear:
                sigs.append(_sig([S(i)], [P]))
        else:
            j = i if keepdims else i - sum(1 for a in axes if a < i)
            sigs.append(_sig([S(i)], [S(j)]))
    sigs.append(_sig([B], [B]))
    if linear:
        sigs.append(_sig([P], [P]))
    return sigs


def matmul(op, ta, tb):
    """(m,k)·(k,n) with optional transposes and batch dims: S(m)·B->S, B·S(n)->S, S(k)·S(k)->P, P·B->P, B·P->P,
    and batch splits."""
    a, b = op.inputs[0], op.inputs[1]
    nd = len(a.shape)
    m_ax, ka_ax = (nd - 1, nd - 2) if ta else (nd - 2, nd - 1)
    kb_ax, n_ax = (nd - 1, nd - 2) if tb else (nd - 2, nd - 1)
    sigs = [_sig([S(m_ax), B], [S(nd - 2)]),
            _sig([B, S(n_ax)], [S(nd - 1)]),
            _sig([S(ka_ax), S(kb_ax)], [P]),
            _sig([B, B], [B]),
            _sig([P, B], [P]),
            _sig([B, P], [P])]
    for i in range(nd - 2):
        sigs.insert(0, _sig([S(i), S(i)], [S(i)]))
    return sigs


def source(op):
    """Ops without inputs whose outputs can be produced in any layout (constants): B first."""
    nd = len(op.outputs[0].shape)
    return [_sig([], [B])] + [_sig([], [S(i)]) for i in range(nd)]


def all_broadcast(op):
    return [_sig([B] * len(op.inputs), [B] * len(op.outputs))]


def shape_only(sigs, index):
    """`sigs` plus, for every signature reading input `index` as B, the same reading it as P: an input read for
    its shape alone (the `like` of fill_like, reshape_like) holds the shape in any layout, so a partial sum needs
    no all-reduce to be read (a graph's loss seed then costs no collective)."""
    out = list(sigs)
    for ins, outs in sigs:
        if ins[index] == B:
            sig = _sig(ins[:index] + (P,) + ins[index + 1:], outs)
            if sig not in out:
                out.append(sig)
    return out


# The signatures an op has on its placement (the compiler's SBP inference and `validate` both read them).
def nd_signatures(sigs, mesh):
    """The n-D signatures on a mesh of shape `mesh` of an op declaring `sigs`: a declared signature that names n-D
    layouts already (an input pinned to a value's layout, a variable's, hints) is kept, its 1-D entries read as that
    symbol on every mesh axis; the 1-D ones are combined, one per mesh axis, in their order of preference."""
    k = len(mesh)
    given, one_d = [], []
    for sig in sigs:
        if any(_sbp.is_nd(s) for side in sig for s in side):
            given.append(tuple(tuple(s if _sbp.is_nd(s) else _sbp.nd((s,) * k, mesh) for s in side) for side in sig))
        else:
            one_d.append(sig)
    out = list(given)
    seen = set(out)
    for choice in itertools.product(one_d, repeat=k):
        sig = tuple(tuple(_sbp.nd([c[side][i] for c in choice], mesh) for i in range(len(choice[0][side])))
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
