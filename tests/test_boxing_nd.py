"""Boxing on n-D meshes (`ops/mesh_transitions.py` plans, `runtime/mesh_boxing.py` runs), on ranks simulated in one
process (`comm/simulated.py`), each rank's comm wrapped in a recording comm (`comm/recording.py`).

For every move between {B, S(0), S(1), P}^2 on a 2 x 2 mesh, and between the mesh and 1-D placements (the same four
ranks, a pair, one rank, three ranks) in both directions, on an evenly divisible and an uneven shape, it checks that
(a) every destination piece is what numpy makes of the logical value: each device's block of it, nested along the
    mesh axes (OneFlow's GetTensorSliceView4ParallelRank: mesh axis 0 cuts first), with addends that sum to it along
    the P axes;
(b) the bytes each rank sent, as the recording comm counts them, are the move's planned traffic for that rank, their
    maximum is its cost, and that is the figure `explain` reports for the boxing the compiler inserts;
(c) each collective runs over one group of the step that names it: the ranks along one mesh axis (a sub-group of the
    mesh), never the whole mesh.
A 3-D mesh (8 ranks) and machines holding several devices of a mesh (the legacy API) are checked the same way.
"""
import itertools
import os
import sys

import numpy as np
import pytest

from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import mesh_transitions as MT
from oneflow_compat.ops import transitions as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from boxing_recording import explained, run_moves  # noqa: E402

SBPS = [S.S(0), S.S(1), S.B, S.P]
SHAPES = {"even": (8, 12), "uneven": (7, 5)}
DTYPES = [np.float64, np.int64, np.float32, np.int32]


def cpu(ranks, hierarchy=None, devices=1):
    return Placement("cpu", [(r, d) for r in ranks for d in range(devices)], hierarchy=hierarchy)


MESH = cpu(range(4), (2, 2))
LINES = [cpu(range(4)), cpu([0, 1]), cpu([2]), cpu([1, 2, 3])]


# --- the reference, written here: each device's block of a logical value, addends along P axes ---------------------
def coords(i, mesh):
    out = []
    for m in reversed(mesh):
        out.append(i % m)
        i //= m
    return tuple(reversed(out))


def block(shape, sbps, mesh, i):
    """Device i's block: mesh axis 0 cuts first, each axis cuts what the axes before it left (balanced: the first
    n % k parts one longer)."""
    ranges = [[0, n] for n in shape]
    for s, m, c in zip(sbps, mesh, coords(i, mesh)):
        if isinstance(s, S.Split):
            lo, hi = ranges[s.axis]
            base, extra = divmod(hi - lo, m)
            start = lo + c * base + min(c, extra)
            ranges[s.axis] = [start, start + base + (1 if c < extra else 0)]
    return tuple(slice(a, b) for a, b in ranges)


def layout_of(pl, sbp):
    """(symbols, mesh) of a layout: a 1-D SBP is a mesh of one axis."""
    if S.is_nd(sbp):
        return sbp.sbps, sbp.mesh
    return (sbp,), (pl.parallel_num,)


def _split_key(c, sbps):
    """A device's coordinates on the mesh axes that cut blocks (its block's identity)."""
    return tuple(x for x, s in zip(c, sbps) if isinstance(s, S.Split))


def source_pieces(rng, logical, pl, sbp):
    """Each device's block; along the P axes random addends of it, the same on every copy along the B axes."""
    sbps, mesh = layout_of(pl, sbp)
    n = pl.parallel_num
    pieces = [logical[block(logical.shape, sbps, mesh, i)].copy() for i in range(n)]
    p_axes = [k for k, s in enumerate(sbps) if s == S.P]
    if n == 1 or not p_axes:
        return pieces
    groups = {}  # block -> P coordinates -> devices
    for i in range(n):
        c = coords(i, mesh)
        groups.setdefault(_split_key(c, sbps), {}).setdefault(tuple(c[k] for k in p_axes), []).append(i)
    for by_p in groups.values():
        keys = sorted(by_p)
        first = by_p[keys[0]][0]
        total = np.zeros_like(pieces[first])
        for key in keys[1:]:
            addend = rng.integers(-9, 9, total.shape).astype(logical.dtype)
            total += addend
            for i in by_p[key]:
                pieces[i] = addend.copy()
        for i in by_p[keys[0]]:
            pieces[i] = pieces[i] - total
    return pieces


