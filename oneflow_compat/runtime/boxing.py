"""The boxing executors: each row of the transition table (`ops/transitions.py`, which plans and prices them) run on
this process's pieces, through the comm interface (`comm/process_comm.py`).

`executor(rt, attrs, meta, owned=False, over_processes=None)` is the runtime's one entry point: the function a
boxing op runs, from this process's source pieces (parallel order) to its destination pieces. The boxing op
declares `runtime_hook="boxing"`, and `hook(op, session)` builds it. `assemble` and `materialize` make a logical
value on the host (fetching a job's result, `numpy()` of a global tensor).

Every executor is hierarchical: the pieces of the devices this process holds are combined by array work (one sum,
one concatenation, slices that are views), then exactly one process-comm call moves what crosses processes, over
exactly the processes that hold or need pieces; with every piece in this process it makes no call at all. The
executor of a row calls the collective the row names and nothing else (`tests/test_boxing_bytes.py` records every
call on 2, 3 and 4 simulated ranks and holds the bytes against the row's cost).

`rt` is any object with `comm`, `machine_id`, `local_indices(placement)`, `xp(placement)` and
`to_device(array, placement)` (`runtime/runtime.Runtime`).
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import transitions as T


def comm_for(rt, move):
    """The comm a boxing between these placements runs on, and whether pieces are staged through host arrays.

    The process comm (MPI, or the simulated comm) moves host buffers: GPU pieces go down to the host and back up.
    Where both placements are on GPUs and the runtime has a device comm (NCCL: comm/nccl_comm.py, issue 22), that
    comm with `staged=False`: the executors hand it device arrays unchanged."""
    if move.src_pl.device_tag == "gpu" and move.dst_pl.device_tag == "gpu":  # (only then is NCCL looked for)
        device = getattr(rt, "device_comm", None)
        if device is not None:
            return device, False
    return rt.comm, True


class Site:
    """Where a boxing runs: the runtime, the move, the blob's logical shape and dtype, which of the placements'
    devices are here, and the processes taking part."""

    def __init__(self, rt, move, shape, np_dtype, owned=False):
        self.rt, self.move, self.shape, self.owned = rt, move, tuple(shape), owned
        self.np_dtype = np.dtype(object) if np_dtype is None else np.dtype(np_dtype)
        self.me = rt.machine_id
        self.src_idx = rt.local_indices(move.src_pl)
        self.dst_idx = rt.local_indices(move.dst_pl)
        self.xp_src, self.xp_dst = rt.xp(move.src_pl), rt.xp(move.dst_pl)
        self.ranks = sorted(set(T.owners(move.src_pl)) | set(T.owners(move.dst_pl)))
        self.comm, self.staged = comm_for(rt, move)
        self.xp_comm = np if self.staged else self.xp_dst  # what the comm's buffers are arrays of
        self.dynamic = False  # a dynamic blob: its pieces' sizes along a split axis are known only when they run

    def to_dst(self, value):
        return self.rt.to_device(value, self.move.dst_pl)

    def to_comm(self, x):
        """`x` as the comm takes it to send (read only; any layout: the comm packs strided arrays itself)."""
        return np.asarray(devices.to_host(x)) if self.staged else x

    def comm_buffer(self, x, fresh):
        """A C-contiguous host array of the blob's dtype holding `x` that the comm may overwrite (`fresh`: `x` is a
        temporary of this boxing)."""
        host = self.to_comm(x)
        if host is x and not fresh or host.dtype != self.np_dtype or not devices.is_writeable(host) \
                or not host.flags.c_contiguous:
            host = self.xp_comm.array(host, dtype=self.np_dtype, copy=True, order="C")
        return host

    @property
    def all_local(self):
        return self.ranks == [self.me]


def _host(x):
    return np.asarray(devices.to_host(x), order="C")  # (ascontiguousarray would make a 0-d array 1-d)


def _summed(pieces, owned):
    """(sum of `pieces`, whether it is a new array nothing else reads): into the first addend when it is owned."""
    if len(pieces) == 1:
        return pieces[0], owned
    out = pieces[0] if owned else pieces[0].copy()
    for p in pieces[1:]:
        out += p  # bools: logical or, as the comm sums them
    return out, True


def _joined(xp, pieces, axis):
    return pieces[0] if len(pieces) == 1 else xp.concatenate(pieces, axis=axis)


def _along(axis, start, stop, ndim):
    index = [slice(None)] * ndim
    index[axis] = slice(start, stop)
    return tuple(index)


def _split_layout(site, placement, axis):
    """(balanced (start, stop) per device along `axis`, merged rows per process, first row of this process)."""
    n = placement.parallel_num
    ranges = [T.region(site.shape, S.S(axis), n, i)[axis] for i in range(n)]
    sizes = [b - a for a, b in ranges]
    merged = T.merged_sizes(placement, sizes)
    mine = [i for i, (m, _) in enumerate(placement.pairs) if m == site.me]
    first = ranges[mine[0]][0] if mine else 0
    return ranges, merged, first


# --- same placement ----------------------------------------------------------------------------------------------
def _identity(site):
    return lambda *pieces: tuple(pieces)


def _all_reduce(site):
    """P -> B: one sum of this process's addends, one all-reduce over the placement's processes; the devices here
    share the result."""
    procs = T.owners(site.move.src_pl)
    n, owned, comm = len(site.dst_idx), site.owned, site.comm

    if len(procs) == 1:
        def all_reduce(*pieces):
            total, _ = _summed(pieces, owned)
            return (total,) * n
        return all_reduce

    def all_reduce(*pieces):
        total, fresh = _summed(pieces, owned)
        if site.staged and not fresh:
            host = site.to_comm(total)
            if host.dtype == site.np_dtype:  # only read: the sum comes out as a new array, with no copy of the
                return (site.to_dst(comm.allreduce(host, procs)),) * n  # addend first (comm.allreduce)
        buf = site.comm_buffer(total, fresh)
        comm.allreduce_(buf, procs)
        value = site.to_dst(buf)
        return (value,) * n
    return all_reduce


def _reduce_scatter(site):
    """P -> S(a): one sum here, one reduce-scatter of this process's rows; each device's rows are a view."""
    m = site.move
    axis = m.dst.axis
    ranges, merged, first = _split_layout(site, m.dst_pl, axis)
    procs = T.owners(m.src_pl)
    ndim, idx, owned, comm = len(site.shape), site.dst_idx, site.owned, site.comm
    cuts = [_along(axis, ranges[d][0] - first, ranges[d][1] - first, ndim) for d in idx]

    def reduce_scatter(*pieces):
        total, _ = _summed(pieces, owned)
        if len(procs) > 1:
            total = site.to_dst(comm.reduce_scatter(site.to_comm(total), procs, axis=axis, sizes=merged))
        return tuple(total[c] for c in cuts)
    return reduce_scatter


def _all_gather(site):
    """S(a) -> B: this process's pieces joined, one all-gather(v) of them; the devices here share the whole."""
    m = site.move
    axis = m.src.axis
    _, merged, _ = _split_layout(site, m.src_pl, axis)
    procs = T.owners(m.src_pl)
    n, xp, comm = len(site.dst_idx), site.xp_src, site.comm

    def all_gather(*pieces):
        whole = _joined(xp, pieces, axis)
        if len(procs) > 1:
            # a dynamic blob's pieces are shorter than the static cuts: the comm exchanges the sizes first
            whole = site.to_dst(comm.allgatherv(site.to_comm(whole), procs, axis=axis,
                                                sizes=None if site.dynamic else merged))
        return (whole,) * n
    return all_gather


