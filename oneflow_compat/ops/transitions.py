"""The transition table: for every way a blob can change (placement, SBP), which collective moves it, over which
ranks, and how many bytes that sends — the one place boxing is described (legacy-api.md §2.7, design.md §4). The
executors that run the rows live in the runtime (`runtime/boxing.py`, one per row, found by the row's name); this
module plans (pure functions of the move and the logical shape) and prices.

Rows, first match wins (`p`: devices of the placement; "same": the same devices under the same device tag):

=============================  ==================================  ================================================
row (`collective`)             move                                what runs
=============================  ==================================  ================================================
identity                       same, unchanged (or one device)     nothing
via-logical (fallback)         the mirrored view on either side    the logical value is made, then cut (below)
all-reduce                     same, P -> B                        all-reduce over the placement's ranks
reduce-scatter                 same, P -> S(a)                     reduce-scatter along a
all-gather                     same, S(a) -> B                     all-gather(v) along a
local-slice                    same, B -> S                        each device slices its copy (no communication)
all-to-all                     same, S(i) -> S(j)                  all-to-all(v): each rank sends the others their
                                                                   columns of its rows
b2p-zeros                      same, B -> P                        device 0 keeps its copy, the others hold zeros
s2p-zeros                      same, S -> P                        each device puts its slice into zeros
reduce                         P on p > 1 -> one device            reduce to the destination's rank
broadcast                      one device -> B on p > 1            broadcast from the source's rank
gather                         S on p > 1 -> one device            gather(v) to the destination's rank
reduce-scatter+slice-boxing    P on p > 1 -> S or B elsewhere      reduce-scatter over the source ranks into
                                                                   S(a), then slice-boxing
slice-boxing-add               P -> P elsewhere                    each addend goes whole to one destination device
                                                                   (its own device if it is one), which sums them
slice-boxing                   any other change of placement       point to point: each destination piece gets the
                               (stages, 1 <-> N, machine to        overlapping slices of the source pieces, nothing
                               machine, overlaps, host <-> GPU)    else; a B source sends from the device itself,
                                                                   else one on its machine, else the least loaded
=============================  ==================================  ================================================

Every collective runs over exactly the ranks that hold or need pieces, and hierarchically: where a process holds
several devices of a placement (the legacy API: a rank is a machine with N devices), their pieces are combined by
array work first, then ONE process-comm call moves what crosses processes. Uneven (balanced) splits are handled
everywhere. `via-logical` is the one row that goes through the whole logical value: it is taken only by moves
between the mirrored view and another layout (or of mirrored blobs between placements) — boxing the compiler never
inserts today (mirrored blobs change view through the cast ops) — and works where the mirrored side has one device,
whose piece IS the logical value; elsewhere it is refused with an error naming the move. Its executor also runs the
rows that cut pieces at balanced offsets (reduce-scatter, all-to-all, s2p-zeros, the slice-boxings) for DYNAMIC
blobs (a mirrored feed cast to the consistent view), whose pieces' sizes are known only when they run: their cost
is then the figure of the static (largest) shape.

Cost (`cost`, the SBP inference's cost model, the boxing ops' `bytes`, and what `explain` prints) = bytes SENT,
counted per rank by the accounting rule of the comm interface (`comm/accounting.py`: the direct schedule, own
pieces never counted), with each DEVICE of the two placements as its own rank — exactly what each rank sends in
the global-tensor API, where a rank is a device. Uneven splits make ranks send different amounts: the figure
reported is the BUSIEST rank's bytes (the maximum over ranks; `traffic` gives every rank's). Where one process
holds several devices (legacy multi-device machines), the process comm carries less, since pieces inside a process
are combined in memory: `traffic(..., by_machine=True)` gives those figures (what a recording comm sees there).

The boxing pass inserts a boxing op for every move whose row is not `identity`.
"""
import collections

from oneflow_compat.backend.balanced_split import balanced_ranges, balanced_sizes
from oneflow_compat.backend.row_blocks import rows_of_one  # noqa: F401 (the plan and the updates read it here)
from oneflow_compat.comm import accounting
from oneflow_compat.ir import sbp as S


