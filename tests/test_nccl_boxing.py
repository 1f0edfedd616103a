"""Every boxing between GPU placements runs its collectives through NCCL (comm/nccl_comm.py): the rows of the 1-D
transition table and the sub-group steps of n-D meshes (ops/mesh_transitions.py, runtime/mesh_boxing.py), on ranks
simulated in one process, each rank's device comm an `NcclComm` over the fake NCCL binding (tests/fake_nccl.py).

With the GPU's array module stood in by numpy, each rank's NcclComm is wrapped in a recording comm, so the very
checks of tests/test_boxing_bytes.py and tests/test_boxing_nd.py hold through NCCL: every destination piece is what
numpy makes of the logical value, the bytes each rank hands NCCL are the row's planned traffic, each collective runs
over the ranks (or the mesh sub-group) its row or step names; and the process comm (MPI) moves no payload: it only
bootstraps each rank set's NCCL communicator (one unique id) and exchanges sizes.

On the fake device (tests/strict_device.py: CuPy's rules on numpy), the pieces stay device arrays from end to end:
NCCL reads and writes device memory, nothing is copied down or up inside a boxing."""
import itertools

import numpy as np
import pytest

import strict_device
import test_boxing_bytes as one_d
import test_boxing_nd as two_d
from fake_nccl import FakeNccl
from oneflow_compat.backend import devices
from oneflow_compat.comm import nccl_comm
from oneflow_compat.comm.recording import RecordingComm
from oneflow_compat.comm.simulated import SimulatedWorld
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import transitions as T
from oneflow_compat.runtime import boxing
from oneflow_compat.runtime.runtime import Runtime

# what NcclComm itself asks of the process comm: the unique id's broadcast, members' sizes where not given
BOOTSTRAP_CALLS = {"bcast", "allgatherv", "alltoallv"}


def gpu(pl):
    return Placement("gpu", pl.pairs, hierarchy=pl.hierarchy)


def gpu_move(move4):
    a, s, b, d = move4
    return gpu(a), s, gpu(b), d


def run_on_nccl(world_size, cases, xp=np, binding=None, up=None, down=None, record=True):
    """Each case ((src pl, src sbp, dst pl, dst sbp), logical, source pieces) on GPU placements of `world_size`
    simulated ranks whose runtimes box through NcclComm on the fake NCCL. Returns per case ({dst device: piece},
    {rank: the device comm's recorded calls}, {rank: the process comm's recorded calls}), and the fake."""
    fake = FakeNccl()
    binding = binding(fake) if binding is not None else fake
    up = up or (lambda a: a)
    down = down or (lambda a: a)
    world = SimulatedWorld(world_size, timeout=30)
    hosts = [RecordingComm(c) for c in world.comms]

    def rank_main(host):
        fake.as_process(host.rank)  # each simulated rank stands for an MPI rank on a GPU of its own
        rt = Runtime(host, host.rank)
        device = nccl_comm.NcclComm(host, xp, binding, timeout=60, watchdog=False)
        if record:  # (the recording comm counts bytes of host arrays)
            device = RecordingComm(device)
        else:
            device.calls, device.reset = [], lambda: None
        rt._device_comm = device
        out = []
        for (a, s, b, d), logical, pieces in cases:
            host.reset()
            device.reset()
            meta = TensorMeta(logical.shape, dtypes.from_numpy(logical.dtype))
            fn = boxing.executor(rt, {"src_placement": a, "src_sbp": s, "dst_placement": b, "dst_sbp": d}, meta)
            got = fn(*[up(pieces[i]) for i in rt.local_indices(a)])
            idx = rt.local_indices(b)
            assert len(got) == len(idx)
            out.append(({i: down(p) for i, p in zip(idx, got)}, list(device.calls), list(host.calls)))
        return out

    per_rank = world.run(rank_main, hosts)
    results = []
    for k in range(len(cases)):
        pieces, dev_calls, host_calls = {}, {}, {}
        for r in range(world_size):
            got, dc, hc = per_rank[r][k]
            pieces.update(got)
            dev_calls[r], host_calls[r] = dc, hc
        results.append((pieces, dev_calls, host_calls))
    return results, fake