def _local_slice(site):
    """B -> S: each device cuts its piece from its own full copy (no communication)."""
    dst, n, idx = site.move.dst, site.move.p_dst, site.dst_idx
    return lambda *pieces: tuple(p[S.local_slices(p.shape, dst, i, n)] for p, i in zip(pieces, idx))


def _all_to_all(site):
    """S(i) -> S(j): this process's rows joined; one all-to-all(v) sends every other process the columns of them it
    holds next; the received row blocks, joined, are this process's columns, and each device's are a view."""
    m = site.move
    i, j = m.src.axis, m.dst.axis
    _, rows, _ = _split_layout(site, m.src_pl, i)
    col_ranges, cols, first = _split_layout(site, m.dst_pl, j)
    procs = T.owners(m.src_pl)
    ndim, idx, xp, comm = len(site.shape), site.dst_idx, site.xp_src, site.comm
    cuts = [_along(j, col_ranges[d][0] - first, col_ranges[d][1] - first, ndim) for d in idx]
    offsets = np.concatenate([[0], np.cumsum(cols)]).tolist()
    sends = [_along(j, offsets[q], offsets[q + 1], ndim) for q in range(len(procs))]

    def all_to_all(*pieces):
        mine = _joined(xp, pieces, i)
        if len(procs) > 1:  # the columns go out as strided views; the rows arrive joined
            mine = site.to_dst(comm.alltoallv([site.to_comm(mine[c]) for c in sends], procs, axis=i,
                                              recv_sizes=rows, concat=True))
        return tuple(mine[c] for c in cuts)
    return all_to_all


