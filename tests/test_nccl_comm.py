"""NCCL behind the comm interface (comm/nccl_comm.py).

On any machine, with a fake NCCL binding (tests/fake_nccl.py) over simulated ranks (comm/simulated.py): every
collective of the interface gives what the simulated process comm gives (an independent implementation) on 1-4
ranks, with even and uneven splits, other axes and booleans; a communicator per rank set, bootstrapped over the
host comm from one member's unique id (bytes, as CuPy 14 gives it, or a tuple of ints); uneven splits, all-to-all,
gather and exchange as grouped operations; the watchdog aborting a communicator past the timeout and ending the job.

On a GPU (skipped elsewhere): a 1-rank NCCL communicator running every collective on CuPy arrays; data parallelism on
2 logical devices of one GPU equal to 1 device. With 2 GPUs (skipped below): the collectives over 2 MPI ranks."""
import os
import subprocess
import sys

import numpy as np
import pytest

from fake_nccl import FakeNccl
from kernel_testing import CUPY
from oneflow_compat.comm import mpiexec_command, nccl_comm
from oneflow_compat.comm.process_comm import CollectiveTimeout, SingleProcessComm
from oneflow_compat.comm.simulated import SimulatedWorld

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _both(size, body, members="own gpus"):
    """body(comm, rank) on `size` simulated ranks: through NCCL (fake) and through the process comm itself.
    `members`: what the simulated ranks stand for — "own gpus" (MPI ranks with a GPU each), "one gpu" (MPI ranks
    sharing GPU 0), "threads" (what they are: threads of this process, on GPU 0)."""
    fake = FakeNccl()

    def with_nccl(host):
        if members != "threads":
            fake.as_process(host.rank, gpu=0 if members == "one gpu" else host.rank)
        comm = nccl_comm.NcclComm(host, np, fake, timeout=30, watchdog=False)
        return body(comm, host.rank)

    got = SimulatedWorld(size).run(with_nccl)
    want = SimulatedWorld(size).run(lambda host: body(host, host.rank))
    return got, want, fake


def _same(got, want):
    assert type(got) is type(want) or got is None and want is None, (type(got), type(want))
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif want is None:
        assert got is None
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert np.asarray(got).dtype == np.asarray(want).dtype


def _data(rank, shape, dtype=np.float32):
    rng = np.random.default_rng(rank)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.3
    return (rng.standard_normal(shape) * 10).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(-50, 50, shape).astype(dtype)


COLLECTIVES = {
    "allreduce": lambda c, r, k: c.allreduce_(_data(r, (5, 3)), tuple(range(k))),
    "allreduce_bool": lambda c, r, k: c.allreduce_(_data(r, (7,), np.bool_), tuple(range(k))),
    "allreduce_int64": lambda c, r, k: c.allreduce_(_data(r, (4, 2), np.int64), tuple(range(k))),
    "reduce_scatter_even": lambda c, r, k: c.reduce_scatter(_data(r, (4 * k, 3)), tuple(range(k))),
    "reduce_scatter_uneven": lambda c, r, k: c.reduce_scatter(_data(r, (2 * k + 1, 3)), tuple(range(k))),
    "reduce_scatter_axis1": lambda c, r, k: c.reduce_scatter(_data(r, (2, 3 * k + 2)), tuple(range(k)), axis=1),
    "allgatherv_even": lambda c, r, k: c.allgatherv(_data(r, (2, 3)), tuple(range(k))),
    "allgatherv_uneven": lambda c, r, k: c.allgatherv(_data(r, (r + 1, 3)), tuple(range(k)),
                                                      sizes=[j + 1 for j in range(k)]),
    "allgatherv_unknown_sizes_axis1": lambda c, r, k: c.allgatherv(_data(r, (2, r % 2 + 1)), tuple(range(k)), axis=1),
    "alltoallv": lambda c, r, k: c.alltoallv([_data(10 * r + j, (j + 1, 2)) for j in range(k)], tuple(range(k)),
                                             recv_sizes=[r + 1] * k),
    "alltoallv_concat_axis1": lambda c, r, k: c.alltoallv(
        [_data(10 * r + j, (2, j + 2)) for j in range(k)], tuple(range(k)), axis=1, concat=True),
    "bcast": lambda c, r, k: c.bcast_(_data(r, (3, 2)), k - 1, tuple(range(k))),
    "reduce": lambda c, r, k: c.reduce_(_data(r, (3, 2)), 0, tuple(range(k))),
    "gatherv": lambda c, r, k: c.gatherv(_data(r, (r + 1, 2)), k - 1, tuple(range(k)),
                                         sizes=[j + 1 for j in range(k)]),
    "subset": lambda c, r, k: c.allreduce_(_data(r, (3,)), tuple(range(1, k))) if r >= 1 else None,
}


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_every_collective_equals_the_process_comm(name, k):
    if name == "subset" and k == 1:
        pytest.skip("a subset needs two ranks")
    body = COLLECTIVES[name]
    got, want, fake = _both(k, lambda c, r: body(c, r, k))
    _same(got, want)
    # (with one member, all-to-all and gather are a local copy: nothing to send)
    assert fake.calls or (k == 1 and name.startswith(("alltoallv", "gatherv"))), "NCCL was not called"


