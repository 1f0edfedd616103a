"""Boxing on n-D meshes: the rows of the transition table (`ops/transitions.py`) for moves whose placement is a mesh
of more than one axis (design.md §4 "n-D meshes"). Planned here (pure functions of the move and the logical shape),
run by `runtime/mesh_boxing.py`.

A move is first made as plain as it can be (`transitions.Move` does it): a layout that lays every device out as a
1-D SBP does (B on every mesh axis, P on every axis, one mesh axis of size > 1) is that 1-D layout on the flat
placement, and the 1-D table takes a move whose two sides are 1-D; a 1-D B or P side of a move between the same
devices is lifted onto the other side's mesh. The rest:

=============  ==================================  ===============================================================
row            move                                what runs
=============  ==================================  ===============================================================
mesh-steps     the same mesh, n-D SBP -> n-D SBP   one mesh axis at a time: each step changes the symbol of one
                                                   axis, a 1-D row of the table run by every group of devices
                                                   along that axis (its sub-group of ranks) on the part of the
                                                   tensor the other axes give the group
mesh-relayout  any other move with a mesh on       the source's partial sums reduced first (steps as above, into
               either side (2-D <-> 1-D, another   splits or B), then point to point: each destination device gets
               mesh, other ranks)                  the overlapping blocks of the source pieces, nothing else (a
                                                   destination P: the devices at coordinate 0 of its P axes hold
                                                   the value, the others zeros)
=============  ==================================  ===============================================================

Steps (DTensor's `_redistribute.py` plans the same way, one mesh dimension at a time): a step on mesh axis k from
symbol a to symbol b is the 1-D transition a -> b on each group of devices that differ only in their coordinate on
k, whose part of the tensor is the region the other axes give it (axis k read as B). That is exact unless a or b
splits a tensor axis that a LATER mesh axis also splits: pieces are cut in mesh-axis order, so such a step would
cut in the wrong order, and is not taken. Of the valid sequences of steps the planner takes the cheapest (Dijkstra
over the layouts reachable with the symbols of the two ends and B, each step priced by its busiest rank's bytes;
ties: fewer steps, then the first found). From any layout every other is reachable that way: the axes can be made B
last to first, then given the destination's symbols first to last.

Cost = bytes SENT per rank, by the accounting rule of the comm interface (`comm/accounting.py`) applied to each
step's sub-groups (the 1-D rows' traffic functions take a `rank_of` mapping, here the devices of each group);
a move's figure is the busiest rank's sum over its steps (`traffic` gives every rank's).
"""
import collections
import functools
import heapq
import itertools

from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import transitions as T

Group = collections.namedtuple("Group", "devices placement shape")  # mesh device indices, their 1-D placement,
# the logical shape of the part of the tensor the group holds between them
Step = collections.namedtuple("Step", "axis src dst collective groups before after")


def as_nd(pl, sbp):
    """`sbp` as an `NdSbp` on `pl`'s mesh (a 1-D layout is a mesh of one axis)."""
    if S.is_nd(sbp):
        return sbp
    return S.nd((sbp,) * len(pl.hierarchy), pl.hierarchy)


def groups_along(pl, layout, axis, shape):
    """The groups of devices along mesh axis `axis` (each the devices that differ only in their coordinate on it),
    in row-major order of the other coordinates, each with the part of the tensor `layout` gives it."""
    mesh, n = pl.hierarchy, pl.parallel_num
    whole = layout.replace(axis, S.B)
    others = [range(m) if k != axis else range(1) for k, m in enumerate(mesh)]
    out = []
    for coords in itertools.product(*others):
        devices = []
        for j in range(mesh[axis]):
            c = list(coords)
            c[axis] = j
            devices.append(S.mesh_index(c, mesh))
        sub = Placement(pl.device_tag, [pl.pairs[d] for d in devices], pl.requested_tag)
        out.append(Group(tuple(devices), sub, S.local_shape(shape, whole, devices[0], n)))
    return out


def valid_step(layout, axis, sbp):
    """Whether mesh axis `axis` may hold (or change to or from) `sbp` while the later axes hold what `layout` says:
    not when a later axis splits the tensor axis `sbp` splits (the cut would be made out of order)."""
    if not S.is_split(sbp):
        return True
    return not any(S.is_split(s) and s.axis == sbp.axis and m > 1
                   for s, m in zip(layout.sbps[axis + 1:], layout.mesh[axis + 1:]))


def _step(pl, before, axis, sbp, shape):
    after = before.replace(axis, sbp)
    groups = groups_along(pl, before, axis, shape)
    sub = groups[0].placement
    t = T.transition_of(T.Move(sub, before[axis], sub, sbp))
    return Step(axis, before[axis], sbp, t.collective, tuple(groups), before, after)


def step_traffic(step, itemsize, rank_of):
    """{rank: bytes} one step sends: its 1-D row's traffic on every group, ranks mapped by `rank_of`."""
    out = {}
    for g in step.groups:
        m = T.Move(g.placement, step.src, g.placement, step.dst)
        row = T.transition_of(m)
        for r, b in row.plan_traffic(m, g.shape, itemsize, rank_of).items():
            out[r] = out.get(r, 0) + b
    return out


