"""Every boxing transition of legacy-api.md §2.7, driven through real jobs: a blob is put into a source (placement,
SBP) and read by a consumer that demands another (placement, SBP) via `with_distribute` / `flow.parallel_cast` /
`flow.scope.placement`. The value returned equals the input (for a partial-sum source: the sum of the addends),
and every device's piece is what its SBP says (balanced slice, full copy, or addends that sum to the value)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.backend import devices
from oneflow_compat.tools import explain as explain_mod
from oneflow_compat.ir import sbp as S
from oneflow_compat.framework import session as sess
from oneflow_compat.runtime.plan import Plan
from oneflow_compat.comm import mpiexec_command

SHAPE = (7, 5)  # 7 rows and 5 columns: uneven balanced splits on 2, 3 and 4 devices
ROWS = 6  # a partial-sum source reduces a (6, 7, 5) input over its split axis 0


def _hint(sbp):
    if sbp == S.B:
        return flow.distribute.broadcast()
    if S.is_split(sbp):
        return flow.distribute.split(sbp.axis)
    return sbp  # P has no legacy distribute object; parallel_cast accepts the SBP itself


def _placement(spec):
    return flow.scope.placement("cpu", spec)


def _source(x, src):
    """A blob on the current placement with SBP `src` (for P: genuine per-device addends)."""
    if src == S.P:
        rows = flow.parallel_cast(x, distribute=flow.distribute.split(0))
        return flow.math.reduce_sum(rows, axis=0, name="src")
    return flow.parallel_cast(x, distribute=_hint(src), name="src")


def _consume(a, dst, via):
    if via == "with_distribute":
        return flow.identity(a.with_distribute(_hint(dst)), name="dst")
    return flow.parallel_cast(a, distribute=_hint(dst), name="dst")


def _default_placement():
    session = sess.default_session()
    per = session.resource.devices_per_machine
    return ["%d:0-%d" % (m, per - 1) for m in range(session.machine_num())]


def run_transition(devices, src, dst, src_pl=None, dst_pl=None, via="parallel_cast", seed=0):
    """Runs x -> (src_pl, src) -> (dst_pl, dst) with `devices` per machine; returns (value, logical,
    (dst SBP, {device index: piece} for this process's devices), report)."""
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    in_shape = (ROWS,) + SHAPE if src == S.P else SHAPE
    everywhere = _default_placement()

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder(in_shape, dtype=flow.double)) -> tp.Numpy:
        with _placement(src_pl or everywhere):
            a = _source(x, src)
        with _placement(dst_pl or everywhere):
            return _consume(a, dst, via)

    x = np.random.default_rng(seed).standard_normal(in_shape)
    value = job(x)
    logical = x.sum(axis=0) if src == S.P else x
    return value, logical, _device_pieces(job, "dst"), explain_mod.explain(job)


@pytest.fixture(autouse=True)
def keep_registers(monkeypatch):
    """These tests read the plan's registers after a call: keep them (plans release them after their last use)."""
    monkeypatch.setattr(Plan, "release", False)


def _device_pieces(job, op_name):
    """What each of this process's devices of the op's placement holds for its output after the call (read from
    the plan's registers)."""
    session = sess.default_session()
    jf = job.__oneflow_job_function__
    compiled = session.compiled[jf.name]
    op = session.jobs[jf.name].op_names[op_name]
    key = op.outputs[0].key()
    local = session.runtime.local_indices(op.placement)
    return op.sbp_out[0], {i: devices.to_host(compiled.plan.regs[compiled.plan.slot[(key, i)]]) for i in local}


def check_pieces(sbp, pieces, logical, n):
    """`pieces`: {device index: array} for the local devices of an n-device placement."""
    assert pieces, "no local pieces"
    if n == 1 or sbp == S.B:
        for p in pieces.values():
            np.testing.assert_allclose(p, logical, rtol=1e-12, atol=1e-12)
    elif sbp == S.P:
        if len(pieces) == n:  # the addends of remote devices are checked through the fetched sum
            np.testing.assert_allclose(sum(pieces.values()), logical, rtol=1e-12, atol=1e-12)
    else:
        for i, p in pieces.items():
            np.testing.assert_allclose(p, logical[S.local_slices(logical.shape, sbp, i, n)], rtol=1e-12,
                                       atol=1e-12)


def _tested_boxing(report):
    """The boxing that feeds the consumer under test (the one into op 'dst')."""
    return [b for b in report.boxing if b.consumer == "dst"]


SBPS = [S.S(0), S.S(1), S.B, S.P]
NAMES = {S.S(0): "S0", S.S(1): "S1", S.B: "B", S.P: "P"}
COLLECTIVE = {  # legacy-api.md §2.7, same placement
    ("P", "B"): "all-reduce", ("P", "S0"): "reduce-scatter", ("P", "S1"): "reduce-scatter",
    ("S0", "B"): "all-gather", ("S1", "B"): "all-gather", ("B", "S0"): "local-slice", ("B", "S1"): "local-slice",
    ("S0", "S1"): "all-to-all", ("S1", "S0"): "all-to-all", ("B", "P"): "b2p-zeros",
    ("S0", "P"): "s2p-zeros", ("S1", "P"): "s2p-zeros",
}


def busiest_bytes(collective, p, src, dst):
    """What the busiest of p devices sends for a (7, 5) float64 blob, written out per collective."""
    split = {0: [7 // p + (1 if i < 7 % p else 0) for i in range(p)],
             1: [5 // p + (1 if i < 5 % p else 0) for i in range(p)]}
    row_bytes = {0: 5 * 8, 1: 7 * 8}
    total = 7 * 5 * 8
    if collective == "all-reduce":  # balanced chunks c of the 35 elements: B - c_i + (p - 1) c_i
        chunks = [35 // p + (1 if i < 35 % p else 0) for i in range(p)]
        return max((35 - c + (p - 1) * c) * 8 for c in chunks)
    if collective == "reduce-scatter":  # the others' rows of its addend
        return max(total - n * row_bytes[dst.axis] for n in split[dst.axis])
    if collective == "all-gather":  # its rows, to each of the p - 1 others
        return max((p - 1) * n * row_bytes[src.axis] for n in split[src.axis])
    if collective == "all-to-all":  # its rows of the others' columns
        return max(r * (5 - c if src.axis == 0 else 7 - c) * 8 for r, c in zip(split[src.axis], split[dst.axis]))
    return 0  # local-slice, b2p-zeros, s2p-zeros


@pytest.mark.parametrize("devices", [1, 2, 3, 4])
@pytest.mark.parametrize("src", SBPS, ids=[NAMES[s] for s in SBPS])
@pytest.mark.parametrize("dst", SBPS, ids=[NAMES[s] for s in SBPS])
def test_same_placement(devices, src, dst):
    value, logical, (sbp, pieces), report = run_transition(devices, src, dst)
    np.testing.assert_allclose(value, logical, rtol=1e-12, atol=1e-12)
    boxing = _tested_boxing(report)
    if devices == 1:
        assert sbp == S.B and boxing == []  # on one device every SBP is the one full copy
    else:
        assert sbp == dst
        if src == dst:
            assert boxing == []
        else:
            (b,) = boxing
            assert (b.src_sbp, b.dst_sbp) == (src, dst)
            want = COLLECTIVE.get((NAMES[src], NAMES[dst]))
            if want is not None:
                assert b.collective == want
            # the busiest device's bytes, by the rule of comm/process_comm.py (uneven: the devices differ)
            assert b.bytes == busiest_bytes(b.collective, devices, src, dst), b
    check_pieces(sbp, pieces, logical, devices)


@pytest.mark.parametrize("dst", [S.S(0), S.S(1), S.B], ids=["S0", "S1", "B"])
def test_with_distribute_hint(dst):
    value, logical, (sbp, pieces), report = run_transition(3, S.S(0), dst, via="with_distribute")
    np.testing.assert_allclose(value, logical, rtol=1e-12, atol=1e-12)
    assert sbp == dst and len(_tested_boxing(report)) == (0 if dst == S.S(0) else 1)
    check_pieces(sbp, pieces, logical, 3)


# --- placement changes: 1 <-> N devices and stage to stage ---------------------------------------------------------
PLACEMENT_CASES = [
    # (devices, src placement, dst placement): one to many, many to one, disjoint stages, overlapping stages
    (2, "0:0", "0:0-1"), (4, "0:0", "0:0-3"), (3, "0:2", "0:0-2"),
    (2, "0:0-1", "0:0"), (4, "0:0-3", "0:3"), (3, "0:0-2", "0:1"),
    (4, "0:0-1", "0:2-3"), (4, "0:2-3", "0:0-1"), (4, "0:0-2", "0:3"), (4, "0:0", "0:1-3"),
    (4, "0:0-1", "0:1-3"), (4, "0:1-3", "0:0-2"), (3, "0:0-1", "0:1-2"),
]


@pytest.mark.parametrize("devices,src_pl,dst_pl", PLACEMENT_CASES,
                         ids=["%d:%s->%s" % c for c in PLACEMENT_CASES])
@pytest.mark.parametrize("src", SBPS, ids=[NAMES[s] for s in SBPS])
@pytest.mark.parametrize("dst", SBPS, ids=[NAMES[s] for s in SBPS])
def test_placement_change(devices, src_pl, dst_pl, src, dst):
    value, logical, (sbp, pieces), report = run_transition(devices, src, dst, src_pl, dst_pl)
    np.testing.assert_allclose(value, logical, rtol=1e-12, atol=1e-12)
    (b,) = _tested_boxing(report)
    n_src, n_dst = b.src_placement.parallel_num, b.dst_placement.parallel_num
    assert (b.src_placement.pairs, b.dst_placement.pairs) == (
        flow.scope.placement("cpu", src_pl).parsed.pairs, flow.scope.placement("cpu", dst_pl).parsed.pairs)
    assert b.src_sbp == (src if n_src > 1 else S.B) and b.dst_sbp == (dst if n_dst > 1 else S.B)
    assert len(pieces) == n_dst and sbp == (dst if n_dst > 1 else S.B)
    if n_dst == 1 and src == S.P and n_src > 1:
        assert b.collective == "reduce"
    elif n_src == 1 and n_dst > 1 and dst == S.B:
        assert b.collective == "broadcast"
    elif n_src > 1 and n_dst == 1 and S.is_split(src):
        assert b.collective == "gather"
    check_pieces(sbp, pieces, logical, n_dst)


def test_pipeline_stages_chain():
    """Three stages in a row on 4 devices: split data on 0:0-1, a single-device stage, a broadcast last stage."""
    flow.clear_default_session()
    flow.config.cpu_device_num(4)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((9, 4), dtype=flow.double)) -> tp.Numpy:
        with _placement("0:0-1"):
            a = flow.math.square(flow.parallel_cast(x, distribute=flow.distribute.split(0)))
        with _placement("0:2"):
            b = flow.math.reduce_sum(a, axis=1)
        with _placement("0:1-3"):
            return flow.parallel_cast(b, distribute=flow.distribute.split(0), name="dst")

    x = np.random.default_rng(5).standard_normal((9, 4))
    np.testing.assert_allclose(job(x), (x * x).sum(axis=1), rtol=1e-12)
    sbp, pieces = _device_pieces(job, "dst")
    assert sbp == S.S(0) and [len(pieces[i]) for i in range(3)] == [3, 3, 3]
    check_pieces(sbp, pieces, (x * x).sum(axis=1), 3)
    report = explain_mod.explain(job)
    moves = [(b.src_placement.parallel_num, b.dst_placement.parallel_num) for b in report.boxing]
    assert (2, 1) in moves and (1, 3) in moves


# --- across MPI ranks: the same transitions between machines ------------------------------------------------------
MPI_PLACEMENTS = [  # (src, dst) with 2 machines x 2 devices; None = every device of every machine
    (None, None), ("0:0-1", "1:0-1"), (["0:0", "1:0"], ["0:1", "1:1"]), ("1:1", None), (None, "1:0"),
    ("0:0", "1:0"), ("0:1", ["0:0", "1:0-1"]),
]


def mpi_main():
    """Run under `mpiexec -n 2`: every (placement pair, src, dst) of MPI_PLACEMENTS; each rank checks the fetched
    value and its own devices' pieces. Prints one summary line (output appears once)."""
    Plan.release = False  # the pieces are read from the plan's registers after each call
    count = 0
    for src_pl, dst_pl in MPI_PLACEMENTS:
        for src in SBPS:
            for dst in SBPS:
                value, logical, (sbp, pieces), report = run_transition(2, src, dst, src_pl, dst_pl, seed=count)
                np.testing.assert_allclose(value, logical, rtol=1e-12, atol=1e-12,
                                           err_msg="%s %s -> %s %s" % (src_pl, src, dst_pl, dst))
                n_dst = 4 if dst_pl is None else flow.scope.placement("cpu", dst_pl).parsed.parallel_num
                if pieces:
                    check_pieces(sbp, pieces, logical, n_dst)
                count += 1
    print("mpi boxing transitions ok: %d" % count)


MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_transitions_across_mpi_ranks():
    cmd = ["timeout", "100", MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py", os.path.abspath(__file__)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=mpiexec_command.environment(MPIEXEC))
    assert p.returncode == 0, p.stdout + p.stderr
    n = len(MPI_PLACEMENTS) * len(SBPS) ** 2
    assert p.stdout.count("mpi boxing transitions ok: %d" % n) == 1, p.stdout


if __name__ == "__main__":
    mpi_main()