@pytest.mark.parametrize("members", ["one gpu", "threads"])
@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_ranks_sharing_a_gpu_or_a_process_go_through_the_host_comm_with_the_same_numbers(name, members):
    """NCCL refuses two ranks on one GPU (the first GPU run: every 2-rank test on one H100 died in
    ncclCommInitRank with NCCL_ERROR_INVALID_USAGE): such a rank set's collectives go through the host comm,
    staged, with the numbers of the host comm; no NCCL communicator is even tried."""
    body = COLLECTIVES[name]
    routes = []

    def recorded(c, r):
        out = body(c, r, 3)
        routes.append(dict(c.routes) if hasattr(c, "routes") else None)
        return out

    got, want, fake = _both(3, recorded, members=members)
    _same(got, want)
    assert fake.calls == [] and fake.refused == []
    why = "on one GPU" if members == "one gpu" else "threads of one process"
    routed = [seen for seen in routes if seen is not None]
    assert len(routed) == 3 and sum(1 for seen in routed if seen) >= 2  # (a subset leaves rank 0 out)
    for seen in routed:
        assert all("ranks %d and %d are %s" % (ranks[0], ranks[1], why) == text for ranks, text in seen.items()), seen


def test_exchange_between_ranks_on_one_gpu_goes_through_the_host_comm():
    def body(c, r):
        return c.exchange([(1 - r, _data(r, (r + 2, 3)))], [(1 - r, np.empty((3 - r, 3), np.float32))])

    got, want, fake = _both(2, body, members="one gpu")
    _same(got, want)
    assert fake.calls == []


def test_an_exchange_of_two_of_three_ranks_on_one_gpu_needs_nothing_of_the_third():
    """An exchange is point to point: a rank with nothing to send or receive does not take part, so deciding its
    route (the peers' GPUs) takes nothing from it — with the third rank idle, the two finish."""
    def body(c, r):
        if r == 2:
            return None
        return c.exchange([(1 - r, _data(r, (2, 3)))], [(1 - r, np.empty((2, 3), np.float32))])

    got, want, fake = _both(3, body, members="one gpu")
    _same(got, want)
    assert fake.calls == []


def test_the_fake_nccl_refuses_two_members_on_one_gpu_as_nccl_does():
    """What NCCL 2.28 did on the H100 (init.cc: "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device
    60", ncclCommInitRank failing on every member with NCCL_ERROR_INVALID_USAGE), the fake does on any machine:
    two threads of one process on GPU 0, or two processes on one GPU; distinct GPUs are fine."""
    from fake_nccl import NcclError

    def join(members):
        fake = FakeNccl()
        uid = fake.unique_id()

        def body(host):
            if members is not None:
                fake.as_process(host.rank, gpu=members[host.rank])
            try:
                fake.communicator(2, uid, host.rank)
                return "joined"
            except NcclError as e:
                return str(e)
        return SimulatedWorld(2).run(body)

    for members in (None, (0, 0), (1, 1)):
        got = join(members)
        gpu = 0 if members is None else members[0]
        assert got == ["NCCL_ERROR_INVALID_USAGE: invalid usage (run with NCCL_DEBUG=WARN for details)\n"
                       "NCCL WARN Duplicate GPU detected : rank %d and rank %d both on CUDA device %d"
                       % (r, 1 - r, gpu) for r in range(2)], got
    assert join((0, 1)) == ["joined", "joined"]