def check_destination(pieces, logical, pl, sbp, what):
    """Every piece has its block's shape and dtype; copies along the B axes agree; along the P axes the addends
    (of the copies at B coordinate 0) sum to the block; without P every piece is its block."""
    sbps, mesh = layout_of(pl, sbp)
    n = pl.parallel_num
    assert sorted(pieces) == list(range(n)), what
    blocks = [logical[block(logical.shape, sbps, mesh, i)] for i in range(n)]
    for i in range(n):
        assert pieces[i].shape == blocks[i].shape and pieces[i].dtype == logical.dtype, (what, i)
    p_axes = [k for k, s in enumerate(sbps) if s == S.P]
    if n == 1 or not p_axes:
        for i in range(n):
            np.testing.assert_array_equal(pieces[i], blocks[i], err_msg="%s device %d" % (what, i))
        return
    b_axes = [k for k, s in enumerate(sbps) if s == S.B]
    sums = {}
    for i in range(n):
        c = coords(i, mesh)
        j = int(np.ravel_multi_index([0 if k in b_axes else x for k, x in enumerate(c)], mesh))
        np.testing.assert_array_equal(pieces[i], pieces[j], err_msg="%s B copies %d %d" % (what, i, j))
        if i == j:
            key = _split_key(c, sbps)
            sums[key] = (sums[key][0] + pieces[i], i) if key in sums else (pieces[i].copy(), i)
    for total, i in sums.values():
        np.testing.assert_array_equal(total, blocks[i], err_msg="%s addends of device %d's block" % (what, i))


# --- the moves ------------------------------------------------------------------------------------------------------
def nd(sbps, pl):
    return S.nd(sbps, pl.hierarchy)


def mesh_moves():
    """(src placement, src sbp, dst placement, dst sbp) of every move the tests cover on the 2 x 2 mesh."""
    pairs = list(itertools.product(SBPS, SBPS))
    moves = [(MESH, nd(a, MESH), MESH, nd(b, MESH)) for a in pairs for b in pairs]
    for line in LINES:
        for a in pairs:
            for s in SBPS:
                moves.append((MESH, nd(a, MESH), line, s))
                moves.append((line, s, MESH, nd(a, MESH)))
    return moves


def make_cases(moves, shape, seed):
    rng = np.random.default_rng(seed)
    cases = []
    for k, (a, s, b, d) in enumerate(moves):
        dtype = DTYPES[k % len(DTYPES)]
        logical = rng.integers(-20, 20, shape).astype(dtype)  # integers: sums are exact in any order
        cases.append(((a, s, b, d), logical, source_pieces(rng, logical, a, s)))
    return cases


def check_case(move4, logical, pieces, calls, by_machine=False):
    a, s, b, d = move4
    move = T.Move(a, s, b, d)
    what = "%r %s %s" % (move, "x".join(map(str, logical.shape)), logical.dtype)
    check_destination(pieces, logical, b, d, what)
    sent = {r: sum(c.sent for c in cs if not c.control) for r, cs in calls.items()}
    planned = T.traffic(move, logical.shape, logical.itemsize, by_machine=by_machine)
    want = {}
    for key, nbytes in planned.items():
        r = key if by_machine else key[0]
        want[r] = want.get(r, 0) + nbytes
    assert {r: x for r, x in sent.items() if x} == want, what
    meta = TensorMeta(logical.shape, dtypes.from_numpy(logical.dtype))
    if not by_machine:
        busiest = max(sent.values(), default=0)
        assert T.cost(move.src_pl, move.src, move.dst_pl, move.dst, meta) == busiest, what
        report = explained(move, meta)
        assert (report.boxing[0].bytes if report.boxing else 0) == busiest, what
    if not move.nd:
        return move
    # (c) each collective over one group of a step: a sub-group of the mesh along one axis
    if move.same:
        steps = MT.plan(move.src_pl, MT.as_nd(move.src_pl, move.src), MT.as_nd(move.dst_pl, move.dst),
                        T._as_vector(logical.shape), logical.itemsize)
    else:
        steps = MT.relayout(move.src_pl, move.src, move.dst_pl, move.dst, T._as_vector(logical.shape),
                            logical.itemsize).steps
    groups = {tuple(sorted({m for m, _ in g.placement.pairs})) for st in steps for g in st.groups}
    for r, cs in calls.items():
        for c in cs:
            if c.name != "exchange":
                assert tuple(c.ranks) in groups, (what, r, c, groups)
                assert len(c.ranks) < len(move.src_pl.pairs) or len(move.src_pl.hierarchy) == 1, (what, c)
    return move


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_move_on_a_2x2_mesh_and_to_and_from_lines(shape):
    moves = mesh_moves()
    cases = make_cases(moves, SHAPES[shape], seed=len(shape))
    rows = set()
    for case, (pieces, calls) in zip(cases, run_moves(4, cases, timeout=30)):
        move = check_case(case[0], case[1], pieces, calls)
        rows.add(T.transition_of(move).collective)
    assert {"mesh-steps", "mesh-relayout", "identity"} <= rows, rows