def _device(pair):
    return pair


@functools.lru_cache(maxsize=4096)
def plan(pl, src, dst, shape, itemsize):
    """The cheapest sequence of steps from `src` to `dst` (NdSbps on `pl`'s mesh) for a tensor of `shape`."""
    if src == dst:
        return ()
    mesh = pl.hierarchy
    symbols = sorted(set(src.sbps) | set(dst.sbps) | {S.B}, key=repr)
    best = {src: (0, 0)}
    came = {}
    heap = [(0, 0, 0, src)]
    order = itertools.count(1)
    while heap:
        cost, nsteps, _, state = heapq.heappop(heap)
        if state == dst:
            break
        if (cost, nsteps) > best[state]:
            continue
        for axis, m in enumerate(mesh):
            if m == 1 or not valid_step(state, axis, state[axis]):
                continue
            for sym in symbols:
                if sym == state[axis] or not valid_step(state, axis, sym):
                    continue
                step = _step(pl, state, axis, sym, shape)
                w = max(step_traffic(step, itemsize, _device).values(), default=0)
                key = (cost + w, nsteps + 1)
                nxt = step.after
                if nxt not in best or key < best[nxt]:
                    best[nxt] = key
                    came[nxt] = step
                    heapq.heappush(heap, (key[0], key[1], next(order), nxt))
    if dst not in came:
        raise AssertionError("no steps from %r to %r on mesh %s" % (src, dst, mesh))
    steps, state = [], dst
    while state != src:
        step = came[state]
        steps.append(step)
        state = step.before
    return tuple(reversed(steps))


# --- between placements: reduce the source's partial sums, then point to point -------------------------------------
def _without_partial(layout, sym):
    return S.nd([sym if s == S.P else s for s in layout.sbps], layout.mesh)


def _holders(pl, layout, shape):
    """{region: [source device indices holding it]} of a layout without partial sums (its distinct blocks)."""
    out = collections.OrderedDict()
    for d in range(pl.parallel_num):
        r = S.region(shape, layout, d, pl.parallel_num)
        if T.region_size(r):
            out.setdefault(r, []).append(d)
    return out


def _zero_devices(pl, layout):
    """The devices of a layout with partial sums that hold zeros: all but coordinate 0 of every P axis."""
    axes = [k for k, s in enumerate(layout.sbps) if s == S.P]
    return {d for d in range(pl.parallel_num) if any(S.mesh_coords(d, pl.hierarchy)[k] for k in axes)}


def transfers(src_pl, src, dst_pl, dst, shape):
    """The point-to-point plan from `src` (an NdSbp without P on `src_pl`) to `dst` (an NdSbp on `dst_pl`):
    [Transfer(source device, destination device, region)], each needed block sent once, from its holder on the same
    device, else on the same machine, else the least loaded."""
    shape = tuple(shape)
    holders = _holders(src_pl, src, shape)
    zeros = _zero_devices(dst_pl, dst)
    need_layout = _without_partial(dst, S.B)
    load = [0] * src_pl.parallel_num
    out = []
    for d in range(dst_pl.parallel_num):
        if d in zeros:
            continue
        need = S.region(shape, need_layout, d, dst_pl.parallel_num)
        if not T.region_size(need):
            continue
        for have, devs in holders.items():
            part = T._intersect(have, need)
            if part is None:
                continue
            s = T._nearest(devs, dst_pl.pairs[d], src_pl.pairs, load)
            if src_pl.pairs[s] != dst_pl.pairs[d]:
                load[s] += T.region_size(part)
            out.append(T.Transfer(s, d, part))
    return out


Relayout = collections.namedtuple("Relayout", "steps reduced transfers zeros")  # steps on the source placement into
# `reduced` (no P), the point-to-point transfers from it, and the destination devices holding zeros


def _transfer_traffic(src_pl, dst_pl, moves, itemsize, rank_of):
    out = {}
    for t in moves:
        a, b = rank_of(src_pl.pairs[t.src]), rank_of(dst_pl.pairs[t.dst])
        if a != b:
            out[a] = out.get(a, 0) + T.region_size(t.region) * itemsize
    return out


def _add_all(total, part):
    for r, b in part.items():
        if b:
            total[r] = total.get(r, 0) + b
    return total


@functools.lru_cache(maxsize=4096)
def relayout(src_pl, src, dst_pl, dst, shape, itemsize):
    """The plan of `mesh-relayout`: the source's P axes become splits (each choice of tensor axis tried) or B,
    whichever sends fewest bytes in all, then the blocks go point to point."""
    a, b = as_nd(src_pl, src), as_nd(dst_pl, dst)
    choices = [a] if not a.has_partial else \
        [_without_partial(a, sym) for sym in [S.S(i) for i in range(len(shape))] + [S.B]]
    best = None
    for reduced in choices:
        steps = plan(src_pl, a, reduced, shape, itemsize) if reduced != a else ()
        moves = transfers(src_pl, reduced, dst_pl, b, shape)
        sent = {}
        for s in steps:
            _add_all(sent, step_traffic(s, itemsize, _device))
        _add_all(sent, _transfer_traffic(src_pl, dst_pl, moves, itemsize, _device))
        cost = max(sent.values(), default=0)
        if best is None or cost < best[0]:
            best = (cost, Relayout(steps, reduced, tuple(moves), frozenset(_zero_devices(dst_pl, b))))
    return best[1]