class Move:
    """A blob going from (src placement, src SBP) to (dst placement, dst SBP). On one device every layout but the
    mirrored view is the one full copy, so the SBP of a one-device side is B. A side on an n-D mesh is made as
    plain as it can be (`_plain`): the 1-D layout on the flat placement where its n-D SBP lays every device out as
    one does; a 1-D B or P side of a move between the same devices is lifted onto the other side's mesh. `nd`: a
    side is still on a mesh (the rows of `ops/mesh_transitions.py` take the move)."""

    __slots__ = ("src_pl", "src", "dst_pl", "dst", "same", "p_src", "p_dst", "nd")

    def __init__(self, src_pl, src, dst_pl, dst):
        if src_pl.is_nd or dst_pl.is_nd or S.is_nd(src) or S.is_nd(dst):
            src_pl, src, dst_pl, dst = _plain(src_pl, src, dst_pl, dst)
        self.nd = src_pl.is_nd or dst_pl.is_nd
        self.p_src, self.p_dst = src_pl.parallel_num, dst_pl.parallel_num
        self.src_pl, self.dst_pl = src_pl, dst_pl
        self.src = S.B if self.p_src == 1 and src != S.M else src
        self.dst = S.B if self.p_dst == 1 and dst != S.M else dst
        self.same = src_pl == dst_pl  # the same devices with the same device tag

    @classmethod
    def of(cls, attrs):
        """The move a boxing op performs, from its attrs."""
        return cls(attrs["src_placement"], attrs["src_sbp"], attrs["dst_placement"], attrs["dst_sbp"])

    def __repr__(self):
        return "%s %r -> %s %r" % (self.src_pl, self.src, self.dst_pl, self.dst)


def _plain(src_pl, src, dst_pl, dst):
    """The move's two sides as plain as they lay their devices out (see `Move`)."""
    def flat(pl, sbp):
        f = S.flat(sbp) if S.is_nd(sbp) else (sbp if not pl.is_nd else None)
        if pl.parallel_num == 1:
            return pl.flat(), S.B
        return (pl.flat(), f) if f is not None else (pl, sbp)

    src_pl, src = flat(src_pl, src)
    dst_pl, dst = flat(dst_pl, dst)
    if src_pl.pairs == dst_pl.pairs and src_pl.device_tag == dst_pl.device_tag and src_pl.is_nd != dst_pl.is_nd:
        if not src_pl.is_nd and src in (S.B, S.P):
            src_pl, src = dst_pl, S.nd((src,) * len(dst_pl.hierarchy), dst_pl.hierarchy)
        elif not dst_pl.is_nd and dst in (S.B, S.P):
            dst_pl, dst = src_pl, S.nd((dst,) * len(src_pl.hierarchy), src_pl.hierarchy)
    return src_pl, src, dst_pl, dst


class Transition:
    """A row: its `collective` name (the boxing ops' attrs, `explain`, implicit-boxing messages; the runtime's
    executor of the row is found by it), when it `applies` (Move -> bool), and its `plan_traffic` (Move, shape,
    itemsize, rank_of -> {rank: bytes sent}, see `traffic`)."""

    __slots__ = ("collective", "applies", "plan_traffic", "fallback")

    def __init__(self, collective, applies, plan_traffic, fallback=False):
        self.collective = collective
        self.applies = applies
        self.plan_traffic = plan_traffic
        self.fallback = fallback  # goes through the whole logical value

    def cost(self, move, meta_or_size):
        """Bytes the busiest rank sends (each device its own rank) for a logical blob with meta `meta_or_size`
        (shape and dtype), or, given a number of bytes, the figure of an evenly divisible blob of that size."""
        return _cost(self, move, meta_or_size)

    def describe(self, move, meta):
        """What a boxing op of this row shows as its collective (explain's column) for a blob with `meta`."""
        return self.collective

    def __repr__(self):
        return "Transition(%s)" % self.collective


