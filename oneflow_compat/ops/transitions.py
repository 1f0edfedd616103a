"""The transition table: for every way a blob can change (placement, SBP), what it costs, which collective it is and
how it runs — the one place boxing is described (legacy-api.md §2.7, design.md §4).

A row of `TABLE` is a `Transition`: the moves it covers, the bytes a call moves (the SBP inference's cost model
and `explain`), the collective's name (the boxing ops' attrs, `explain`, implicit-boxing messages), and its
executors: `in_process` when every piece of both sides lives in this process (each collective is direct array
work), `over_mpi` when pieces live in several processes (hierarchical: this process's pieces are combined by array
work, then exactly one process-comm call per collective, issued in the same plan order by every member), and
`over_nccl` for GPU buffers across processes (none yet: GPU pieces cross processes through the host, over MPI).

Most executors go through the logical value: the source pieces are combined by their SBP (`B` the first copy,
`P` the sum, `S` the concatenation; across processes one all-reduce, all-gather or broadcast) and the
destination pieces cut from it (`pieces_from_logical`). Rows with a cheaper path say so: the same split stays
as it is, `B -> S` slices each device's own copy, `B -> P` keeps device 0's copy and zeros the rest (no
communication), and a partial sum the boxing owns is reduced in place. Assembling a job's result on the host is
the first half alone (`assemble`).

The first row that applies to a move is its transition; the boxing pass inserts a boxing op for every move whose
transition is not `identity`.
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import sbp as S


class Move:
    """A blob going from (src placement, src SBP) to (dst placement, dst SBP)."""

    __slots__ = ("src_pl", "src", "dst_pl", "dst", "same", "p_src", "p_dst")

    def __init__(self, src_pl, src, dst_pl, dst):
        self.src_pl, self.src, self.dst_pl, self.dst = src_pl, src, dst_pl, dst
        self.same = src_pl == dst_pl  # the same devices with the same device tag
        self.p_src, self.p_dst = src_pl.parallel_num, dst_pl.parallel_num

    @classmethod
    def of(cls, attrs):
        """The move a boxing op performs, from its attrs."""
        return cls(attrs["src_placement"], attrs["src_sbp"], attrs["dst_placement"], attrs["dst_sbp"])


class Transition:
    __slots__ = ("collective", "applies", "cost", "in_process", "over_mpi", "over_nccl")

    def __init__(self, collective, applies, cost, in_process, over_mpi, over_nccl=None):
        self.collective = collective  # the name `explain` shows
        self.applies = applies  # Move -> bool
        self.cost = cost  # (Move, bytes of the logical blob) -> bytes a call moves
        self.in_process = in_process  # Site -> fn(*src pieces) -> dst pieces, every piece in this process
        self.over_mpi = over_mpi  # Site -> fn(*this process's src pieces) -> this process's dst pieces
        self.over_nccl = over_nccl  # the same for GPU pieces across processes

    def __repr__(self):
        return "Transition(%s)" % self.collective


# --- costs: bytes per call for a logical blob of `size` bytes ---------------------------------------------------
def _free(m, size):
    return 0.0


def _ring(factor):
    """What each device sends in a ring collective over the p devices: factor * |T| * (p - 1) / p."""
    def cost(m, size):
        return factor * size * (m.p_src - 1) / m.p_src
    return cost


def _whole(m, size):
    return float(size)


def _between_placements(m, size):
    # every destination piece is copied once; partial sums travel from every source device
    return float(size) * (m.p_src if m.src == S.P else 1)


# --- the two halves of going through the logical value ----------------------------------------------------------
def logical_from_pieces(xp, pieces, sbp, owned=False):
    """The logical value of all the pieces of a blob. `owned`: the pieces are temporaries nothing else reads, so a
    partial sum may accumulate into the first."""
    if len(pieces) == 1 or sbp == S.B:
        return pieces[0]
    if sbp == S.P:
        out = pieces[0] if owned else pieces[0].copy()
        for p in pieces[1:]:
            out += p
        return out
    if S.is_split(sbp):
        return xp.concatenate(pieces, axis=sbp.axis)
    raise ValueError("no logical value for sbp %r" % (sbp,))


def pieces_from_logical(xp, value, sbp, n, indices):
    """The pieces devices `indices` of an n-device placement hold of the logical `value` under `sbp`."""
    if n == 1 or sbp == S.B:
        return [value for _ in indices]
    if sbp == S.P:
        return [value if i == 0 else xp.zeros_like(value) for i in indices]
    if S.is_split(sbp):
        return [value[S.local_slices(value.shape, sbp, i, n)] for i in indices]
    raise ValueError("no pieces for sbp %r" % (sbp,))


def _host(x):
    return np.asarray(devices.to_host(x), order="C")  # (ascontiguousarray would make a 0-d array 1-d)


def materialize(comm, local, placement, sbp, shape, np_dtype, ranks, owned=False):
    """The full logical value (host array) on every member of `ranks` (sorted world ranks, a superset of the
    placement's machines): this process's pieces (`local`, in parallel order, empty where it owns none) are
    combined, then one collective over `ranks` — an all-reduce of the partial sums, an all-gather of the splits,
    or a broadcast from the first owner."""
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
        ranges = S.balanced_ranges(shape[ax], n)
        sizes = [sum(ranges[i][1] - ranges[i][0] for i, (m, _) in enumerate(placement.pairs) if m == r)
                 for r in ranks]
        return comm.allgatherv(mine, ranks, axis=ax, sizes=sizes) if len(ranks) > 1 else mine
    # B (or a single device): the first owner has the value
    buf = _host(local[0]).copy() if local else np.empty(shape, np_dtype)
    if len(ranks) > 1:
        comm.bcast_(buf, owners(placement)[0], ranks)
    return buf


# --- executors ----------------------------------------------------------------------------------------------------
def owners(placement):
    """The machines (= world ranks) holding devices of `placement`, ascending."""
    return sorted({m for m, _ in placement.pairs})


class Site:
    """Where a boxing runs: the runtime (any object with `comm`, `machine_id`, `local_indices(placement)`,
    `xp(placement)` and `to_device(array, placement)`), the move, and the blob's logical shape and dtype."""

    def __init__(self, rt, move, shape, np_dtype, owned=False):
        self.rt, self.move, self.shape, self.np_dtype, self.owned = rt, move, tuple(shape), np_dtype, owned
        self.dst_local = rt.local_indices(move.dst_pl)
        self.xp_src, self.xp_dst = rt.xp(move.src_pl), rt.xp(move.dst_pl)
        self.ranks = sorted(set(owners(move.src_pl)) | set(owners(move.dst_pl)))

    def to_dst(self, value):
        return self.rt.to_device(value, self.move.dst_pl)

    @property
    def all_local(self):
        return self.ranks == [self.rt.machine_id]


def _identity(site):
    return lambda *pieces: tuple(pieces)


def _own_slice(site):
    """B -> S: each device cuts its piece from its own full copy (no communication)."""
    dst, n, idx = site.move.dst, site.move.p_dst, site.dst_local
    return lambda *pieces: tuple(p[S.local_slices(p.shape, dst, i, n)] for p, i in zip(pieces, idx))


def _keep_first(site):
    """B -> P: device 0 keeps its copy as the addend, the others hold zeros (no communication)."""
    idx = site.dst_local
    return lambda *pieces: tuple(p if i == 0 else site.xp_dst.zeros_like(p) for p, i in zip(pieces, idx))


def _sum_in_process(site):
    """P -> B in one process: one sum (into the first addend when the boxing owns it), shared by every device."""
    idx, owned, xp = site.dst_local, site.owned, site.xp_src

    def all_reduce(*pieces):
        total = logical_from_pieces(xp, pieces, S.P, owned)
        return tuple(total for _ in idx)

    return all_reduce


# --- pieces that are one array already ---------------------------------------------------------------------------
def _address_reader():
    """A function giving a numpy array's data address. Read straight from the array object — CPython's address of
    it plus the offset of the data pointer in numpy's PyArrayObject, which its C API fixes — it costs a tenth of
    `__array_interface__`; checked against that once, and that is used where they differ."""
    import ctypes

    offset = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)  # PyObject_HEAD: refcount, type
    read = ctypes.c_void_p.from_address
    probe = np.arange(3.0)[1:]
    if read(id(probe) + offset).value == probe.__array_interface__["data"][0]:
        return lambda a: read(id(a) + offset).value
    return lambda a: a.__array_interface__["data"][0]