def test_two_mesh_axes_splitting_one_tensor_axis_cut_it_nested():
    """(S(0), S(0)) on 2 x 2 of 7 rows: 4 | 3 first, then 2 | 2 and 2 | 1 — not the 2, 2, 2, 1 of a flat split."""
    sbp = nd((S.S(0), S.S(0)), MESH)
    assert [S.local_shape((7, 3), sbp, i, 4)[0] for i in range(4)] == [2, 2, 2, 1]
    sbp = nd((S.S(0), S.S(0)), cpu(range(6), (2, 3)))
    assert [S.region((11,), sbp, i, 6)[0] for i in range(6)] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10), (10, 11)]
    sbp = nd((S.S(0), S.S(0)), cpu(range(6), (3, 2)))  # 11 over 3: 4, 4, 3; then each over 2
    assert [S.region((11,), sbp, i, 6)[0] for i in range(6)] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10), (10, 11)]
    sbp = nd((S.S(0), S.S(0)), cpu(range(4), (2, 2)))
    assert [S.region((10,), sbp, i, 4)[0] for i in range(4)] == [(0, 3), (3, 5), (5, 8), (8, 10)]
    assert [block((10,), sbp.sbps, (2, 2), i) for i in range(4)] == [(slice(a, b),) for a, b in
                                                                     [(0, 3), (3, 5), (5, 8), (8, 10)]]


def test_steps_go_one_mesh_axis_at_a_time_over_its_groups():
    shape, itemsize = (8, 12), 4
    move = T.Move(MESH, nd((S.S(0), S.S(0)), MESH), MESH, nd((S.S(1), S.S(0)), MESH))
    steps = MT.plan(MESH, move.src, move.dst, shape, itemsize)
    # axis 0 cannot change S(0) while axis 1 splits rows too: axis 1 gathers, axis 0 all-to-alls, axis 1 re-slices
    assert [(s.axis, s.src, s.dst, s.collective) for s in steps] == [
        (1, S.S(0), S.B, "all-gather"), (0, S.S(0), S.S(1), "all-to-all"), (1, S.B, S.S(0), "local-slice")]
    assert [[tuple(m for m, _ in g.placement.pairs) for g in s.groups] for s in steps] == [
        [(0, 1), (2, 3)], [(0, 2), (1, 3)], [(0, 1), (2, 3)]]
    # bytes: the gather sends its quarter (2x12) to its partner; the all-to-all sends the columns of its half
    # that its partner takes (4x6); the slice sends nothing
    assert [max(MT.step_traffic(s, itemsize, lambda p: p).values(), default=0) for s in steps] == [
        2 * 12 * 4, 4 * 6 * 4, 0]
    assert T.cost(MESH, move.src, MESH, move.dst, TensorMeta(shape, dtypes.float32)) == 96 + 96
    # P on both axes -> S(0), B: a reduce-scatter along one axis, an all-reduce of the half along the other
    steps = MT.plan(MESH, nd((S.P, S.P), MESH), nd((S.S(0), S.B), MESH), shape, itemsize)
    assert sorted((s.axis, s.collective) for s in steps) == [(0, "reduce-scatter"), (1, "all-reduce")]
    # the moves the compiler meets most: data-parallel gradients of a model-parallel weight
    m = T.Move(MESH, nd((S.P, S.S(1)), MESH), MESH, nd((S.B, S.S(1)), MESH))
    assert T.transition_of(m).describe(m, TensorMeta(shape, dtypes.float32)) == "all-reduce(axis 0)"
    assert T.cost(MESH, m.src, MESH, m.dst, TensorMeta(shape, dtypes.float32)) == 2 * (8 * 6 * 4) / 2


