"""Executes boxing: from the pieces of a blob on its producer's devices to the pieces its consumer reads.

Every transition of legacy-api.md §2.7 is one function of (src placement, src SBP, dst placement, dst SBP). Within
one process all pieces are at hand and each collective is direct array work; across processes the same
transitions go through the process comm (`runtime/distributed.py`).
"""
from oneflow_compat.ir import sbp as S


def collective_name(src_pl, src, dst_pl, dst):
    if src_pl.pairs == dst_pl.pairs and src_pl.device_tag == dst_pl.device_tag:
        if src == S.P and dst == S.B:
            return "all-reduce"
        if src == S.P and S.is_split(dst):
            return "reduce-scatter"
        if S.is_split(src) and dst == S.B:
            return "all-gather"
        if src == S.B and S.is_split(dst):
            return "local-slice"
        if S.is_split(src) and S.is_split(dst):
            return "all-to-all"
        if src == S.B and dst == S.P:
            return "b2p-zeros"
        if src == S.M or dst == S.M:
            return "view-cast"
        return "copy"
    if dst_pl.parallel_num == 1 and src == S.P:
        return "reduce"
    if src_pl.parallel_num == 1 and dst_pl.parallel_num > 1 and dst == S.B:
        return "broadcast"
    if src_pl.parallel_num > 1 and dst_pl.parallel_num == 1 and S.is_split(src):
        return "gather"
    return "slice-boxing"


def logical_from_pieces(xp, pieces, sbp):
    if len(pieces) == 1 or sbp == S.B:
        return pieces[0]
    if sbp == S.P:
        out = pieces[0].copy()
        for p in pieces[1:]:
            out += p
        return out
    if S.is_split(sbp):
        return xp.concatenate(pieces, axis=sbp.axis)
    raise ValueError("no logical value for sbp %r" % (sbp,))


def pieces_from_logical(xp, value, sbp, n, indices):
    if n == 1 or sbp == S.B:
        return [value for _ in indices]
    if sbp == S.P:
        return [value if i == 0 else xp.zeros_like(value) for i in indices]
    if S.is_split(sbp):
        return [value[S.local_slices(value.shape, sbp, i, n)] for i in indices]
    raise ValueError("no pieces for sbp %r" % (sbp,))


def make_local(attrs, xp_src, xp_dst, to_dst, owned=False):
    """A boxing function for when every src and dst piece is in this process: fn(*src_pieces) -> dst pieces.
    `owned`: the src pieces are temporaries nothing else reads (partial sums may accumulate into the first)."""
    src, dst = attrs["src_sbp"], attrs["dst_sbp"]
    src_pl, dst_pl = attrs["src_placement"], attrs["dst_placement"]
    n_dst = dst_pl.parallel_num
    idx = list(range(n_dst))
    same = src_pl.pairs == dst_pl.pairs and src_pl.device_tag == dst_pl.device_tag
    if same and src == S.P and dst == S.B:
        def all_reduce(*pieces):
            if owned:
                total = pieces[0]
                for p in pieces[1:]:
                    total += p
            else:
                total = logical_from_pieces(xp_src, pieces, S.P)
            return tuple(total for _ in idx)
        return all_reduce
    if same and S.is_split(src) and S.is_split(dst) and src.axis == dst.axis:
        return lambda *pieces: tuple(pieces)

    def generic(*pieces):
        value = to_dst(logical_from_pieces(xp_src, pieces, src))
        return tuple(pieces_from_logical(xp_dst, value, dst, n_dst, idx))

    return generic