_address = _address_reader()


def rows_of_one(pieces):
    """The array of which the numpy arrays `pieces` are consecutive row blocks, in order, as a view — as the
    in-process devices' pieces of an S(0) blob often are (a fed batch cut into rows, a batched step's output cut
    back into pieces) — or None."""
    first = pieces[0]
    if type(first) is not np.ndarray or first.ndim == 0 or first.dtype.hasobject or type(first.base) is not np.ndarray:
        return None
    base, strides, tail, dtype = first.base, first.strides, first.shape[1:], first.dtype
    start = _address(first)
    rows = 0
    for p in pieces:
        if type(p) is not np.ndarray or p.base is not base or p.strides != strides or p.shape[1:] != tail \
                or p.dtype != dtype or (p.shape[0] and _address(p) != start + rows * strides[0]):
            return None
        rows += p.shape[0]
    shape = (rows,) + tail
    for whole in (base, base.T):  # the common cases, found without making a view
        if whole.shape == shape and whole.strides == strides and _address(whole) == start:
            return whole
    try:
        return np.ndarray(shape, dtype, buffer=base, offset=start - _address(base), strides=strides)
    except (TypeError, ValueError):  # a base that is no buffer (object arrays), or not a contiguous one
        return None


def makes_shared_fresh_array(attrs):
    """Whether a boxing op's output is one new array that its destination devices share: the all-reduce of partial
    sums into broadcast CPU replicas inside one process (`_sum_in_process`; the sum goes into the first addend
    only where that addend is itself a temporary nobody else reads). An in-place consumer that runs once for
    such shared replicas (an optimizer update) may then overwrite it."""
    m = Move.of(attrs)
    one_process = len({machine for machine, _ in m.src_pl.pairs}) == 1
    return (m.same and m.src == S.P and m.dst == S.B and m.p_src > 1 and one_process
            and m.dst_pl.device_tag == "cpu")


