"""Pieces that live in other processes (MPI): boxing, fetching and feeding across ranks.

Rank r owns the devices of machine r, and a placement's devices are in machine order, so each rank's pieces of a
blob are a contiguous run of its parallel order. A transition is hierarchical: the pieces of one rank are combined
by array work, and the ranks exchange one buffer per collective (`comm/`): partial sums meet in an all-reduce,
splits in an all-gather, broadcast values travel from their first owner. Every rank of the job builds the same
plan, so the members of each collective issue it in the same order.
"""
import numpy as np

from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import transitions as boxing_impl
from oneflow_compat.backend import devices


def all_local(rt, placement):
    return all(m == rt.machine_id for m, _ in placement.pairs)


def owners(placement):
    return sorted({m for m, _ in placement.pairs})


def _host(x):
    return np.ascontiguousarray(devices.to_host(x))


def materialize(rt, local, placement, sbp, shape, np_dtype, ranks, owned=False):
    """The full logical value on every member of `ranks` (sorted world ranks, a superset of the owners).

    `local` lists this rank's pieces in parallel order (empty on ranks that own none); `owned`: the pieces are
    temporaries nothing else reads, so partial sums may be reduced in place instead of in a copy."""
    comm = rt.comm
    n = placement.parallel_num
    if sbp == S.P:
        if local:  # this rank's addend (the collective works in place: a copy unless owned) + other local pieces
            first = _host(local[0])
            acc = first if owned and first.dtype == np_dtype and first.flags.c_contiguous else \
                np.array(first, dtype=np_dtype, copy=True)
            for p in local[1:]:
                acc += _host(p)
        else:
            acc = np.zeros(shape, np_dtype)
        return comm.allreduce_(acc, ranks) if len(ranks) > 1 else acc
    if S.is_split(sbp) and n > 1:
        ax = sbp.axis
        if local:
            mine = np.concatenate([_host(p) for p in local], axis=ax) if len(local) > 1 else _host(local[0])
        else:
            empty = list(shape)
            empty[ax] = 0
            mine = np.zeros(empty, np_dtype)
        ranges = S.balanced_ranges(shape[ax], n)
        sizes = []
        for r in ranks:
            idx = [i for i, (m, _) in enumerate(placement.pairs) if m == r]
            sizes.append(sum(ranges[i][1] - ranges[i][0] for i in idx))
        return comm.allgatherv(mine, ranks, axis=ax, sizes=sizes) if len(ranks) > 1 else mine
    # B (or a single device): the first owner has the value
    root = owners(placement)[0]
    buf = _host(local[0]).copy() if local else np.empty(shape, np_dtype)
    if len(ranks) > 1:
        comm.bcast_(buf, root, ranks)
    return buf


def make_boxing(rt, attrs, meta, owned=False):
    src_pl, src, dst_pl, dst = attrs["src_placement"], attrs["src_sbp"], attrs["dst_placement"], attrs["dst_sbp"]
    ranks = sorted(set(owners(src_pl)) | set(owners(dst_pl)))
    me = rt.machine_id
    if me not in ranks:
        return lambda *pieces: ()
    shape, np_dtype = meta.shape, meta.dtype.np
    dst_local = rt.local_indices(dst_pl)
    n_dst = dst_pl.parallel_num
    xp_dst = rt.xp(dst_pl)
    same = src_pl.pairs == dst_pl.pairs
    if same and src == dst and S.is_split(src):
        return lambda *pieces: tuple(pieces)
    if same and src == S.B and S.is_split(dst):
        return lambda *pieces: tuple(p[S.local_slices(shape, dst, i, n_dst)] for p, i in zip(pieces, dst_local))

    def box(*pieces):
        value = materialize(rt, list(pieces), src_pl, src, shape, np_dtype, ranks, owned)
        if not dst_local:
            return ()
        value = rt.to_device(value, dst_pl)
        return tuple(boxing_impl.pieces_from_logical(xp_dst, value, dst, n_dst, dst_local))

    return box


def assemble(rt, shards, shape, np_dtype, placement, sbp):
    local = [shards[i] for i in sorted(shards)]
    return materialize(rt, local, placement, sbp, shape, np_dtype, list(range(rt.comm.size)))


def gather_mirrored(rt, local, placement):
    """Every device's mirrored piece, in parallel order, on every rank (shapes may differ per device)."""
    comm = rt.comm
    metas = comm.allgather_object([(p.shape, p.dtype.str) for p in local])
    out = []
    for r, per_rank in enumerate(metas):
        for k, (shape, dt) in enumerate(per_rank):
            buf = np.ascontiguousarray(local[k]) if r == comm.rank else np.empty(shape, np.dtype(dt))
            comm.bcast_(buf, r, list(range(comm.size)))
            out.append(buf)
    return out


def feed_from_rank0(rt, value):
    """A consistent feed has one source of truth: rank 0's array, broadcast to every rank."""
    comm = rt.comm
    if comm.size == 1:
        return value
    meta = comm.bcast_object((value.shape, value.dtype.str) if comm.rank == 0 else None, root=0)
    buf = np.ascontiguousarray(value) if comm.rank == 0 else np.empty(meta[0], np.dtype(meta[1]))
    comm.bcast_(buf, 0, list(range(comm.size)))
    return buf
