"""Boxing runs what it plans: every row of the transition table, on 2, 3 and 4 ranks simulated in one process
(`comm/simulated.py`), each rank's comm wrapped in a recording comm (`comm/recording.py`).

For every move between the placements below (the same ranks, one rank <-> several, disjoint stages, overlapping
rank sets) and every pair of S(0), S(1), B, P — on an evenly divisible and an uneven shape, in several dtypes — it
checks that
(a) every rank's destination pieces are what numpy makes of the logical value (a slice, the whole, addends that sum
    to it);
(b) the bytes each rank sent, counted by the recording comm from the arrays each call was given, are the row's
    traffic for that rank, their maximum is the row's cost, and that is the figure `explain` reports for the boxing
    the compiler inserts;
(c) each rank called the collective its row names and nothing else, over exactly the ranks that hold or need
    pieces, at most once per stage — and no rank that neither sends nor receives made any call.
A few rows are also priced against formulas written here (2B(p-1)/p for an all-reduce ...). Machines holding several
devices (the legacy API) are checked the same way: one comm call per stage, bytes per process.
"""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import transitions as T
from oneflow_compat.runtime import boxing


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from boxing_recording import explained, run_moves  # noqa: E402

SBPS = [S.S(0), S.S(1), S.B, S.P]
NAMES = {S.S(0): "S0", S.S(1): "S1", S.S(2): "S2", S.B: "B", S.P: "P"}
DTYPES = [dtypes.float64, dtypes.float32, dtypes.int64, dtypes.uint8, dtypes.float16]
SHAPES = {"even": (12, 24), "uneven": (7, 5)}

# which comm calls a row may make (its collective, and nothing else)
CALLS = {
    "all-reduce": {"allreduce"}, "reduce-scatter": {"reduce_scatter"}, "all-gather": {"allgatherv"},
    "all-to-all": {"alltoallv"}, "reduce": {"reduce"}, "broadcast": {"bcast"}, "gather": {"gatherv"},
    "slice-boxing": {"exchange"}, "slice-boxing-add": {"exchange"},
    "reduce-scatter+slice-boxing": {"reduce_scatter", "exchange"},
    "identity": set(), "local-slice": set(), "b2p-zeros": set(), "s2p-zeros": set(),
}


def cpu(ranks, devices=1):
    return Placement("cpu", [(r, d) for r in ranks for d in range(devices)])


def placements(n, devices=1):
    """The same ranks, one rank, stages, overlapping sets (deduplicated)."""
    sets = [range(n), [0], [n - 1], range(n - 1), range(1, n)]
    if n == 4:
        sets.append([1, 3])
    out = {}
    for s in sets:
        pl = cpu(s, devices)
        out[pl.pairs] = pl
    return list(out.values())


def _label(move, shape, dtype):
    return "%s %s %s" % (move, "x".join(map(str, shape)), dtype.name)


# --- the reference: pieces from a logical value, and what the destination must hold ---------------------------------
def _logical(rng, shape, dtype):
    if dtype.np == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-20, 20, shape).astype(dtype.np)  # integers: sums are exact in every order


def _source_pieces(rng, logical, pl, sbp):
    n = pl.parallel_num
    if n == 1 or sbp == S.B:
        return [logical.copy() for _ in range(n)]
    if S.is_split(sbp):
        return [logical[S.local_slices(logical.shape, sbp, i, n)].copy() for i in range(n)]
    if logical.dtype == np.bool_:  # addends or-ed: some true bits spread over the devices
        pieces = [rng.integers(0, 2, logical.shape).astype(bool) & logical for _ in range(n)]
        pieces[0] = pieces[0] | logical
        return pieces
    pieces = [rng.integers(-20, 20, logical.shape).astype(logical.dtype) for _ in range(n)]
    pieces[0] = (logical - sum(pieces[1:])).astype(logical.dtype)
    return pieces


def check_destination(pieces, logical, pl, sbp, what):
    """`pieces`: {device index: array} over every rank."""
    n = pl.parallel_num
    assert sorted(pieces) == list(range(n)), what
    for i, p in pieces.items():
        assert p.dtype == logical.dtype, what
    if n == 1 or sbp == S.B:
        for p in pieces.values():
            np.testing.assert_array_equal(p, logical, err_msg=what)
    elif sbp == S.P:
        total = pieces[0].copy()
        for i in range(1, n):
            total = total | pieces[i] if total.dtype == np.bool_ else total + pieces[i]
        np.testing.assert_array_equal(total, logical, err_msg=what)
    else:
        for i, p in pieces.items():
            np.testing.assert_array_equal(p, logical[S.local_slices(logical.shape, sbp, i, n)], err_msg=what)