# --- the rows -------------------------------------------------------------------------------------------------------
def _shape_of(shape):
    return T._as_vector(shape)


def _steps_traffic(m, shape, itemsize, rank_of):
    out = {}
    for step in plan(m.src_pl, as_nd(m.src_pl, m.src), as_nd(m.dst_pl, m.dst), _shape_of(shape), itemsize):
        _add_all(out, step_traffic(step, itemsize, rank_of))
    return out


def _relayout_traffic(m, shape, itemsize, rank_of):
    r = relayout(m.src_pl, m.src, m.dst_pl, m.dst, _shape_of(shape), itemsize)
    out = {}
    for step in r.steps:
        _add_all(out, step_traffic(step, itemsize, rank_of))
    return _add_all(out, _transfer_traffic(m.src_pl, m.dst_pl, r.transfers, itemsize, rank_of))


def _mesh_size(pl):
    n = 1
    for h in pl.hierarchy:
        n *= h
    return n


class MeshTransition(T.Transition):
    """A row of n-D moves: its figure for a size alone is that of a blob whose every split divides evenly, and it
    describes itself by its steps (`describe`)."""

    __slots__ = ()

    def cost(self, move, meta_or_size):
        if hasattr(meta_or_size, "shape"):
            return T._cost(self, move, meta_or_size)
        axes = [s.axis for side in (move.src, move.dst) for s in as_nd_any(side) if S.is_split(s)]
        even = _mesh_size(move.src_pl) * _mesh_size(move.dst_pl) * 2
        shape = (even,) * (max(axes, default=0) + 1)
        sent = self.plan_traffic(move, shape, 1, _device)
        return float(max(sent.values(), default=0)) * float(meta_or_size) / T._elements(shape)

    def describe(self, move, meta):
        """The steps of the move for a blob with `meta`, as explain's collective column shows them."""
        return describe(move, tuple(meta.shape), T._itemsize(meta))


def as_nd_any(sbp):
    return sbp.sbps if S.is_nd(sbp) else (sbp,)


MESH_STEPS = MeshTransition("mesh-steps", lambda m: m.nd and m.same, _steps_traffic)
MESH_RELAYOUT = MeshTransition("mesh-relayout", lambda m: m.nd and not m.same, _relayout_traffic)


ROWS = (MESH_STEPS, MESH_RELAYOUT)
T.MESH_ROWS.update(same=MESH_STEPS, elsewhere=MESH_RELAYOUT)


# --- what explain shows --------------------------------------------------------------------------------------------
def _groups_text(step):
    """The groups of a step: ranks where each is one device (the global-tensor API), else machine:device."""
    pairs = [p for g in step.groups for p in g.placement.pairs]
    one_device = all(d == 0 for _, d in pairs)
    return " ".join("{%s}" % ",".join(str(m) if one_device else "%d:%d" % (m, d) for m, d in g.placement.pairs)
                    for g in step.groups)


def step_lines(move, shape, itemsize):
    """[(text, bytes)] of each step of an n-D move: mesh axis, symbol change, collective, groups, the busiest rank's
    bytes in it (the point-to-point stage of a relayout is one line)."""
    shape = _shape_of(tuple(shape))
    if move.same:
        steps, moves = plan(move.src_pl, as_nd(move.src_pl, move.src), as_nd(move.dst_pl, move.dst), shape,
                            itemsize), None
    else:
        r = relayout(move.src_pl, move.src, move.dst_pl, move.dst, shape, itemsize)
        steps, moves = r.steps, r.transfers
    out = []
    for s in steps:
        sent = max(step_traffic(s, itemsize, _device).values(), default=0)
        out.append(("mesh axis %d: %r -> %r %s over %s" % (s.axis, s.src, s.dst, s.collective, _groups_text(s)),
                    sent))
    if moves is not None:
        sent = max(_transfer_traffic(move.src_pl, move.dst_pl, moves, itemsize, _device).values(), default=0)
        pairs = sum(1 for t in moves if move.src_pl.pairs[t.src] != move.dst_pl.pairs[t.dst])
        out.append(("point to point: %d block%s between ranks" % (pairs, "" if pairs == 1 else "s"), sent))
    return out


def describe(move, shape, itemsize):
    """The collective column of an n-D boxing: its steps' collectives, with their mesh axes."""
    shape = _shape_of(tuple(shape))
    if move.same:
        steps = plan(move.src_pl, as_nd(move.src_pl, move.src), as_nd(move.dst_pl, move.dst), shape, itemsize)
        return " + ".join("%s(axis %d)" % (s.collective, s.axis) for s in steps) or "identity"
    r = relayout(move.src_pl, move.src, move.dst_pl, move.dst, shape, itemsize)
    parts = ["%s(axis %d)" % (s.collective, s.axis) for s in r.steps]
    parts.append("slice-boxing")
    return " + ".join(parts)
