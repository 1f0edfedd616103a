"""The executors of the n-D rows of the transition table (`ops/mesh_transitions.py` plans and prices them).

`mesh-steps`: each step of the plan is a 1-D row run by every group of devices along one mesh axis — the very
executor of that row (`runtime/boxing.py`), built on the group's 1-D placement and the part of the tensor the group
holds, so it makes its one collective over the group's ranks (a sub-group of the mesh). A process runs the groups it
has devices in, in one order on every process (row-major over the other mesh coordinates), so that collectives over
overlapping sub-groups pair up alike everywhere.

`mesh-relayout`: the source's partial sums reduced by such steps, then one exchange of the planned blocks between
processes (blocks inside a process are views); destination devices off coordinate 0 of a P axis hold zeros.
"""
import numpy as np

from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import mesh_transitions as MT
from oneflow_compat.ops import transitions as T
from oneflow_compat.runtime import boxing


def _itemsize(site):
    return site.np_dtype.itemsize if site.np_dtype != np.dtype(object) else 8


def _step_runner(site, step, owned):
    """The function of one step: this process's pieces of the mesh ({device: piece}) -> the new ones."""
    rt = site.rt
    parts = []
    for g in step.groups:
        local = [d for d, pair in zip(g.devices, g.placement.pairs) if pair[0] == rt.machine_id]
        if not local:
            continue
        move = T.Move(g.placement, step.src, g.placement, step.dst)
        row = T.transition_of(move)
        sub = boxing.Site(rt, move, g.shape, site.np_dtype, owned)
        parts.append((local, boxing.EXECUTORS[row.collective](sub)))

    def run(pieces):
        out = {}
        for local, fn in parts:
            got = fn(*[pieces[d] for d in local])
            out.update(zip(local, got))
        return out
    return run


def _runners(site, steps):
    return [_step_runner(site, step, site.owned and k == 0) for k, step in enumerate(steps)]


def _shape(site):
    return T._as_vector(site.shape)


def mesh_steps(site):
    m = site.move
    shape = _shape(site)
    steps = MT.plan(m.src_pl, MT.as_nd(m.src_pl, m.src), MT.as_nd(m.dst_pl, m.dst), shape, _itemsize(site))
    runners = _runners(site, steps)
    src_idx, dst_idx, scalar = site.src_idx, site.dst_idx, not site.shape

    def run_steps(*pieces):
        if scalar:
            pieces = [p.reshape(1) for p in pieces]
        held = dict(zip(src_idx, pieces))
        for run in runners:
            held = run(held)
        out = tuple(held[d] for d in dst_idx)
        return tuple(o.reshape(()) for o in out) if scalar else out
    return run_steps


def mesh_relayout(site):
    m = site.move
    shape = _shape(site)
    plan = MT.relayout(m.src_pl, m.src, m.dst_pl, m.dst, shape, _itemsize(site))
    runners = _runners(site, plan.steps)
    transfers = list(plan.transfers)
    src_pl, dst_pl = m.src_pl, m.dst_pl
    have = [S.region(shape, plan.reduced, s, src_pl.parallel_num) for s in range(src_pl.parallel_num)]
    stage = boxing.Site(site.rt, T.Move(src_pl, plan.reduced, dst_pl, m.dst), shape, site.np_dtype)
    local, outgoing, incoming = boxing._point_to_point(stage, transfers, have)
    need_layout = MT._without_partial(MT.as_nd(dst_pl, m.dst), S.B)
    need = {d: S.region(shape, need_layout, d, dst_pl.parallel_num) for d in site.dst_idx}
    by_dst = {d: [k for k, t in enumerate(transfers) if t.dst == d] for d in site.dst_idx}
    xp, dtype, src_idx, scalar = site.xp_dst, site.np_dtype, site.src_idx, not site.shape

    def relayout(*pieces):
        if scalar:
            pieces = [p.reshape(1) for p in pieces]
        held = dict(zip(src_idx, pieces))
        for run in runners:
            held = run(held)
        parts = boxing._exchanged(stage, transfers, have, [held[d] for d in src_idx], local, outgoing, incoming)
        out = []
        for d in site.dst_idx:
            r = need[d]
            size = tuple(b - a for a, b in r)
            if d in plan.zeros:
                out.append(xp.zeros(size, dtype))
                continue
            ks = by_dst[d]
            if len(ks) == 1 and transfers[ks[0]].region == r:
                out.append(parts[ks[0]])
                continue
            piece = xp.empty(size, dtype)
            for k in ks:
                piece[T.relative(transfers[k].region, r)] = parts[k]
            out.append(piece)
        return tuple(o.reshape(()) for o in out) if scalar else tuple(out)
    return relayout


boxing.EXECUTORS.update({"mesh-steps": mesh_steps, "mesh-relayout": mesh_relayout})
