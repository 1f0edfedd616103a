"""The transition table (`ops/transitions.py`) on its own: every move the boxing pass can meet has a row, the rows'
names and costs are the documented ones, and a row's executor (`runtime/boxing.py`) gives the same pieces on random
data whether the devices live in one process or in two, with no communication where the cost says none.

Two processes are simulated in one (`comm/simulated.py`: one thread per machine, each with its own `Runtime`), each
comm wrapped in a recording comm; the single-process comm runs the executor where every piece is local.
`tests/test_boxing_bytes.py` holds every row's bytes against what a recording comm counts, on 2, 3 and 4 ranks."""
import numpy as np
import pytest

from oneflow_compat.comm.process_comm import SingleProcessComm
from oneflow_compat.comm.recording import RecordingComm
from oneflow_compat.comm.simulated import SimulatedWorld
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import transitions as T
from oneflow_compat.runtime import boxing as B
from oneflow_compat.runtime.runtime import Runtime

SHAPE = (7, 5)  # uneven balanced splits over 2, 3 and 4 devices along both axes
META = TensorMeta(SHAPE, dtypes.float64)
SIZE = 8 * 7 * 5
SBPS = [S.S(0), S.S(1), S.B, S.P]
NAMES = {S.S(0): "S0", S.S(1): "S1", S.B: "B", S.P: "P", S.M: "M"}


def cpu(*pairs):
    return Placement("cpu", pairs)


def _normal(pl, sbp):
    return S.B if pl.parallel_num == 1 and sbp != S.M else sbp  # what SBP inference gives on one device


# (src, dst) placements of 2 machines x 2 devices: same devices, 1 <-> N, stages, overlaps, machine to machine
ALL4 = cpu((0, 0), (0, 1), (1, 0), (1, 1))
PLACEMENT_PAIRS = [
    (ALL4, ALL4), (cpu((0, 0), (0, 1)), cpu((0, 0), (0, 1))), (cpu((0, 0), (1, 0)), cpu((0, 0), (1, 0))),
    (cpu((0, 0)), ALL4), (ALL4, cpu((1, 1))), (cpu((0, 0), (0, 1)), cpu((1, 0), (1, 1))),
    (cpu((0, 0), (1, 0)), cpu((0, 1), (1, 1))), (cpu((0, 1)), cpu((1, 0))), (cpu((0, 0)), cpu((0, 1))),
    (cpu((0, 0), (0, 1), (1, 0)), cpu((0, 1), (1, 0), (1, 1))), (cpu((1, 1)), cpu((0, 0), (1, 0), (1, 1))),
]
MOVES = [(a, s, b, d) for a, b in PLACEMENT_PAIRS for s in SBPS for d in SBPS]


def _label(move):
    a, s, b, d = move
    return "%s %s -> %s %s" % (a, NAMES[s], b, NAMES[d])


# --- rows: names and costs ---------------------------------------------------------------------------------------
SAME_PLACEMENT = {  # legacy-api.md §2.7
    ("P", "B"): "all-reduce", ("P", "S0"): "reduce-scatter", ("P", "S1"): "reduce-scatter",
    ("S0", "B"): "all-gather", ("S1", "B"): "all-gather", ("B", "S0"): "local-slice", ("B", "S1"): "local-slice",
    ("S0", "S1"): "all-to-all", ("S1", "S0"): "all-to-all", ("B", "P"): "b2p-zeros",
    ("S0", "P"): "s2p-zeros", ("S1", "P"): "s2p-zeros",
}


@pytest.mark.parametrize("p", [2, 3, 4])
def test_same_placement_rows_names_and_bytes(p):
    pl = Placement("cpu", [(0, i) for i in range(p)])
    ring = SIZE * (p - 1) / p  # what each rank sends for an evenly divisible blob of SIZE bytes
    want_bytes = {"all-reduce": 2 * ring, "reduce-scatter": ring, "all-gather": ring, "all-to-all": ring / p,
                  "local-slice": 0.0, "b2p-zeros": 0.0, "s2p-zeros": 0.0, "identity": 0.0}
    for src in SBPS + [S.M]:
        for dst in SBPS + [S.M]:
            name = T.collective_name(pl, src, pl, dst)
            if src == dst:
                want = "identity"
            elif S.M in (src, dst):
                want = "via-logical"
            else:
                want = SAME_PLACEMENT[(NAMES[src], NAMES[dst])]
            assert name == want, (src, dst)
            if want != "via-logical":
                assert T.cost(pl, src, pl, dst, SIZE) == pytest.approx(want_bytes[want], rel=1e-12)


def test_one_device_and_unchanged_layouts_are_the_identity():
    one = cpu((0, 1))
    assert T.lookup(one, S.B, one, S.B) is T.IDENTITY
    assert T.lookup(one, S.M, one, S.B) is T.IDENTITY  # on one device every layout is the one full copy
    for s in SBPS:
        assert T.lookup(ALL4, s, ALL4, s) is T.IDENTITY
    # the same devices under another device tag is a move between placements (host <-> GPU)
    gpu = Placement("gpu", ALL4.pairs)
    assert T.lookup(ALL4, S.B, gpu, S.B).collective == "slice-boxing"