def test_simulated_ranks_make_no_device_comm_even_where_nccl_loads(monkeypatch):
    """Simulated ranks are threads of one process on its GPU: the runtime gives them no NCCL (their boxings go
    through the simulated process comm), though the fake device's NCCL is loadable."""
    import strict_device
    from oneflow_compat.comm import RecordingComm
    from oneflow_compat.runtime.runtime import Runtime

    xp = strict_device.install(monkeypatch, "gpu")
    assert nccl_comm.available(xp)
    world = SimulatedWorld(2)
    for comm in (world.comms[0], RecordingComm(world.comms[1])):
        assert comm.ranks_are_threads
        assert Runtime(comm, comm.rank).device_comm is None


@pytest.mark.parametrize("k", [2, 3])
def test_exchange_and_point_to_point(k):
    def body(c, r):
        sends = [(j, _data(100 * r + j, (j + 1, 2))) for j in range(k) if j != r]
        recvs = [(j, np.empty((r + 1, 2), np.float32)) for j in range(k) if j != r]
        got = c.exchange(sends, recvs)
        if r == 0:
            c.send(np.arange(6, dtype=np.float32), 1)
            return got, None
        if r == 1:
            return got, c.recv((6,), 0)
        return got, None

    got, want, _ = _both(k, body)
    _same(got, want)


def test_uneven_splits_and_all_to_all_are_grouped_operations():
    got, _, fake = _both(3, lambda c, r: c.reduce_scatter(_data(r, (7, 2)), (0, 1, 2)))
    assert [kind for member, kind in fake.calls if member == 0] == ["reduce", "reduce", "reduce"]
    _, _, fake = _both(3, lambda c, r: c.reduce_scatter(_data(r, (6, 2)), (0, 1, 2)))
    assert [kind for member, kind in fake.calls if member == 0] == ["reduce_scatter"]
    _, _, fake = _both(3, lambda c, r: c.alltoallv([_data(j, (2, 2)) for j in range(3)], (0, 1, 2),
                                                   recv_sizes=[2, 2, 2]))
    assert sorted(kind for member, kind in fake.calls if member == 1) == ["recv", "recv", "send", "send"]


def test_a_communicator_per_rank_set_from_one_unique_id():
    fake = FakeNccl()
    made = []
    original = fake.communicator

    def communicator(members, uid, index):
        made.append((members, index, type(uid).__name__, len(uid)))
        return original(members, uid, index)
    fake.communicator = communicator

    def body(host):
        fake.as_process(host.rank)
        comm = nccl_comm.NcclComm(host, np, fake, timeout=30, watchdog=False)
        comm.allreduce_(np.ones(2, np.float32), (0, 1, 2))
        comm.allreduce_(np.ones(2, np.float32), (0, 1, 2))  # the same set: the same communicator
        if host.rank > 0:
            comm.allreduce_(np.ones(2, np.float32), (1, 2))
        return sorted(comm._comms)

    assert SimulatedWorld(3).run(body) == [[(0, 1, 2)], [(0, 1, 2), (1, 2)], [(0, 1, 2), (1, 2)]]
    assert sorted(made) == sorted([(3, i, "bytes", 128) for i in range(3)] + [(2, i, "bytes", 128) for i in range(2)])


def test_a_unique_id_of_ints_travels_too():
    array, kind = nccl_comm.uid_to_array(tuple(range(-64, 64)))
    assert kind == "tuple" and nccl_comm.uid_from_array(array, kind) == tuple(range(-64, 64))
    array, kind = nccl_comm.uid_to_array(b"\x00\xff" * 64)
    assert kind == "bytes" and nccl_comm.uid_from_array(array, kind) == b"\x00\xff" * 64