def _b2p_zeros(site):
    """B -> P: device 0 keeps its copy as the addend, the others hold zeros (no communication)."""
    idx, xp = site.dst_idx, site.xp_dst
    return lambda *pieces: tuple(p if i == 0 else xp.zeros_like(p) for p, i in zip(pieces, idx))


def _s2p_zeros(site):
    """S -> P: each device's addend is zeros with its slice in place (no communication)."""
    m, idx, xp, shape = site.move, site.dst_idx, site.xp_dst, site.shape
    cuts = [S.local_slices(shape, m.src, d, m.p_src) for d in idx]

    def s2p(*pieces):
        out = []
        for p, c in zip(pieces, cuts):
            z = xp.zeros(shape, dtype=p.dtype)
            z[c] = p
            out.append(z)
        return tuple(out)
    return s2p


# --- between placements: one device <-> several ------------------------------------------------------------------
def _reduce(site):
    """P on several devices -> one device: one sum here, one reduce to the destination's process."""
    m = site.move
    root, procs = T.owners(m.dst_pl)[0], site.ranks
    holds = bool(site.dst_idx)
    owned, comm, shape, dtype = site.owned, site.comm, site.shape, site.np_dtype

    def reduce(*pieces):
        if pieces:
            total, fresh = _summed(pieces, owned)
        else:  # the root holds no addend
            total, fresh = site.xp_comm.zeros(shape, dtype), True
        if len(procs) > 1:  # the sum lands in a buffer of the root's; the others' addends are only read
            host = site.to_comm(total)
            if site.me == root and site.staged and not fresh and host.dtype == dtype:
                total = comm.reduce(host, root, procs)  # a new array: the addend is not copied first
            else:
                total = site.comm_buffer(total, fresh) if site.me == root else host
                comm.reduce_(total, root, procs)
        return (site.to_dst(total),) if holds else ()
    return reduce


def _broadcast(site):
    """One device -> B on several: one broadcast from the source's process; the devices here share the copy."""
    m = site.move
    root, procs = T.owners(m.src_pl)[0], site.ranks
    n, comm, shape, dtype = len(site.dst_idx), site.comm, site.shape, site.np_dtype

    def broadcast(*pieces):
        if len(procs) > 1:
            here = shape
            if site.dynamic:  # the source's piece may be shorter than the static shape: its shape goes first
                dims = np.asarray(pieces[0].shape if pieces else shape, np.int64)
                site.rt.comm.bcast_(dims, root, procs)  # host ints: the process comm, whatever comm moves the data
                here = tuple(int(d) for d in dims)
            buf = site.to_comm(pieces[0]) if pieces else site.xp_comm.empty(here, dtype)
            if pieces and site.staged and not site.owned and buf.dtype == dtype:
                # the root's output a copy of its own, as every other member's is (made from the chunks it writes
                # for the others: no second pass over its piece; a to_global's output must not share the input's)
                value = comm.bcast(buf, root, procs)
            else:
                comm.bcast_(buf, root, procs)
                value = pieces[0] if pieces else buf
        else:
            value = pieces[0]
        if not n:
            return ()
        value = site.to_dst(value)
        return (value,) * n
    return broadcast


def _gather(site):
    """S on several devices -> one device: this process's pieces joined, one gather(v) to the destination's."""
    m = site.move
    axis = m.src.axis
    root, procs = T.owners(m.dst_pl)[0], site.ranks
    _, merged, _ = _split_layout(site, m.src_pl, axis)
    held = dict(zip(T.owners(m.src_pl), merged))
    # a dynamic blob's pieces (argwhere's, unique's) are shorter than the static cuts: the comm gathers the sizes
    sizes = None if site.dynamic else [held.get(r, 0) for r in procs]
    holds, xp, comm, shape, dtype = bool(site.dst_idx), site.xp_src, site.comm, site.shape, site.np_dtype
    empty = shape[:axis] + (0,) + shape[axis + 1:]

    def gather(*pieces):
        mine = _joined(xp, pieces, axis) if pieces else site.xp_comm.empty(empty, dtype)
        if len(procs) > 1:
            mine = comm.gatherv(site.to_comm(mine), root, procs, axis=axis, sizes=sizes)
        return (site.to_dst(mine),) if holds else ()
    return gather