@pytest.mark.parametrize("src_pl,dst_pl", PLACEMENT_PAIRS[3:], ids=[str(p) for p in PLACEMENT_PAIRS[3:]])
def test_placement_change_rows(src_pl, dst_pl):
    for src in SBPS:
        for dst in SBPS:
            s, d = _normal(src_pl, src), _normal(dst_pl, dst)
            t = T.lookup(src_pl, s, dst_pl, d)
            n_src, n_dst = src_pl.parallel_num, dst_pl.parallel_num
            if n_dst == 1 and s == S.P:
                assert t.collective == "reduce"
            elif n_src == 1 and n_dst > 1 and d == S.B:
                assert t.collective == "broadcast"
            elif n_src > 1 and n_dst == 1 and S.is_split(s):
                assert t.collective == "gather"
            elif s == S.P:
                assert t.collective == ("slice-boxing-add" if d == S.P else "reduce-scatter+slice-boxing")
            else:
                assert t.collective == "slice-boxing"
            # free exactly where every destination device already holds what it needs
            cost = T.cost(src_pl, s, dst_pl, d, SIZE)
            if s == S.B and set(dst_pl.pairs) <= set(src_pl.pairs):
                assert cost == 0
            elif not set(dst_pl.pairs) & set(src_pl.pairs):
                assert cost > 0


def test_every_row_is_reached_and_every_move_has_one():
    reached = {T.lookup(a, _normal(a, s), b, _normal(b, d)).collective for a, s, b, d in MOVES}
    reached.add(T.collective_name(ALL4, S.M, ALL4, S.B))  # the named fallback: no SBP pair reaches it
    assert reached == {t.collective for t in T.TABLE}
    assert len({t.collective for t in T.TABLE}) == len(T.TABLE)


# --- executors: in one process vs across processes -----------------------------------------------------------------
def _on_one_machine(pl):
    """The same parallel order with every device on machine 0 (machines ascending, then devices)."""
    return cpu(*[(0, 2 * m + d) for m, d in pl.pairs])


def _source_pieces(rng, logical, pl, sbp):
    n = pl.parallel_num
    if sbp == S.P and n > 1:  # genuine addends
        pieces = [rng.standard_normal(logical.shape) for _ in range(n)]
        pieces[0] = logical - sum(pieces[1:])
        return pieces
    return T.pieces_from_logical(np, logical, sbp, n, range(n))


def _check_logical(pieces, logical, pl, sbp):
    n = pl.parallel_num
    assert sorted(pieces) == list(range(n))
    if sbp == S.P:
        np.testing.assert_allclose(sum(pieces.values()), logical, rtol=1e-12, atol=1e-12)
    for i, p in pieces.items():
        if sbp != S.P:
            np.testing.assert_allclose(p, logical[S.local_slices(logical.shape, sbp, i, n)], rtol=1e-12,
                                       atol=1e-12)


def _attrs(src_pl, src, dst_pl, dst):
    return {"src_placement": src_pl, "src_sbp": src, "dst_placement": dst_pl, "dst_sbp": dst}


def _in_process(src_pl, src, dst_pl, dst, pieces, **kw):
    rt = Runtime(SingleProcessComm(), 0)
    out = B.executor(rt, _attrs(src_pl, src, dst_pl, dst), META, **kw)(*[p.copy() for p in pieces])
    return dict(zip(range(dst_pl.parallel_num), out))


def _across_processes(src_pl, src, dst_pl, dst, pieces, owned=False):
    """Runs the move on 2 simulated processes; returns ({dst index: piece}, {rank: [comm calls]})."""
    world = SimulatedWorld(2, timeout=20)
    comms = [RecordingComm(c) for c in world.comms]

    def rank_main(comm):
        rt = Runtime(comm, comm.rank)
        fn = B.executor(rt, _attrs(src_pl, src, dst_pl, dst), META, owned=owned)
        out = fn(*[pieces[i].copy() for i in rt.local_indices(src_pl)])
        idx = rt.local_indices(dst_pl)
        assert len(out) == len(idx)
        return dict(zip(idx, out)), comm.calls

    results, calls = {}, {}
    for r, (got, rank_calls) in enumerate(world.run(rank_main, comms)):
        results.update(got)
        calls[r] = [c.name for c in rank_calls]
    return results, calls