def check_host_only_bootstraps(host_calls, what):
    """The process comm made no boxing call: only NcclComm's own bootstrap (the unique id, members' sizes, the
    members' identities: 3 int64 per member, point to point before a first exchange with a peer)."""
    for r, cs in host_calls.items():
        names = {c.name for c in cs if not c.control}
        assert names <= BOOTSTRAP_CALLS | {"exchange"}, (what, r, names)
        assert all(c.sent % 24 == 0 and c.sent <= 24 * 8 for c in cs if c.name == "exchange"), (what, r, cs)
        assert not [c for c in cs if c.control], (what, r, cs)


@pytest.fixture
def gpu_is_numpy(monkeypatch):
    """GPU placements' array module is numpy (the recording comm counts the bytes of host arrays)."""
    monkeypatch.setattr(devices, "array_module", lambda tag: np)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_row_of_the_table_goes_through_nccl(gpu_is_numpy, n):
    cases = [(T.Move(*gpu_move((m.src_pl, m.src, m.dst_pl, m.dst))), logical, pieces)
             for m, logical, pieces in one_d._cases(n, seed=n)]
    results, fake = run_on_nccl(n, [((m.src_pl, m.src, m.dst_pl, m.dst), lg, p) for m, lg, p in cases])
    reached = set()
    for (move, logical, _), (pieces, dev_calls, host_calls) in zip(cases, results):
        row = one_d.check_case(move, logical, pieces, dev_calls)  # numbers, bytes == traffic, the row's calls
        check_host_only_bootstraps(host_calls, repr(move))
        reached.add(row.collective)
    rows = {t.collective for t in T.TABLE if not t.fallback}
    if n == 2:
        rows -= {"reduce-scatter+slice-boxing", "slice-boxing-add"}
    assert reached == rows, reached
    kinds = {kind for _, kind in fake.calls}
    assert {"all_reduce", "reduce_scatter", "all_gather", "send", "recv", "reduce", "broadcast"} <= kinds, kinds


@pytest.mark.parametrize("shape", sorted(two_d.SHAPES))
def test_every_mesh_move_runs_its_sub_group_steps_through_nccl(gpu_is_numpy, shape):
    moves = [gpu_move(m) for m in two_d.mesh_moves()]
    cases = two_d.make_cases(moves, two_d.SHAPES[shape], seed=len(shape))
    results, fake = run_on_nccl(4, cases)
    rows = set()
    for case, (pieces, dev_calls, host_calls) in zip(cases, results):
        move = two_d.check_case(case[0], case[1], pieces, dev_calls)  # numbers, bytes, one sub-group per call
        check_host_only_bootstraps(host_calls, repr(move))
        rows.add(T.transition_of(move).collective)
    assert {"mesh-steps", "mesh-relayout", "identity"} <= rows, rows
    # the mesh's sub-groups along each axis got NCCL communicators of their own
    members = {}
    for index, kind in fake.calls:
        members.setdefault(kind, set()).add(index)
    assert members["all_reduce"] >= {0, 1} and members["all_gather"] >= {0, 1}


def test_a_three_dimensional_mesh_through_nccl(gpu_is_numpy):
    mesh = two_d.cpu(range(8), (2, 2, 2))
    rng = np.random.default_rng(7)
    combos = [((S.S(0), S.S(0), S.S(1)), (S.S(1), S.P, S.S(0))), ((S.P, S.B, S.S(2)), (S.B, S.S(2), S.B)),
              ((S.S(1), S.P, S.P), (S.S(0), S.S(0), S.S(0)))]
    moves = [(mesh, S.nd(a, (2, 2, 2)), mesh, S.nd(b, (2, 2, 2))) for a, b in combos]
    moves += [(mesh, S.nd(a, (2, 2, 2)), two_d.cpu(range(1, 6)), S.S(2)) for a, _ in combos]
    cases = []
    for move in moves:
        logical = rng.integers(-9, 9, (5, 6, 7)).astype(np.int64)
        cases.append((gpu_move(move), logical, two_d.source_pieces(rng, logical, move[0], move[1])))
    results, _ = run_on_nccl(8, cases)
    for case, (pieces, dev_calls, host_calls) in zip(cases, results):
        two_d.check_case(case[0], case[1], pieces, dev_calls)
        check_host_only_bootstraps(host_calls, repr(case[0]))