def test_the_watchdog_aborts_a_collective_past_the_timeout():
    fake = FakeNccl()
    fake.event_done = False  # the collective never completes
    ended = []
    comm = nccl_comm.NcclComm(SingleProcessComm(), np, fake, timeout=5, on_timeout=ended.append, watchdog=False)
    now = [100.0]
    comm.watchdog._clock = lambda: now[0]
    comm.allreduce_(np.ones(3, np.float32), (0,))
    comm.watchdog.poll()
    assert ended == [] and fake.aborted == []  # not yet past its deadline
    now[0] += 6
    comm.watchdog.poll()
    assert ended == ["NCCL all-reduce over ranks 0 did not complete within 5 s: its NCCL communicator was aborted"]
    assert fake.aborted == [0]
    with pytest.raises(CollectiveTimeout, match="all-reduce over ranks 0 did not complete within 5 s"):
        comm.allreduce_(np.ones(3, np.float32), (0,))


def test_without_nccl_the_runtime_keeps_the_process_comm(monkeypatch):
    from oneflow_compat.runtime.runtime import Runtime

    rt = Runtime(SingleProcessComm(), 0)
    assert rt.device_comm is None  # one process
    monkeypatch.setattr(nccl_comm, "available", lambda xp: False)
    assert nccl_comm.available(np) is False


# --- on a GPU --------------------------------------------------------------------------------------------------
def _nccl_or_skip():
    if CUPY is None:
        pytest.skip("CuPy with a usable GPU is not available")
    if not nccl_comm.available(CUPY):
        pytest.skip("CuPy's NCCL is not available")
    return CUPY


@pytest.mark.parametrize("name", sorted(set(COLLECTIVES) - {"subset"}))
def test_a_one_rank_nccl_communicator_runs_every_collective(name):
    cp = _nccl_or_skip()
    comm = nccl_comm.NcclComm(SingleProcessComm(), cp, timeout=60)

    class OnDevice:
        """The body's host arrays go up, the results come down."""

        def __getattr__(self, method):
            def call(*args, **kwargs):
                up = [cp.asarray(a) if isinstance(a, np.ndarray) else
                      [cp.asarray(p) for p in a] if isinstance(a, list) and a and isinstance(a[0], np.ndarray)
                      else a for a in args]
                out = getattr(comm, method)(*up, **kwargs)
                return [cp.asnumpy(o) for o in out] if isinstance(out, list) else \
                    None if out is None else cp.asnumpy(out)
            return call

    got = COLLECTIVES[name](OnDevice(), 0, 1)
    want = COLLECTIVES[name](SingleProcessComm(), 0, 1)
    _same(got, want)
    comm.close()