@pytest.mark.parametrize("move", MOVES, ids=[_label(m) for m in MOVES])
def test_executors_agree_on_random_data(move):
    src_pl, src, dst_pl, dst = move
    src, dst = _normal(src_pl, src), _normal(dst_pl, dst)
    t = T.lookup(src_pl, src, dst_pl, dst)
    rng = np.random.default_rng(len(_label(move)))
    logical = rng.standard_normal(SHAPE)
    pieces = _source_pieces(rng, logical, src_pl, src)
    one_pl, one_dst = _on_one_machine(src_pl), _on_one_machine(dst_pl)
    assert T.lookup(one_pl, src, one_dst, dst) is t  # the row depends on the devices' order, not their machines

    local = _in_process(one_pl, src, one_dst, dst, pieces)
    _check_logical(local, logical, dst_pl, dst)
    # the cross-process executor over the single-process comm, every piece local
    via_comm = _in_process(one_pl, src, one_dst, dst, pieces, over_processes=True)
    remote, calls = _across_processes(src_pl, src, dst_pl, dst, pieces)
    for other in (via_comm, remote):
        assert sorted(other) == sorted(local)
        for i in local:
            np.testing.assert_allclose(np.asarray(other[i]), np.asarray(local[i]), rtol=1e-12, atol=1e-12)
    # hierarchical: at most one comm call per process and stage; none where the table says the move is free
    stages = 2 if t.collective == "reduce-scatter+slice-boxing" else 1
    assert all(len(c) <= stages for c in calls.values()), calls
    if t.cost(T.Move(src_pl, src, dst_pl, dst), META) == 0 and t.cost(T.Move(src_pl, src, dst_pl, dst), SIZE) == 0:
        assert calls == {0: [], 1: []}
    elif set(src_pl.machines) | set(dst_pl.machines) == {0, 1} and "slice-boxing" not in t.collective:
        assert [len(calls[0]), len(calls[1])] == [1, 1], calls


def test_free_paths_do_not_copy():
    pl = cpu((0, 0), (0, 1), (0, 2))
    x = np.arange(35.0).reshape(SHAPE)
    split = T.pieces_from_logical(np, x, S.S(1), 3, range(3))
    out = _in_process(pl, S.S(1), pl, S.S(1), split)  # the same split: the pieces themselves
    rt = Runtime(SingleProcessComm(), 0)
    for kw in ({}, {"over_processes": True}):
        same = B.executor(rt, _attrs(pl, S.S(1), pl, S.S(1)), META, **kw)(*split)
        assert all(a is b for a, b in zip(same, split))
        sliced = B.executor(rt, _attrs(pl, S.B, pl, S.S(0)), META, **kw)(x, x, x)  # B -> S: views of the copies
        assert all(np.shares_memory(p, x) for p in sliced)
    assert sorted(out) == [0, 1, 2]


@pytest.mark.parametrize("owned", [False, True])
def test_partial_sums_reduced_in_place_only_when_owned(owned):
    pl = cpu((0, 0), (0, 1))
    a, b = np.ones(SHAPE), np.full(SHAPE, 2.0)
    rt = Runtime(SingleProcessComm(), 0)
    for kw in ({}, {"over_processes": True}):
        first = a.copy()
        out = B.executor(rt, _attrs(pl, S.P, pl, S.B), META, owned=owned, **kw)(first, b)
        np.testing.assert_array_equal(out[0], np.full(SHAPE, 3.0))
        assert (out[0] is first) == owned
        np.testing.assert_array_equal(first, np.full(SHAPE, 3.0) if owned else a)


@pytest.mark.parametrize("sbp", SBPS, ids=[NAMES[s] for s in SBPS])
def test_assemble_is_a_fresh_logical_value(sbp):
    pl = cpu((0, 0), (0, 1), (0, 2))
    x = np.random.default_rng(3).standard_normal(SHAPE)
    pieces = _source_pieces(np.random.default_rng(4), x, pl, sbp)
    before = [p.copy() for p in pieces]
    rt = Runtime(SingleProcessComm(), 0)
    value = rt.assemble(dict(enumerate(pieces)), SHAPE, np.float64, pl, sbp)
    np.testing.assert_allclose(value, x, rtol=1e-12, atol=1e-12)
    assert not any(np.shares_memory(value, p) for p in pieces)
    for p, q in zip(pieces, before):
        np.testing.assert_array_equal(p, q)


def test_the_named_fallback_moves_one_device_mirrored_blobs_and_refuses_the_others():
    """`via-logical` goes through the logical value: a mirrored blob on one device IS its value; on several devices
    it has none, and building the boxing says so."""
    rt = Runtime(SingleProcessComm(), 0)
    x = np.random.default_rng(9).standard_normal(SHAPE)
    one, two = cpu((0, 1)), cpu((0, 0), (0, 1))
    assert T.lookup(one, S.M, two, S.S(0)).collective == "via-logical"
    out = B.executor(rt, _attrs(one, S.M, two, S.S(0)), META)(x)
    np.testing.assert_array_equal(np.concatenate(out), x)
    with pytest.raises(ValueError, match=r"boxing cpu 0:0-1 M -> cpu 0:0-1 B: the mirrored source on 2 devices "
                                         r"holds independent local tensors"):
        B.executor(rt, _attrs(two, S.M, two, S.B), META)