# --- the pieces of a layout -------------------------------------------------------------------------------------
def region(shape, sbp, n, i):
    """Device i's part of the logical index space under `sbp` on n devices: ((start, stop) per axis)."""
    full = [(0, d) for d in shape]
    if S.is_split(sbp) and n > 1:
        full[sbp.axis] = balanced_ranges(shape[sbp.axis], n)[i]
    return tuple(full)


def region_size(r):
    n = 1
    for start, stop in r:
        n *= max(0, stop - start)
    return n


def _intersect(a, b):
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))
    return out if all(start < stop for start, stop in out) else None


def relative(r, within):
    """The slices of region `r` inside an array holding region `within`."""
    return tuple(slice(start - w0, stop - w0) for (start, stop), (w0, _) in zip(r, within))


def _elements(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def owners(placement):
    """The machines (= world ranks) holding devices of `placement`, ascending."""
    return sorted({m for m, _ in placement.pairs})


def machine_runs(placement):
    """[(machine, [device indices])] in machine order: each machine's devices are a run of the parallel order."""
    runs = collections.OrderedDict()
    for i, (m, _) in enumerate(placement.pairs):
        runs.setdefault(m, []).append(i)
    return list(runs.items())


def merged_sizes(placement, sizes):
    """Per machine (ascending), the sum of its devices' `sizes` (a split's rows of each device)."""
    return [sum(sizes[i] for i in idx) for _, idx in machine_runs(placement)]


# --- point-to-point plans (pure: every rank computes the same one) -------------------------------------------------
Transfer = collections.namedtuple("Transfer", "src dst region")  # device indices, logical region


def _nearest(candidates, pair, pairs, load):
    """The candidate device for `pair`: itself, else one on its machine, else any; the least loaded first."""
    same = [c for c in candidates if pairs[c] == pair]
    if same:
        return same[0]
    near = [c for c in candidates if pairs[c][0] == pair[0]] or list(candidates)
    return min(near, key=lambda c: (load[c], c))


def partial_holder(move):
    """The destination device that holds the value of a P destination (the others hold zeros): one that is a source
    device too, else one on a machine with source devices, else the first."""
    src_pairs = set(move.src_pl.pairs)
    src_machines = {m for m, _ in src_pairs}
    for test in (lambda p: p in src_pairs, lambda p: p[0] in src_machines):
        for d, pair in enumerate(move.dst_pl.pairs):
            if test(pair):
                return d
    return 0


def slice_transfers(move, shape, src=None):
    """The point-to-point plan of `slice-boxing` (source SBP `src`, default the move's: S or B): for each
    destination device, the overlapping slices of the source pieces that make its piece, each sent once."""
    src = move.src if src is None else src
    shape = tuple(shape)
    src_pairs, dst_pairs = move.src_pl.pairs, move.dst_pl.pairs
    have = [region(shape, src, move.p_src, s) for s in range(move.p_src)]
    holder = partial_holder(move) if move.dst == S.P else None
    load = [0] * move.p_src
    out = []
    for d in range(move.p_dst):
        if move.dst == S.P:
            if d != holder:
                continue
            need = region(shape, S.B, 1, 0)
        else:
            need = region(shape, move.dst, move.p_dst, d)
        if region_size(need) == 0:
            continue
        if S.is_split(src):
            for s, q in enumerate(have):
                part = _intersect(q, need)
                if part is not None:
                    out.append(Transfer(s, d, part))
        else:  # every source device has it all: one sends it
            s = _nearest(range(move.p_src), dst_pairs[d], src_pairs, load)
            if src_pairs[s] != dst_pairs[d]:
                load[s] += region_size(need)
            out.append(Transfer(s, d, need))
    return out


def addend_transfers(move, shape):
    """The plan of `slice-boxing-add`: each source addend goes whole to one destination device (itself if it is
    one, else one on its machine, else the least loaded)."""
    full = region(tuple(shape), S.B, 1, 0)
    load = [0] * move.p_dst
    out = []
    for s, pair in enumerate(move.src_pl.pairs):
        d = _nearest(range(move.p_dst), pair, move.dst_pl.pairs, load)
        if move.dst_pl.pairs[d] != pair:
            load[d] += 1
        out.append(Transfer(s, d, full))
    return out


def stage_axis(move):
    """The split axis of the first stage of `reduce-scatter+slice-boxing`: the destination's, or 0."""
    return move.dst.axis if S.is_split(move.dst) else 0


# --- traffic: bytes each rank sends ------------------------------------------------------------------------------
def _ranks_of(placement, rank_of):
    """[(rank, [device indices])] of a placement, in order."""
    runs = collections.OrderedDict()
    for i, pair in enumerate(placement.pairs):
        runs.setdefault(rank_of(pair), []).append(i)
    return list(runs.items())


def _add(traffic, rank, nbytes):
    if nbytes:
        traffic[rank] = traffic.get(rank, 0) + nbytes


def _none(m, shape, itemsize, rank_of):
    return {}


def _all_reduce_traffic(m, shape, itemsize, rank_of):
    ranks = _ranks_of(m.src_pl, rank_of)
    k, out = len(ranks), {}
    for i, (r, _) in enumerate(ranks):
        _add(out, r, accounting.allreduce(_elements(shape), itemsize, k, i))
    return out


def _split_rows(shape, sbp, placement, rank_of):
    """Per rank of the placement, (rank, rows of the split axis it holds)."""
    sizes = balanced_sizes(shape[sbp.axis], placement.parallel_num)
    return [(r, sum(sizes[i] for i in idx)) for r, idx in _ranks_of(placement, rank_of)]


def _row_bytes(shape, axis, itemsize):
    return _elements(shape[:axis] + shape[axis + 1:]) * itemsize


def _reduce_scatter_traffic(m, shape, itemsize, rank_of, axis=None):
    axis = m.dst.axis if axis is None else axis
    rows = _split_rows(shape, S.S(axis), m.src_pl, rank_of)
    total, row = _elements(shape) * itemsize, _row_bytes(shape, axis, itemsize)
    out = {}
    for r, n in rows:
        _add(out, r, accounting.reduce_scatter(total, n * row, len(rows)))
    return out


def _all_gather_traffic(m, shape, itemsize, rank_of):
    rows = _split_rows(shape, m.src, m.src_pl, rank_of)
    row = _row_bytes(shape, m.src.axis, itemsize)
    out = {}
    for r, n in rows:
        _add(out, r, accounting.allgather(n * row, len(rows)))
    return out


def _all_to_all_traffic(m, shape, itemsize, rank_of):
    i, j = m.src.axis, m.dst.axis
    rows = [n for _, n in _split_rows(shape, m.src, m.src_pl, rank_of)]
    cols = [n for _, n in _split_rows(shape, m.dst, m.src_pl, rank_of)]
    rest = _elements(tuple(d for a, d in enumerate(shape) if a not in (i, j))) * itemsize
    out = {}
    for q, (r, _) in enumerate(_ranks_of(m.src_pl, rank_of)):
        _add(out, r, accounting.alltoall([rows[q] * c * rest for c in cols], q))
    return out


def _group(m, rank_of):
    """The sorted ranks of both placements."""
    return sorted({rank_of(p) for p in m.src_pl.pairs} | {rank_of(p) for p in m.dst_pl.pairs})


def _reduce_traffic(m, shape, itemsize, rank_of):
    root, nbytes = rank_of(m.dst_pl.pairs[0]), _elements(shape) * itemsize
    out = {}
    for r, _ in _ranks_of(m.src_pl, rank_of):
        _add(out, r, accounting.reduce(nbytes, r == root))
    return out


def _broadcast_traffic(m, shape, itemsize, rank_of):
    root = rank_of(m.src_pl.pairs[0])
    out = {}
    _add(out, root, accounting.broadcast(_elements(shape) * itemsize, len(_group(m, rank_of)), True))
    return out


def _gather_traffic(m, shape, itemsize, rank_of):
    root = rank_of(m.dst_pl.pairs[0])
    row = _row_bytes(shape, m.src.axis, itemsize)
    out = {}
    for r, n in _split_rows(shape, m.src, m.src_pl, rank_of):
        _add(out, r, accounting.gather(n * row, r == root))
    return out


def _transfers_traffic(m, transfers, itemsize, rank_of):
    out = {}
    for t in transfers:
        a, b = rank_of(m.src_pl.pairs[t.src]), rank_of(m.dst_pl.pairs[t.dst])
        if a != b:
            _add(out, a, region_size(t.region) * itemsize)
    return out


def _slice_boxing_traffic(m, shape, itemsize, rank_of):
    return _transfers_traffic(m, slice_transfers(m, shape), itemsize, rank_of)


def _addend_traffic(m, shape, itemsize, rank_of):
    return _transfers_traffic(m, addend_transfers(m, shape), itemsize, rank_of)


def _as_vector(shape):
    return tuple(shape) if len(shape) else (1,)  # a 0-d blob is split as one element


def _partial_to_placement_traffic(m, shape, itemsize, rank_of):
    shape = _as_vector(shape)
    axis = stage_axis(m)
    out = _reduce_scatter_traffic(m, shape, itemsize, rank_of, axis)
    second = _transfers_traffic(m, slice_transfers(m, shape, S.S(axis)), itemsize, rank_of)
    for r, n in second.items():
        _add(out, r, n)
    return out


def _via_logical_traffic(m, shape, itemsize, rank_of):
    """The collective `runtime/boxing.materialize` makes over both placements' ranks."""
    group = _group(m, rank_of)
    nbytes, out = _elements(shape) * itemsize, {}
    if m.src == S.P:
        for i, r in enumerate(group):
            _add(out, r, accounting.allreduce(_elements(shape), itemsize, len(group), i))
    elif S.is_split(m.src) and m.p_src > 1:
        row = _row_bytes(shape, m.src.axis, itemsize)
        held = dict(_split_rows(shape, m.src, m.src_pl, rank_of))
        for r in group:
            _add(out, r, accounting.allgather(held.get(r, 0) * row, len(group)))
    else:
        _add(out, rank_of(m.src_pl.pairs[0]), accounting.broadcast(nbytes, len(group), True))
    return out


# --- the table ---------------------------------------------------------------------------------------------------
def _same(src_test, dst_test):
    return lambda m: m.same and src_test(m.src) and dst_test(m.dst)


def _is(sbp):
    return lambda s: s == sbp


def _elsewhere(test):
    return lambda m: not m.same and test(m)


TABLE = (
    # same devices and device tag
    Transition("identity", lambda m: m.same and (m.src == m.dst or m.p_src == 1), _none),
    Transition("via-logical", lambda m: S.M in (m.src, m.dst), _via_logical_traffic, fallback=True),
    Transition("all-reduce", _same(_is(S.P), _is(S.B)), _all_reduce_traffic),
    Transition("reduce-scatter", _same(_is(S.P), S.is_split), _reduce_scatter_traffic),
    Transition("all-gather", _same(S.is_split, _is(S.B)), _all_gather_traffic),
    Transition("local-slice", _same(_is(S.B), S.is_split), _none),
    Transition("all-to-all", _same(S.is_split, S.is_split), _all_to_all_traffic),
    Transition("b2p-zeros", _same(_is(S.B), _is(S.P)), _none),
    Transition("s2p-zeros", _same(S.is_split, _is(S.P)), _none),
    # a change of placement: pipeline stages, 1 <-> N devices, machine to machine, host <-> GPU
    Transition("reduce", _elsewhere(lambda m: m.p_dst == 1 and m.src == S.P), _reduce_traffic),
    Transition("broadcast", _elsewhere(lambda m: m.p_src == 1 and m.p_dst > 1 and m.dst == S.B), _broadcast_traffic),
    Transition("gather", _elsewhere(lambda m: m.p_dst == 1 and S.is_split(m.src)), _gather_traffic),
    Transition("reduce-scatter+slice-boxing", _elsewhere(lambda m: m.src == S.P and m.dst != S.P),
               _partial_to_placement_traffic),
    Transition("slice-boxing-add", _elsewhere(lambda m: m.src == S.P), _addend_traffic),
    Transition("slice-boxing", _elsewhere(lambda m: True), _slice_boxing_traffic),
)

IDENTITY = TABLE[0]


def lookup(src_pl, src, dst_pl, dst):
    """The transition of a move."""
    return transition_of(Move(src_pl, src, dst_pl, dst))


# The rows of moves with a mesh of more than one axis on either side (`move.nd`): `ops/mesh_transitions.py` plans
# them and registers them here when the package loads ("same": the same mesh; "elsewhere": any other move).
MESH_ROWS = {}


def transition_of(move):
    if move.nd:
        if S.M in (move.src, move.dst):
            raise ValueError("boxing %r: the mirrored view has no n-D layout" % (move,))
        if move.same and move.src == move.dst:
            return IDENTITY
        return MESH_ROWS["same" if move.same else "elsewhere"]
    for t in TABLE:
        if t.applies(move):
            return t
    raise AssertionError("the transition table has no row for %r" % (move,))


def blob_bytes(meta):
    n = meta.dtype.np.itemsize if meta.dtype.np is not None else 8
    for d in meta.shape:
        n *= d
    return n


def _itemsize(meta):
    return meta.dtype.np.itemsize if meta.dtype.np is not None else 8


def traffic(move, shape, itemsize, by_machine=False):
    """{rank: bytes it sends} for one call of the move on a logical blob of `shape` (`itemsize` bytes an element):
    ranks are the devices ((machine, device) pairs), or with `by_machine` the processes (machines), whose pieces
    inside one process are combined in memory first. Ranks that send nothing are left out."""
    rank_of = (lambda pair: pair[0]) if by_machine else (lambda pair: pair)
    return transition_of(move).plan_traffic(move, tuple(shape), int(itemsize), rank_of)


def _cost(t, move, meta_or_size):
    if hasattr(meta_or_size, "shape"):
        shape, itemsize = tuple(meta_or_size.shape), _itemsize(meta_or_size)
        sent = t.plan_traffic(move, shape, itemsize, lambda pair: pair)
        return float(max(sent.values(), default=0))
    # a size alone: the figure of a blob whose split axes divide evenly, scaled to `size` bytes
    axes = [s.axis for s in (move.src, move.dst) if S.is_split(s)]
    even = move.p_src * move.p_dst * 2  # divisible by either side's device count
    shape = (even,) * (max(axes, default=0) + 1)
    sent = t.plan_traffic(move, shape, 1, lambda pair: pair)
    return float(max(sent.values(), default=0)) * float(meta_or_size) / _elements(shape)


def cost(src_pl, src, dst_pl, dst, meta_or_size):
    """Bytes the busiest rank sends in one call of the move (each device its own rank), for a logical blob with
    meta `meta_or_size` — or, given a number of bytes, for an evenly divisible blob of that size."""
    m = Move(src_pl, src, dst_pl, dst)
    return transition_of(m).cost(m, meta_or_size)


def collective_name(src_pl, src, dst_pl, dst):
    return lookup(src_pl, src, dst_pl, dst).collective


def makes_shared_fresh_array(attrs):
    """Whether a boxing op's output is one new array that its destination devices share: the all-reduce of partial
    sums into broadcast CPU replicas inside one process (the sum goes into the first addend only where that addend
    is itself a temporary nobody else reads). An in-place consumer that runs once for such shared replicas (an
    optimizer update) may then overwrite it."""
    m = Move.of(attrs)
    one_process = len({machine for machine, _ in m.src_pl.pairs}) == 1
    return (m.same and m.src == S.P and m.dst == S.B and m.p_src > 1 and one_process
            and m.dst_pl.device_tag == "cpu")


# --- the logical value of pieces, and pieces of a logical value (array helpers, any array namespace) --------------
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