def test_data_parallel_on_two_devices_of_one_gpu_equals_one_device(monkeypatch):
    if CUPY is None:
        pytest.skip("CuPy with a usable GPU is not available")
    import test_gpu_step_budget as budget

    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "gpu")
    one = budget._steps(budget.mlp, 3, devices=1)
    two = budget._steps(budget.mlp, 3, devices=2)
    for a, b in zip(two[0], one[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for name, value in one[1].items():
        np.testing.assert_allclose(two[1][name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_collectives_over_two_gpus_and_two_ranks():
    cp = _nccl_or_skip()
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("NCCL refuses two ranks on one GPU: this needs 2 GPUs")
    mpiexec = mpiexec_command.find_mpiexec()
    if not mpiexec:
        pytest.skip("no mpiexec")
    done = subprocess.run(mpiexec_command.command(2, [sys.executable, "-m", "oneflow_compat.tools.gpu_stages",
                                                      "nccl_ranks"], mpiexec=mpiexec),
                          cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env=mpiexec_command.environment(mpiexec, dict(os.environ, ONEFLOW_COMPAT_OUTPUT="all")))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("GPU_CHECK ok nccl ranks") == 2, done.stdout


def _data_parallel_training(n_ranks):
    """Three SGD steps of a linear model, its batch split over `n_ranks` simulated ranks of a "cuda" placement:
    (losses, weight, bias) of every rank."""
    import oneflow_compat as flow
    from simulated_ranks import on_ranks

    rng = np.random.default_rng(22)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.standard_normal((8, 3)).astype(np.float32)
    w0 = rng.standard_normal((3, 6)).astype(np.float32)

    def body():
        pl = flow.placement("cuda", ranks=list(range(n_ranks)))
        model = flow.nn.Linear(6, 3).to_global(pl, flow.sbp.broadcast)
        with flow.no_grad():
            model.weight.copy_(flow.tensor(w0, placement=pl, sbp=flow.sbp.broadcast))
            model.bias.copy_(flow.tensor(np.zeros(3, np.float32), placement=pl, sbp=flow.sbp.broadcast))
        opt = flow.optim.SGD(model.parameters(), lr=0.1)
        gx = flow.tensor(x, placement=pl, sbp=flow.sbp.split(0))
        gy = flow.tensor(y, placement=pl, sbp=flow.sbp.split(0))
        losses = []
        for _ in range(3):
            loss = ((model(gx) - gy) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.numpy())
        return losses, model.weight.numpy(), model.bias.numpy()
    return on_ranks(n_ranks, body), (x, y, w0)


def _numpy_training(x, y, w0):
    w, b, losses = w0.astype(np.float64), np.zeros(3), []
    for _ in range(3):
        err = x @ w.T + b - y
        losses.append((err ** 2).mean())
        g = 2 * err / err.size
        w, b = w - 0.1 * g.T @ x, b - 0.1 * g.sum(axis=0)
    return losses, w, b


@pytest.mark.parametrize("device", ["fake", "gpu"])
def test_data_parallel_on_two_simulated_ranks_of_one_gpu_equals_one_rank(monkeypatch, device):
    """Two simulated ranks on one GPU (the GPU run's NCCL_ERROR_INVALID_USAGE): their boxings go through the
    simulated process comm, and the step equals one rank's and numpy's. "fake": the strict fake device, whose
    NCCL refuses what NCCL refuses; "gpu": CuPy on the GPU (skipped without one)."""
    if device == "fake":
        import strict_device

        strict_device.install(monkeypatch, "gpu", allow_syncs=True)
    else:
        if CUPY is None:
            pytest.skip("CuPy with a usable GPU is not available")
        monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "gpu")
    (one,), data = _data_parallel_training(1)
    two, _ = _data_parallel_training(2)
    want = _numpy_training(*data)
    for got in [one] + two:
        for a, b in zip(got[0], want[0]):
            np.testing.assert_allclose(a, b, rtol=1e-5)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)
    for got in two:
        for a, b in zip(got, one):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", ["fake", "gpu"])
def test_two_mpi_ranks_on_one_gpu_go_through_mpi_with_mpis_numbers(device):
    """Two MPI ranks sharing one GPU (the GPU machine has one): NCCL would refuse them (the first GPU run's
    `nccl 2 ranks` check died in ncclCommInitRank), so every collective of their NcclComm goes through MPI, staged,
    and equals MPI's own. "fake": the GPU check's dry run of that stage (the fake NCCL, every process on GPU 0);
    "gpu": CuPy's NCCL on a machine with one GPU (skipped without a GPU, or with several: then it is NCCL's)."""
    pytest.importorskip("mpi4py")
    mpiexec = mpiexec_command.find_mpiexec()
    if not mpiexec:
        pytest.skip("no mpiexec")
    env = dict(os.environ, ONEFLOW_COMPAT_OUTPUT="all")
    if device == "fake":
        env.update(GPU_CHECK_FAKE="1", ONEFLOW_COMPAT_DEVICE="cpu")
    else:
        cp = _nccl_or_skip()
        if cp.cuda.runtime.getDeviceCount() != 1:
            pytest.skip("this is the one-GPU case")
    done = subprocess.run(mpiexec_command.command(2, [sys.executable, "-m", "oneflow_compat.tools.gpu_stages",
                                                      "nccl_ranks"], mpiexec=mpiexec),
                          cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env=mpiexec_command.environment(mpiexec, env))
    assert done.returncode == 0, done.stdout + done.stderr
    for r in range(2):
        assert ("GPU_CHECK ok nccl ranks: rank %d of 2: every collective equals MPI's (through MPI, staged: no NCCL, "
                "ranks 0 and 1 are on one GPU)" % r) in done.stdout, done.stdout
    assert "NCCL_ERROR" not in done.stdout + done.stderr