# --- explain's figure: the boxing the compiler inserts for a to_global of this move --------------------------------
def explained_bytes(move, meta):
    report = explained(move, meta)
    return report.boxing[0].bytes if report.boxing else 0.0


# --- the cases: every move between the placements, each on a simulated world (boxing_recording.run_moves) ------------
def _cases(n, devices=1, shapes=SHAPES, sbps=SBPS, seed=0):
    rng = np.random.default_rng(seed)
    cases, k = [], 0
    for shape in shapes.values():
        for a in placements(n, devices):
            for b in placements(n, devices):
                for s in sbps:
                    for d in sbps:
                        move = T.Move(a, s, b, d)
                        dtype = DTYPES[k % len(DTYPES)]
                        k += 1
                        logical = _logical(rng, shape, dtype)
                        cases.append((move, logical, _source_pieces(rng, logical, a, move.src)))
    return cases


def _members(move):
    """The ranks that hold or need pieces of the move."""
    return sorted(set(T.owners(move.src_pl)) | set(T.owners(move.dst_pl)))


def check_case(move, logical, pieces, calls, by_machine=False):
    shape, meta = logical.shape, TensorMeta(logical.shape, dtypes.from_numpy(logical.dtype))
    what = _label(move, shape, meta.dtype)
    t = T.transition_of(move)
    # (a) the numbers
    check_destination(pieces, logical, move.dst_pl, move.dst, what)
    # (b) bytes: recorded == the row's traffic per rank; the busiest rank's == the cost == explain's figure
    sent = {r: sum(c.sent for c in cs if not c.control) for r, cs in calls.items()}
    planned = T.traffic(move, shape, logical.itemsize, by_machine=by_machine)
    want = {}
    for key, nbytes in planned.items():  # keys: machines, or (machine, device) pairs of one device per rank
        r = key if by_machine else key[0]
        want[r] = want.get(r, 0) + nbytes
    assert {r: b for r, b in sent.items() if b} == want, what
    if not by_machine:
        assert T.cost(move.src_pl, move.src, move.dst_pl, move.dst, meta) == max(sent.values(), default=0), what
        assert explained_bytes(move, meta) == max(sent.values(), default=0), what
    # (c) the row's collective only, over the ranks concerned, at most once per stage; no control traffic
    members = _members(move)
    for r, cs in calls.items():
        assert not [c for c in cs if c.control], (what, r, cs)
        names = [c.name for c in cs]
        assert set(names) <= CALLS[t.collective], (what, r, names)
        assert len(names) == len(set(names)), (what, r, names)
        if r not in members:
            assert names == [], (what, r, names)
        for c in cs:
            if c.name != "exchange":
                expected = T.owners(move.src_pl) if c.name in ("allreduce", "reduce_scatter", "allgatherv",
                                                                 "alltoallv") else members
                assert list(c.ranks) == expected, (what, r, c)
            else:
                assert r in c.ranks and set(c.ranks) <= set(members), (what, r, c)
    return t


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_row_on_simulated_ranks(n):
    cases = _cases(n, seed=n)
    results = run_moves(n, cases)
    reached = set()
    for (move, logical, _), (pieces, calls) in zip(cases, results):
        reached.add(check_case(move, logical, pieces, calls).collective)
    rows = {t.collective for t in T.TABLE if not t.fallback}
    if n == 2:  # two ranks have no two different placements of several devices each
        rows -= {"reduce-scatter+slice-boxing", "slice-boxing-add"}
    assert reached == rows, reached


def test_three_dimensional_and_other_axes():
    shapes = {"3d": (5, 3, 7)}
    sbps = [S.S(0), S.S(2), S.B, S.P]
    cases = _cases(3, shapes=shapes, sbps=sbps, seed=7)
    for (move, logical, _), (pieces, calls) in zip(cases, run_moves(3, cases)):
        check_case(move, logical, pieces, calls)