def test_plain_moves_take_the_one_dimensional_rows():
    """B (or P) on every mesh axis lays each device out as the 1-D layout does: the move is a 1-D one."""
    line = cpu(range(4))
    for src, dst, row in [((S.B, S.B), S.S(0), "local-slice"), ((S.P, S.P), S.B, "all-reduce"),
                          ((S.B, S.B), S.B, "identity")]:
        m = T.Move(MESH, nd(src, MESH), line, dst)
        assert not m.nd and T.transition_of(m).collective == row, (src, dst)
    m = T.Move(line, S.B, MESH, nd((S.S(0), S.S(1)), MESH))  # lifted onto the mesh: local slices, nothing sent
    assert m.nd and m.same and T.cost(line, S.B, MESH, m.dst, TensorMeta((8, 12), dtypes.float32)) == 0
    one = cpu([0, 1, 2, 3], (1, 4))  # a mesh axis of size one: a line
    assert not T.Move(one, S.nd((S.S(0), S.S(1)), (1, 4)), line, S.S(1)).nd


def test_a_three_dimensional_mesh():
    mesh = cpu(range(8), (2, 2, 2))
    rng = np.random.default_rng(5)
    combos = [((S.S(0), S.S(0), S.S(1)), (S.S(1), S.P, S.S(0))), ((S.P, S.B, S.S(2)), (S.B, S.S(2), S.B)),
              ((S.S(1), S.P, S.P), (S.S(0), S.S(0), S.S(0))), ((S.B, S.S(1), S.P), (S.S(2), S.B, S.B))]
    moves = [(mesh, S.nd(a, (2, 2, 2)), mesh, S.nd(b, (2, 2, 2))) for a, b in combos]
    moves += [(mesh, S.nd(a, (2, 2, 2)), cpu(range(1, 6)), S.S(2)) for a, _ in combos]
    moves += [(cpu([0, 5]), S.P, mesh, S.nd(b, (2, 2, 2))) for _, b in combos]
    cases = []
    for k, (a, s, b, d) in enumerate(moves):
        logical = rng.integers(-9, 9, (5, 6, 7)).astype(np.int64)
        cases.append(((a, s, b, d), logical, source_pieces(rng, logical, a, s)))
    for case, (pieces, calls) in zip(cases, run_moves(8, cases, timeout=30)):
        check_case(case[0], case[1], pieces, calls)


def test_machines_holding_several_devices_of_a_mesh():
    """The legacy API: 2 machines x 2 devices as a 2 x 2 mesh (`flow.scope.placement("cpu", ["0:0-1", "1:0-1"],
    (2, 2))`): pieces inside a machine are combined in memory; the bytes are the move's traffic per machine."""
    mesh = cpu([0, 1], (2, 2), devices=2)
    line = cpu([0, 1], devices=2)
    pairs = list(itertools.product(SBPS, SBPS))
    moves = [(mesh, S.nd(a, (2, 2)), mesh, S.nd(b, (2, 2))) for a, b in itertools.product(pairs, pairs)
             if (a, b) != (a, a)][::3]
    moves += [(mesh, S.nd(a, (2, 2)), line, s) for a in pairs for s in SBPS][::2]
    cases = make_cases(moves, (7, 5), seed=3)
    for case, (pieces, calls) in zip(cases, run_moves(2, cases, timeout=30)):
        check_case(case[0], case[1], pieces, calls, by_machine=True)