# --- between placements: point to point ---------------------------------------------------------------------------
def _point_to_point(site, transfers, have):
    """The transfers of this process: (local [(k, t)], outgoing [(peer, k, t)], incoming [(peer, k, t)]), `k` the
    transfer's index; `have[s]` is the region source device s holds."""
    m, me = site.move, site.me
    local, outgoing, incoming = [], [], []
    for k, t in enumerate(transfers):
        a, b = m.src_pl.pairs[t.src][0], m.dst_pl.pairs[t.dst][0]
        if a == me and b == me:
            local.append((k, t))
        elif a == me:
            outgoing.append((b, k, t))
        elif b == me:
            incoming.append((a, k, t))
    return local, outgoing, incoming


def _exchanged(site, transfers, have, pieces, local, outgoing, incoming):
    """{transfer index: its part, on the destination's device}: local parts are views of the pieces, the others
    arrive in one exchange."""
    pos = {d: k for k, d in enumerate(site.src_idx)}
    parts = {k: site.to_dst(pieces[pos[t.src]][T.relative(t.region, have[t.src])]) for k, t in local}
    if outgoing or incoming:
        sends = [(peer, site.to_comm(pieces[pos[t.src]][T.relative(t.region, have[t.src])]))
                 for peer, _, t in outgoing]
        recvs = [(peer, site.xp_comm.empty(tuple(b - a for a, b in t.region), site.np_dtype))
                 for peer, _, t in incoming]
        got = site.comm.exchange(sends, recvs)
        for (_, k, _), buf in zip(incoming, got):
            parts[k] = site.to_dst(buf)
    return parts


def _slice_boxing(site, src=None):
    """Any other change of placement: each destination piece is made of the overlapping slices of the source pieces
    (`transitions.slice_transfers`), the ones between processes sent point to point in one exchange (P: one
    destination device gets the value, the others zeros)."""
    m, shape = site.move, site.shape
    src = m.src if src is None else src
    transfers = T.slice_transfers(m, shape, src)
    have = [T.region(shape, src, m.p_src, s) for s in range(m.p_src)]
    holder = T.partial_holder(m) if m.dst == S.P else None
    need = {d: (T.region(shape, S.B, 1, 0) if m.dst == S.P else T.region(shape, m.dst, m.p_dst, d))
            for d in site.dst_idx}
    by_dst = {d: [k for k, t in enumerate(transfers) if t.dst == d] for d in site.dst_idx}
    local, outgoing, incoming = _point_to_point(site, transfers, have)
    xp, dtype = site.xp_dst, site.np_dtype

    def slice_boxing(*pieces):
        parts = _exchanged(site, transfers, have, pieces, local, outgoing, incoming)
        out = []
        for d in site.dst_idx:
            if m.dst == S.P and d != holder:
                out.append(xp.zeros(shape, dtype))
                continue
            ks, r = by_dst[d], need[d]
            if len(ks) == 1 and transfers[ks[0]].region == r:
                out.append(parts[ks[0]])  # one source slice is the whole piece: no copy
                continue
            piece = xp.empty(tuple(b - a for a, b in r), dtype)
            for k in ks:
                piece[T.relative(transfers[k].region, r)] = parts[k]
            out.append(piece)
        return tuple(out)
    return slice_boxing


def _slice_boxing_add(site):
    """P -> P elsewhere: each addend goes whole to one destination device (`transitions.addend_transfers`), which
    sums what it gets (zeros where nothing comes)."""
    m, shape = site.move, site.shape
    transfers = T.addend_transfers(m, shape)
    have = [T.region(shape, S.B, 1, 0)] * m.p_src
    by_dst = {d: [k for k, t in enumerate(transfers) if t.dst == d] for d in site.dst_idx}
    local, outgoing, incoming = _point_to_point(site, transfers, have)
    fresh = {k for _, k, _ in incoming} | ({k for k, _ in local} if site.owned else set())
    xp, dtype = site.xp_dst, site.np_dtype

    def slice_boxing_add(*pieces):
        parts = _exchanged(site, transfers, have, pieces, local, outgoing, incoming)
        out = []
        for d in site.dst_idx:
            ks = by_dst[d]
            if not ks:
                out.append(xp.zeros(shape, dtype))
                continue
            total = parts[ks[0]]
            if len(ks) > 1:
                total = total if ks[0] in fresh else total.copy()
                for k in ks[1:]:
                    total += parts[k]
            out.append(total)
        return tuple(out)
    return slice_boxing_add