def _via_logical_in_process(site):
    m, idx, owned = site.move, site.dst_local, site.owned
    xp_src, xp_dst, to_dst = site.xp_src, site.xp_dst, site.to_dst

    def box(*pieces):
        value = to_dst(logical_from_pieces(xp_src, pieces, m.src, owned))
        return tuple(pieces_from_logical(xp_dst, value, m.dst, m.p_dst, idx))

    return box


def _via_logical_over_mpi(site):
    m, idx, owned, xp_dst, to_dst = site.move, site.dst_local, site.owned, site.xp_dst, site.to_dst
    comm, ranks, shape, np_dtype = site.rt.comm, site.ranks, site.shape, site.np_dtype

    def box(*pieces):
        value = materialize(comm, list(pieces), m.src_pl, m.src, shape, np_dtype, ranks, owned)
        if not idx:
            return ()
        return tuple(pieces_from_logical(xp_dst, to_dst(value), m.dst, m.p_dst, idx))

    return box


# --- the table --------------------------------------------------------------------------------------------------
def _same(src_test, dst_test):
    return lambda m: m.same and src_test(m.src) and dst_test(m.dst)


def _is(sbp):
    return lambda s: s == sbp


def _any(s):
    return True


_VIA = dict(in_process=_via_logical_in_process, over_mpi=_via_logical_over_mpi)