@pytest.mark.parametrize("n,devices", [(2, 2), (3, 2)])
def test_machines_with_several_devices_are_hierarchical(n, devices):
    """The legacy API: a rank is a machine with several devices. Pieces inside a machine are combined in memory,
    then ONE comm call per stage carries what crosses machines; the recorded bytes are the row's traffic counted
    by machine."""
    cases = _cases(n, devices, shapes={"uneven": (7, 5)}, seed=11)
    for (move, logical, _), (pieces, calls) in zip(cases, run_moves(n, cases)):
        check_case(move, logical, pieces, calls, by_machine=True)


# --- the figures themselves, against formulas written here ---------------------------------------------------------
@pytest.mark.parametrize("p", [2, 3, 4])
def test_costs_of_even_blobs_are_the_textbook_figures(p):
    pl = cpu(range(p))
    meta = TensorMeta((12, 24), dtypes.float32)
    size = 12 * 24 * 4
    ring = size * (p - 1) / p

    def cost(a, s, b, d):
        return T.cost(a, s, b, d, meta)

    assert cost(pl, S.P, pl, S.B) == 2 * ring  # reduce-scatter, then all-gather
    assert cost(pl, S.P, pl, S.S(0)) == ring  # not an all-reduce: half of it
    assert cost(pl, S.S(1), pl, S.B) == ring
    assert cost(pl, S.S(0), pl, S.S(1)) == size * (p - 1) / p ** 2  # not an all-gather: p times less
    for free in ((S.B, S.S(0)), (S.B, S.P), (S.S(0), S.P), (S.S(1), S.S(1))):
        assert cost(pl, free[0], pl, free[1]) == 0
    one, other = cpu([0]), cpu([p - 1])
    assert cost(pl, S.P, one, S.B) == size  # reduce: every other rank sends its addend
    assert cost(one, S.B, pl, S.B) == (p - 1) * size  # broadcast from rank 0 to the p - 1 others
    assert cost(pl, S.S(0), one, S.B) == size / p  # gather: each rank sends its rows
    assert cost(one, S.B, pl, S.S(0)) == size * (p - 1) / p  # scatter: rank 0 sends the others their rows
    assert cost(one, S.B, other, S.B) == size  # a stage change between two ranks: the blob, once
    if p > 2:
        head, tail = cpu(range(p - 1)), cpu(range(1, p))
        # stages over overlapping ranks: only the rows that change rank move
        rows_head, rows_tail = T.balanced_ranges(12, p - 1), T.balanced_ranges(12, p - 1)
        moved = []
        for s, (a0, a1) in enumerate(rows_head):
            kept = [(max(a0, b0), min(a1, b1)) for d, (b0, b1) in enumerate(rows_tail) if d + 1 == s]
            moved.append((a1 - a0 - sum(max(0, y - x) for x, y in kept)) * 24 * 4)
        assert cost(head, S.S(0), tail, S.S(0)) == max(moved)


def test_uneven_splits_report_the_busiest_rank():
    pl = cpu(range(3))
    meta = TensorMeta((7, 5), dtypes.float64)
    rows = [3, 2, 2]
    # all-gather: each rank sends its rows to the two others; rank 0 holds 3 rows
    assert T.cost(pl, S.S(0), pl, S.B, meta) == 2 * 3 * 5 * 8
    assert T.traffic(T.Move(pl, S.S(0), pl, S.B), (7, 5), 8) == {(r, 0): 2 * n * 5 * 8 for r, n in enumerate(rows)}
    # reduce-scatter: each rank sends the others' rows of its addend: the ranks with 2 rows send 5
    assert T.cost(pl, S.P, pl, S.S(0), meta) == 5 * 5 * 8


def test_the_table_describes_every_row_and_the_runtime_runs_each():
    from oneflow_compat.ops import mesh_transitions  # the n-D rows (tests/test_boxing_nd.py runs them)

    assert set(boxing.EXECUTORS) == {t.collective for t in T.TABLE + mesh_transitions.ROWS}
    assert set(CALLS) | {"via-logical"} == {t.collective for t in T.TABLE}
    assert [t.collective for t in T.TABLE if t.fallback] == ["via-logical"]
    for t in T.TABLE:
        assert "`%s`" % t.collective in T.__doc__ or t.collective in T.__doc__