def _partial_to_placement(site):
    """P on several devices -> S or B elsewhere: a reduce-scatter over the source processes into S(a) (a: the
    destination's split axis, or 0), then slice-boxing of those rows. A 0-d blob goes as one element."""
    m = site.move
    shape = site.shape if site.shape else (1,)
    axis = T.stage_axis(m)
    first = T.Move(m.src_pl, S.P, m.src_pl, S.S(axis))
    second = T.Move(m.src_pl, S.S(axis), m.dst_pl, m.dst)
    stage1 = _built(_reduce_scatter, Site(site.rt, first, shape, site.np_dtype, site.owned))
    stage2 = _built(_slice_boxing, Site(site.rt, second, shape, site.np_dtype, True))
    scalar = not site.shape

    def partial_to_placement(*pieces):
        if scalar:
            pieces = [p.reshape(1) for p in pieces]
        out = stage2(*stage1(*pieces))
        return tuple(o.reshape(()) for o in out) if scalar else out
    return partial_to_placement


# --- the named fallback: through the logical value ----------------------------------------------------------------
def _via_logical(site):
    """Moves between the mirrored view and another layout, or of mirrored blobs between placements: the logical
    value is made (one collective over both placements' processes) and cut. Only a mirrored blob on ONE device
    has a logical value (its piece); elsewhere the move is refused here, when the plan is built."""
    m = site.move
    for where, sbp, n in (("source", m.src, m.p_src), ("destination", m.dst, m.p_dst)):
        if sbp == S.M and n > 1:
            raise ValueError("boxing %r: the mirrored %s on %d devices holds independent local tensors with no "
                             "logical value to move: only a mirrored blob on one device changes layout or placement "
                             "(cast it to the consistent view first)" % (m, where, n))
    idx, owned, xp_src, xp_dst = site.dst_idx, site.owned, site.xp_src, site.xp_dst

    if site.all_local:
        def via_logical(*pieces):
            value = site.to_dst(T.logical_from_pieces(xp_src, pieces, m.src, owned))
            return tuple(T.pieces_from_logical(xp_dst, value, m.dst, m.p_dst, idx))
        return via_logical

    def via_logical_across(*pieces):
        # (on host arrays, through the process comm, whatever comm the site's collectives use)
        value = materialize(site.rt.comm, list(pieces), m.src_pl, m.src, site.shape, site.np_dtype, site.ranks,
                            owned, dynamic=site.dynamic)
        if not idx:
            return ()
        return tuple(T.pieces_from_logical(xp_dst, site.to_dst(value), m.dst, m.p_dst, idx))
    return via_logical_across


# --- the rows' executors, by the row's name (the n-D rows' are added by `runtime/mesh_boxing.py`) -----------------
EXECUTORS = {
    "identity": _identity,
    "via-logical": _via_logical,
    "all-reduce": _all_reduce,
    "reduce-scatter": _reduce_scatter,
    "all-gather": _all_gather,
    "local-slice": _local_slice,
    "all-to-all": _all_to_all,
    "b2p-zeros": _b2p_zeros,
    "s2p-zeros": _s2p_zeros,
    "reduce": _reduce,
    "broadcast": _broadcast,
    "gather": _gather,
    "reduce-scatter+slice-boxing": _partial_to_placement,
    "slice-boxing-add": _slice_boxing_add,
    "slice-boxing": _slice_boxing,
}


# rows whose executors cut pieces at the balanced offsets of the blob's static shape; a dynamic blob (a mirrored
# feed's, whose pieces' sizes are known only when they run) goes through its logical value there instead
_STATIC_CUTS = {"reduce-scatter", "all-to-all", "s2p-zeros", "slice-boxing", "reduce-scatter+slice-boxing"}


def _built(build, site):
    if site.me not in site.ranks:  # this process holds no piece of either side
        return lambda *pieces: ()
    return build(site)