def test_one_communicator_per_rank_set_however_many_boxings_use_it(gpu_is_numpy):
    """Each rank set's communicator is bootstrapped once (one unique id broadcast), then reused."""
    mesh = gpu(two_d.MESH)
    move = (mesh, two_d.nd((S.P, S.S(0)), mesh), mesh, two_d.nd((S.B, S.B), mesh))
    rng = np.random.default_rng(3)
    cases = []
    for _ in range(3):
        logical = rng.integers(-9, 9, (8, 12)).astype(np.float32)
        cases.append((move, logical, two_d.source_pieces(rng, logical, move[0], move[1])))
    results, fake = run_on_nccl(4, cases)
    first_host = [c for c in results[0][2][0] if c.name == "bcast"]
    assert len(first_host) == 2 * 2  # two sub-groups rank 0 is in (axis 0, axis 1), id length then id bytes
    for _, _, host_calls in results[1:]:
        assert all(cs == [] for cs in host_calls.values())  # the same boxing again: NCCL alone
    for pieces, _, _ in results:
        assert sorted(pieces) == [0, 1, 2, 3]


# --- on the fake device: pieces stay device arrays through NCCL ------------------------------------------------
DeviceNccl = strict_device.DeviceNccl  # the fake NCCL on the fake device's arrays


def test_device_pieces_stay_on_the_device_through_nccl(monkeypatch):
    fake_xp = strict_device.install(monkeypatch, "gpu", allow_syncs=False)
    moves = [gpu_move(m) for m in two_d.mesh_moves()][::7]
    line = gpu(two_d.cpu(range(4)))
    moves += [(line, s, line, d) for s, d in itertools.product(two_d.SBPS, two_d.SBPS)]
    moves += [(line, S.P, gpu(two_d.cpu([1, 3])), S.S(1)), (gpu(two_d.cpu([0, 1])), S.S(0), line, S.B)]
    # two devices per rank: P -> B sums each rank's two addends into a new array first, which NCCL then reduces in
    # place (a CuPy array's flags have no `writeable`: the first GPU run failed there)
    pairs = gpu(two_d.cpu(range(4), devices=2))
    moves += [(pairs, S.P, pairs, S.B), (pairs, S.P, pairs, S.S(0))]
    cases = two_d.make_cases(moves, (7, 5), seed=11)
    gets_before, uploads_before = strict_device.Syncs.gets, strict_device.Launches.uploads
    results, fake = run_on_nccl(4, cases, xp=fake_xp, binding=DeviceNccl, up=fake_xp.asarray,
                                down=lambda p: p, record=False)
    assert strict_device.Syncs.gets == gets_before  # nothing came down inside a boxing
    # and nothing went up but the source pieces themselves
    assert strict_device.Launches.uploads - uploads_before == sum(case[0][0].parallel_num for case in cases)
    for case, (pieces, _, host_calls) in zip(cases, results):
        assert all(isinstance(p, strict_device.StrictArray) for p in pieces.values()), case[0]
        two_d.check_destination({i: p.get() for i, p in pieces.items()}, case[1], case[0][2], case[0][3],
                                repr(case[0]))
        check_host_only_bootstraps(host_calls, repr(case[0]))
    assert fake.calls


def test_boxings_of_cpu_placements_never_look_for_nccl():
    """NCCL is looked for (CuPy's binding loaded, a comm made) only for a boxing between two GPU placements."""
    class NoNccl(Runtime):
        @property
        def device_comm(self):
            raise AssertionError("NCCL looked for by a boxing of CPU placements")

    line = two_d.cpu(range(2))
    for src, dst in ((line, line), (line, gpu(line)), (gpu(line), line)):
        move = T.Move(src, S.S(0), dst, S.B)
        assert boxing.comm_for(NoNccl(SimulatedWorld(2).comms[0], 0), move)[1] is True  # staged through the host
    with pytest.raises(AssertionError, match="NCCL looked for"):
        boxing.comm_for(NoNccl(SimulatedWorld(2).comms[0], 0), T.Move(gpu(line), S.S(0), gpu(line), S.B))