def test_explain_lists_each_step_with_its_groups_and_bytes():
    move = T.Move(MESH, nd((S.P, S.S(0)), MESH), MESH, nd((S.B, S.B), MESH))
    report = explained(move, TensorMeta((8, 12), dtypes.float32))
    text = str(report)
    assert "all-reduce(axis 0) + all-gather(axis 1)" in text
    assert "mesh axis 0: P -> B all-reduce over {0,2} {1,3}: 192 bytes" in text
    assert "mesh axis 1: S(0) -> B all-gather over {0,1} {2,3}: 192 bytes" in text
    assert report.boxing[0].bytes == 384
    move = T.Move(MESH, nd((S.P, S.S(1)), MESH), cpu(range(4)), S.S(0))
    text = str(explained(move, TensorMeta((8, 12), dtypes.float32)))
    assert "mesh axis 0: P -> S(0) reduce-scatter over {0,2} {1,3}" in text and "point to point:" in text


def test_explain_step_lines_are_the_bytes_and_groups_of_each_step_as_run():
    """Each step line explain prints (mesh axis, symbols, collective, groups, bytes) against the calls the ranks
    made for that step, in order: its groups are the ranks of those calls, its bytes the most any rank sent."""
    import re

    moves = [(MESH, nd((S.P, S.S(0)), MESH), MESH, nd((S.B, S.B), MESH)),
             (MESH, nd((S.S(0), S.S(0)), MESH), MESH, nd((S.S(1), S.S(0)), MESH)),
             (MESH, nd((S.P, S.S(1)), MESH), cpu(range(4)), S.S(0)),
             (MESH, nd((S.S(1), S.P), MESH), MESH, nd((S.S(0), S.B), MESH))]
    for shape in SHAPES.values():
        rng = np.random.default_rng(1)
        cases = []
        for move in moves:
            logical = rng.integers(-9, 9, shape).astype(np.float32)
            cases.append((move, logical, source_pieces(rng, logical, move[0], move[1])))
        for (move, logical, _), (pieces, calls) in zip(cases, run_moves(4, cases, timeout=30)):
            text = str(explained(T.Move(*move), TensorMeta(shape, dtypes.float32)))
            steps = re.findall(r"^    (mesh axis \d: .* over ((?:\{[\d,]+\} ?)+)|point to point: .*): (\d+) bytes$",
                               text, re.M)
            assert steps, text
            sent = [[c for c in calls[r] if not c.control] for r in range(4)]
            k = 0
            for line, groups, nbytes in steps:
                if int(nbytes) == 0:  # a local slice: no call
                    continue
                step_calls = [cs[k] for cs in sent if k < len(cs)]
                assert max(c.sent for c in step_calls) == int(nbytes), (line, step_calls)
                if groups:
                    want = {tuple(int(x) for x in g.split(",")) for g in re.findall(r"\{([\d,]+)\}", groups)}
                    assert {tuple(c.ranks) for c in step_calls} == want, (line, step_calls)
                k += 1
            assert all(len(cs) == k for cs in sent), (text, sent)  # no call left unexplained


def test_moves_between_meshes_of_other_shapes_and_ranks():
    """n-D <-> m-D between meshes of other shapes and other ranks (2x2, 3x2, 2x3 on ranks 2-7, 2x2x2, 2x4), on an
    uneven shape: a sample of layouts for each pair of meshes, checked as every move above."""
    m22, m32, m23 = cpu(range(4), (2, 2)), cpu(range(6), (3, 2)), cpu(range(2, 8), (2, 3))
    m222, m24 = cpu(range(8), (2, 2, 2)), cpu(range(8), (2, 4))
    rng = np.random.default_rng(0)
    moves = []
    for a, b in [(m22, m32), (m32, m23), (m222, m22), (m22, m222), (m24, m222), (m23, m22)]:
        for _ in range(8):
            s1 = tuple(SBPS[i] for i in rng.integers(0, 4, len(a.hierarchy)))
            s2 = tuple(SBPS[i] for i in rng.integers(0, 4, len(b.hierarchy)))
            moves.append((a, S.nd(s1, a.hierarchy), b, S.nd(s2, b.hierarchy)))
    cases = make_cases(moves, (7, 5), seed=9)
    rows = set()
    for case, (pieces, calls) in zip(cases, run_moves(8, cases, timeout=30)):
        rows.add(T.transition_of(check_case(case[0], case[1], pieces, calls)).collective)
    assert "mesh-relayout" in rows, rows