def executor(rt, attrs, meta, owned=False, over_processes=None):
    """The function a boxing op runs: this process's source pieces (parallel order) -> its destination pieces.

    `owned`: the source pieces are temporaries nothing else reads. `over_processes=False` asserts that every piece
    lives in this process; the executors are hierarchical and need no other choice (True, or None, runs them as
    they are: with every piece here, no process-comm call is made)."""
    move = T.Move.of(attrs)
    t = T.transition_of(move)
    site = Site(rt, move, meta.shape, meta.dtype.np, owned)
    site.dynamic = bool(getattr(meta, "is_dynamic", False))
    if over_processes is False and not site.all_local:
        raise ValueError("boxing %r: pieces live in processes %s, not only in this one (%d)"
                         % (move, site.ranks, rt.machine_id))
    build = EXECUTORS[t.collective]
    if getattr(meta, "is_dynamic", False) and t.collective in _STATIC_CUTS:
        build = _via_logical
    return _built(build, site)


def hook(op, session):
    """The boxing op's function (`runtime_hook="boxing"`): its input pieces may be overwritten when the op owns them
    (`system_ops.input_owned`)."""
    from oneflow_compat.ops.system_ops import input_owned

    return executor(session.runtime, op.attrs, op.inputs[0].meta, owned=input_owned(op, 0))


# --- logical values on the host ------------------------------------------------------------------------------------
def materialize(comm, local, placement, sbp, shape, np_dtype, ranks, owned=False, dynamic=False):
    """The full logical value (host array) on every member of `ranks` (sorted world ranks, a superset of the
    placement's machines): this process's pieces (`local`, in parallel order, empty where it owns none) are
    combined, then one collective over `ranks` — an all-reduce of the partial sums, an all-gather of the splits,
    or a broadcast from the first owner. `dynamic`: the pieces may be shorter than the static shape's cuts (a
    dynamic blob: argwhere's, unique's), so their sizes travel first."""
    n = placement.parallel_num
    if sbp == S.P:
        if local:  # the collective works in place: on a copy unless the pieces are owned
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
        sizes = [b - a for a, b in (T.region(tuple(shape), sbp, n, i)[ax] for i in range(n))]
        per_machine = dict(zip(T.owners(placement), T.merged_sizes(placement, sizes)))
        return comm.allgatherv(mine, ranks, axis=ax,
                               sizes=None if dynamic else [per_machine.get(r, 0) for r in ranks]) \
            if len(ranks) > 1 else mine
    # B (or a single device): the first owner has the value
    if dynamic and len(ranks) > 1:  # the first owner's piece may be shorter than the static shape
        dims = np.asarray(_host(local[0]).shape if local else shape, np.int64)
        comm.bcast_(dims, T.owners(placement)[0], ranks)
        shape = tuple(int(d) for d in dims)
    buf = _host(local[0]).copy() if local else np.empty(shape, np_dtype)
    if len(ranks) > 1:
        comm.bcast_(buf, T.owners(placement)[0], ranks)
    return buf


def broadcast_on_mesh(rt, local, placement, sbp, shape, np_dtype):
    """This process's pieces (parallel order) of an n-D layout made whole on every device of the mesh (its
    steps over the mesh's sub-groups), as (pieces, the flat placement, B): what `materialize` takes."""
    from oneflow_compat.ir.graph import TensorMeta
    from oneflow_compat.ir import dtypes

    dst = S.nd((S.B,) * len(sbp.sbps), sbp.mesh)
    meta = TensorMeta(tuple(shape), dtypes.any_from_numpy(np_dtype) if np_dtype is not None else dtypes.float32)
    fn = executor(rt, {"src_placement": placement, "src_sbp": sbp, "dst_placement": placement, "dst_sbp": dst},
                  meta)
    return list(fn(*local)), placement.flat(), S.B


def assemble(rt, shards, shape, np_dtype, placement, sbp):
    """A fresh host array with the full logical value (`shards`: device index -> piece, for this process's
    devices); across processes every rank gets it."""
    if S.is_nd(sbp):
        idx = sorted(shards)
        pieces, placement, sbp = broadcast_on_mesh(rt, [shards[i] for i in idx], placement, sbp, shape, np_dtype)
        shards = dict(zip(idx, pieces))
    if rt.comm.size > 1:
        local = [shards[i] for i in sorted(shards)]
        value = materialize(rt.comm, local, placement, sbp, shape, np_dtype, list(range(rt.comm.size)))
        return np.array(value, copy=True)
    host = [np.asarray(devices.to_host(shards[i])) for i in range(placement.parallel_num)]
    value = T.logical_from_pieces(np, host, sbp)
    # a piece itself may be a variable's storage, which later steps update in place
    return np.array(value, copy=True) if any(value is h for h in host) else value