TABLE = (
    # same devices and device tag
    Transition("identity", lambda m: m.same and (m.src == m.dst or m.p_src == 1), _free, _identity, _identity),
    Transition("view-cast", lambda m: m.same and S.M in (m.src, m.dst), _whole, **_VIA),
    Transition("all-reduce", _same(_is(S.P), _is(S.B)), _ring(2.0), _sum_in_process, _via_logical_over_mpi),
    Transition("reduce-scatter", _same(_is(S.P), S.is_split), _ring(1.0), **_VIA),
    Transition("all-gather", _same(S.is_split, _is(S.B)), _ring(1.0), **_VIA),
    Transition("local-slice", _same(_is(S.B), S.is_split), _free, _own_slice, _own_slice),
    Transition("all-to-all", _same(S.is_split, S.is_split), _ring(1.0), **_VIA),
    Transition("b2p-zeros", _same(_is(S.B), _is(S.P)), _free, _keep_first, _keep_first),
    Transition("copy", _same(_any, _any), _whole, **_VIA),
    # a change of placement: pipeline stages, 1 <-> N devices, machine to machine, host <-> GPU
    Transition("reduce", lambda m: m.p_dst == 1 and m.src == S.P, _between_placements, **_VIA),
    Transition("broadcast", lambda m: m.p_src == 1 and m.p_dst > 1 and m.dst == S.B, _between_placements, **_VIA),
    Transition("gather", lambda m: m.p_src > 1 and m.p_dst == 1 and S.is_split(m.src), _between_placements,
               **_VIA),
    Transition("slice-boxing", lambda m: True, _between_placements, **_VIA),
)

IDENTITY = TABLE[0]


def lookup(src_pl, src, dst_pl, dst):
    """The transition of a move."""
    return transition_of(Move(src_pl, src, dst_pl, dst))


def transition_of(move):
    for t in TABLE:
        if t.applies(move):
            return t
    raise AssertionError("the transition table has no row for %r -> %r" % (move.src, move.dst))


def blob_bytes(meta):
    n = meta.dtype.np.itemsize if meta.dtype.np is not None else 8
    for d in meta.shape:
        n *= d
    return n


def cost(src_pl, src, dst_pl, dst, size):
    """Bytes one call of the move moves (theoretical) for a logical blob of `size` bytes."""
    m = Move(src_pl, src, dst_pl, dst)
    return transition_of(m).cost(m, size)


def collective_name(src_pl, src, dst_pl, dst):
    return lookup(src_pl, src, dst_pl, dst).collective


def executor(rt, attrs, meta, owned=False, over_processes=None):
    """The function a boxing op runs: this process's source pieces (parallel order) -> its destination pieces.

    `owned`: the source pieces are temporaries nothing else reads. `over_processes` forces the executor across
    processes (True) or in one process (False); by default it follows where the pieces live."""
    move = Move.of(attrs)
    t = transition_of(move)
    site = Site(rt, move, meta.shape, meta.dtype.np, owned)
    if over_processes is None:
        over_processes = not site.all_local
    if not over_processes:
        return t.in_process(site)
    if rt.machine_id not in site.ranks:
        return lambda *pieces: ()
    on_gpus = move.src_pl.device_tag == move.dst_pl.device_tag == "gpu"
    if on_gpus and t.over_nccl is not None:
        return t.over_nccl(site)
    return t.over_mpi(site)


def assemble(rt, shards, shape, np_dtype, placement, sbp):
    """A fresh host array with the full logical value (`shards`: device index -> piece, for this process's
    devices); across processes every rank gets it."""
    if rt.comm.size > 1:
        local = [shards[i] for i in sorted(shards)]
        value = materialize(rt.comm, local, placement, sbp, shape, np_dtype, list(range(rt.comm.size)))
        return np.array(value, copy=True)
    host = [np.asarray(devices.to_host(shards[i])) for i in range(placement.parallel_num)]
    value = logical_from_pieces(np, host, sbp)
    # a piece itself may be a variable's storage, which later steps update in place
    return np.array(value, copy=True) if any(value is h for h in host) else value
