"""`oneflow.multiprocessing` (OneFlow 0.9): tensors sent to other processes (fork and spawn) arrive in shared memory,
writes to a shared tensor are seen across processes, `spawn` raises a child's error naming the process, global
tensors are refused, and no shared-memory segment or descriptor outlives the tensors that use it."""
import gc
import os
import pickle
import signal
import sys
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.multiprocessing as mp
from oneflow_compat.multiprocessing import shared_memory
from oneflow_compat.multiprocessing.pool import Pool
from oneflow_compat.utils.data import DataLoader, TensorDataset

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX shared memory of Linux")

JOIN_S = 60  # a child that hangs fails the test instead of the suite


def _segments(pids=()):
    """The named segments in /dev/shm that this process or `pids` created (`ofshm_<pid>_…`): other test runs on the
    machine may hold theirs meanwhile."""
    mine = {str(p) for p in (os.getpid(),) + tuple(pids)}
    return {f for f in os.listdir("/dev/shm") if f.startswith("ofshm_") and f.split("_")[1] in mine}


def _held():
    """This process's descriptors and maps of segments (unlinked ones show as '/dev/shm/ofshm_… (deleted)')."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds.append(os.readlink("/proc/self/fd/" + fd))
        except OSError:  # the descriptor listdir itself used
            pass
    with open("/proc/self/maps") as f:
        maps = [line for line in f if "ofshm_" in line]
    return [x for x in fds if "ofshm_" in x], maps


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(old)


# --- children (module level: a spawned child imports them by name) ----------------------------------------------
def _write_from_queue(q, done):
    t = q.get(timeout=JOIN_S)
    ok = t.is_shared() and t.dtype is flow.float32 and t.numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    t[0, 1] = 100.0  # the tensor's own setitem writes in place
    done.put(bool(ok))


_KEPT = []


def _keep(q, done):
    _KEPT.append(q.get(timeout=JOIN_S))  # still held when the process ends
    done.put(True)


def _write_args(t, copy, value, pickled):
    # spawn: pickled into a new segment; fork: not pickled at all, the child's copy-on-write memory
    assert copy.is_shared() == pickled and copy.numpy().tolist() == [1, 2]
    t.numpy()[...] = value
    copy.numpy()[...] = 0


def _param_info(q, out):
    p = q.get(timeout=JOIN_S)
    out.put((type(p).__name__, p.requires_grad, p.numpy().tolist(), p.is_shared()))


def _double(t):
    t.numpy()[...] *= 2  # a shared tensor: the parent sees it
    return t + 1  # the result comes back through shared memory too


def _spawned(i, t, fail_at):
    if i == fail_at:
        raise ValueError("boom in %d" % i)
    t.numpy()[i] = 10 + i


def _exits(i, code):
    sys.exit(code)


def _mark_fork_child():
    os.environ["ONEFLOW_COMPAT_TEST_AFTER_FORK"] = "1"


def _killed(i):
    os.kill(os.getpid(), signal.SIGKILL)


# --- strategies and the Tensor methods ---------------------------------------------------------------------------
def test_sharing_strategies_as_oneflow_names_them():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"  # OneFlow 0.9's default off macOS and Windows
    with pytest.raises(ValueError, match=r"set_sharing_strategy: unknown strategy 'shm'; the strategies of this "
                                         r"system are \['file_descriptor', 'file_system'\]"):
        mp.set_sharing_strategy("shm")
    assert mp.get_sharing_strategy() == "file_descriptor"
    import multiprocessing

    assert mp.Process is multiprocessing.Process and mp.get_context is multiprocessing.get_context
    assert set(multiprocessing.__all__) <= set(mp.__all__) and "unlink_all_shared_memory" in mp.__all__
    assert flow.multiprocessing is mp


def test_share_memory_moves_the_values_in_place(strategy):
    before = _segments()
    t = flow.tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    p = flow.nn.Parameter(t)
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and p.is_shared()  # the Parameter shares t's storage
    assert t.dtype is flow.float64 and t.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    again = t.numpy()
    assert t.share_memory_() is t and t.numpy() is again  # already shared: a no-op
    assert (len(_segments() - before) == 1) == (strategy == "file_system")  # file_descriptor: never named
    assert len(set(_held()[0])) == 1 and len(_held()[1]) == 1  # (mmap holds a duplicate of the descriptor)
    del t, p, again
    gc.collect()
    assert _segments() == before and _held() == ([], [])


def test_global_tensors_are_refused():
    g = flow.ones(4, placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)
    msg = r"a global tensor \(placement=.*, sbp=.*\) cannot be moved to or shared through shared memory"
    with pytest.raises(RuntimeError, match=r"oneflow.multiprocessing \(pickling a tensor\): " + msg):
        ForkingPickler.dumps(g)
    with pytest.raises(RuntimeError, match=r"Tensor.share_memory_\(\): " + msg + r".*tensor.to_local\(\)"):
        g.share_memory_()
    with pytest.raises(RuntimeError, match=r"Tensor.is_shared\(\): " + msg):
        g.is_shared()
    with pytest.raises(RuntimeError, match=r"pickling a Parameter"):
        ForkingPickler.dumps(flow.nn.Parameter(g))


def test_pickled_in_one_process_views_dtypes_and_empty_tensors(strategy):
    before = _segments()
    assert _held() == ([], [])
    t = flow.tensor(np.arange(12, dtype=np.int32).reshape(3, 4)).share_memory_()
    row = flow.from_numpy(t.numpy()[1])  # a view of the shared memory: sent as that view
    assert row.is_shared()
    u = pickle.loads(ForkingPickler.dumps(row))
    assert u.dtype is flow.int32 and u.numpy().tolist() == [4, 5, 6, 7] and u.is_shared()
    u.numpy()[0] = -1
    assert t.numpy()[1, 0] == -1  # the same memory
    c = flow.tensor([1.0, 2.0], requires_grad=True)  # not shared: copied into a new segment, as OneFlow 0.9 does
    d = pickle.loads(ForkingPickler.dumps(c))
    assert d.requires_grad and d.is_leaf and d.is_shared() and not c.is_shared()
    d.numpy()[0] = 9.0
    assert c.numpy().tolist() == [1.0, 2.0]
    e = pickle.loads(ForkingPickler.dumps(flow.zeros(0, 3, dtype=flow.int64)))
    assert tuple(e.shape) == (0, 3) and e.dtype is flow.int64 and not e.is_shared()
    for x in (flow.tensor(3.0), flow.tensor([True, False]), flow.tensor([1.5, 2.0], dtype=flow.float16),
              flow.tensor(np.arange(6.0).reshape(2, 3)).T):
        y = pickle.loads(ForkingPickler.dumps(x))
        assert y.dtype is x.dtype and y.shape == x.shape and y.is_shared()
        np.testing.assert_array_equal(y.numpy(), x.numpy())
    # a tensor over an array with a negative stride, sent as such (from_numpy refuses negative strides, as OneFlow
    # 0.9's does: made here as the framework makes a local tensor of an array it holds)
    from oneflow_compat._global import creation

    rev = creation.local_tensor_of_array(t.numpy()[:, ::-1], t.dtype, "cpu")
    back = pickle.loads(ForkingPickler.dumps(rev))
    assert back.numpy().tolist() == [[3, 2, 1, 0], [7, 6, 5, -1], [11, 10, 9, 8]]
    back.numpy()[0, 0] = 33
    assert t.numpy()[0, 3] == 33
    del t, row, u, c, d, e, x, y, rev, back
    gc.collect()
    assert _segments() == before and _held() == ([], [])


# --- real processes ------------------------------------------------------------------------------------------------
def _queue_round_trip(method):
    ctx = mp.get_context(method)
    before = _segments()
    t = flow.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]).share_memory_()
    q, done = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_write_from_queue, args=(q, done))
    proc.start()
    q.put(t)
    assert done.get(timeout=JOIN_S) is True
    proc.join(JOIN_S)
    assert proc.exitcode == 0
    assert t.numpy().tolist() == [[0.0, 100.0, 2.0], [3.0, 4.0, 5.0]]  # the child's write, seen here
    del t
    gc.collect()
    assert _segments() == before


def test_forked_child_writes_to_a_shared_tensor_through_a_queue(strategy):
    _queue_round_trip("fork")


def test_spawned_child_writes_to_a_shared_tensor_through_a_queue():
    _queue_round_trip("spawn")  # 'file_descriptor': the descriptor goes through this process's resource sharer


def test_a_tensor_not_shared_is_copied_and_the_child_writes_its_copy():
    ctx = mp.get_context("fork")
    t = flow.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    q, done = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_write_from_queue, args=(q, done))
    proc.start()
    q.put(t)
    assert done.get(timeout=JOIN_S) is True  # arrived in shared memory
    proc.join(JOIN_S)
    assert t.numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_process_arguments_share_memory(method, strategy):
    ctx = mp.get_context(method)
    before = _segments()
    t = flow.zeros(5, dtype=flow.float32).share_memory_()
    copy = flow.tensor([1, 2])
    proc = ctx.Process(target=_write_args, args=(t, copy, 7.5, method == "spawn"))
    proc.start()
    proc.join(JOIN_S)
    assert proc.exitcode == 0 and t.numpy().tolist() == [7.5] * 5
    assert copy.numpy().tolist() == [1, 2]  # the child wrote its own copy
    del t, copy, proc
    gc.collect()
    assert _segments() == before and _held() == ([], [])


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_child_ending_with_a_tensor_held_lets_it_go(method):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")  # the holders' count: the child's must go when it ends
    try:
        ctx = mp.get_context(method)
        before = _segments()
        t = flow.ones(3).share_memory_()
        q, done = ctx.Queue(), ctx.Queue()
        proc = ctx.Process(target=_keep, args=(q, done))
        proc.start()
        q.put(t)
        assert done.get(timeout=JOIN_S) is True
        proc.join(JOIN_S)
        assert proc.exitcode == 0
        del t
        gc.collect()
        assert _segments() == before
    finally:
        mp.set_sharing_strategy(old)


def test_a_parameter_arrives_as_a_parameter_keeping_requires_grad(strategy):
    ctx = mp.get_context("fork")
    q, out = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=_param_info, args=(q, out))
    proc.start()
    q.put(flow.nn.Parameter(flow.tensor([1.0, 2.0]), requires_grad=False))
    q.put(flow.nn.Parameter(flow.tensor([3.0])))
    proc2 = ctx.Process(target=_param_info, args=(q, out))
    proc2.start()
    got = sorted([out.get(timeout=JOIN_S), out.get(timeout=JOIN_S)])
    proc.join(JOIN_S)
    proc2.join(JOIN_S)
    assert got == [("Parameter", False, [1.0, 2.0], True), ("Parameter", True, [3.0], True)]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_workers_write_shared_tensors_and_return_tensors(method):
    before = _segments()
    ts = [flow.tensor([float(i), 1.0]).share_memory_() for i in range(3)]
    with Pool(2, context=mp.get_context(method)) as pool:
        results = pool.map(_double, ts)
    assert [t.numpy().tolist() for t in ts] == [[0.0, 2.0], [2.0, 2.0], [4.0, 2.0]]
    assert [r.numpy().tolist() for r in results] == [[1.0, 3.0], [3.0, 3.0], [5.0, 3.0]]
    assert all(r.is_shared() for r in results)
    del ts, results
    gc.collect()
    assert _segments() == before


# --- spawn ----------------------------------------------------------------------------------------------------------
def test_spawn_runs_fn_with_its_index_and_shared_arguments():
    t = flow.zeros(3, dtype=flow.int64).share_memory_()
    assert mp.spawn(_spawned, args=(t, -1), nprocs=2) is None
    assert t.numpy().tolist() == [10, 11, 0]
    ctx = mp.start_processes(_spawned, args=(t, -1), nprocs=2, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join(JOIN_S):
        pass


def test_spawn_raises_the_error_of_a_child_naming_it():
    t = flow.zeros(2, dtype=flow.int64).share_memory_()
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_spawned, args=(t, 1), nprocs=2)
    msg = str(info.value)
    assert "-- Process 1 terminated with the following error:" in msg and "ValueError: boom in 1" in msg
    assert info.value.error_index == 1 and info.value.pid > 0
    with pytest.raises(mp.ProcessExitedException, match=r"^process 0 terminated with exit code 3$") as info:
        mp.start_processes(_exits, args=(3,), nprocs=1, start_method="fork")
    assert info.value.exit_code == 3
    with pytest.raises(mp.ProcessExitedException, match=r"^process 0 terminated with signal SIGKILL$") as info:
        mp.start_processes(_killed, nprocs=1, start_method="fork")
    assert info.value.signal_name == "SIGKILL"
    with pytest.warns(UserWarning, match=r"This method only supports start_method=spawn \(got: fork\)"):
        with pytest.raises(mp.ProcessExitedException, match="exit code 4"):
            mp.spawn(_exits, args=(4,), start_method="fork")


# --- the DataLoader's batches and the SharedMemory block ------------------------------------------------------------
def test_dataloader_workers_send_batches_through_shared_memory():
    before = _segments()
    ds = TensorDataset(flow.tensor(np.arange(20, dtype=np.float32).reshape(10, 2)), flow.arange(10))
    batches = list(DataLoader(ds, batch_size=4, num_workers=2))
    assert [b[1].numpy().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    # OneFlow 0.9's default context is the module itself (`multiprocessing_context = multiprocessing`)
    again = list(DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context=flow.multiprocessing))
    assert [b[1].numpy().tolist() for b in again] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and again[0][0].is_shared()
    del again
    assert batches[2][0].numpy().tolist() == [[16.0, 17.0], [18.0, 19.0]]
    assert all(x.is_shared() and y.is_shared() for x, y in batches)
    del batches
    gc.collect()
    assert _segments() == before


def test_dataloader_shut_down_early_leaves_no_segment():
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")  # named segments: those of the batches in flight must not stay behind
    try:
        before = _segments()
        ds = TensorDataset(flow.tensor(np.arange(40, dtype=np.float32).reshape(20, 2)))
        it = iter(DataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=4))
        workers = [w.pid for w in it._workers]
        first = next(it)
        assert first[0].is_shared() and first[0].numpy().tolist() == [[0.0, 1.0], [2.0, 3.0]]
        assert _segments(workers)  # the batches in flight: named segments of the workers
        it._shutdown_workers()
        del it, first
        gc.collect()
        assert _segments(workers) == before
    finally:
        mp.set_sharing_strategy(old)


def test_shared_memory_block():
    with pytest.raises(ValueError, match="'size' must be a positive number different from zero"):
        shared_memory.SharedMemory(create=True, size=0)
    with pytest.raises(ValueError, match="'size' must be a non-negative integer"):
        shared_memory.SharedMemory(create=True, size=-1)
    shm = shared_memory.SharedMemory(create=True, size=8)
    assert shm.name.startswith("ofshm_") and shm.size == 8 and shm.name in _segments()
    shm.buf[:3] = b"abc"
    other = pickle.loads(pickle.dumps(shm))  # reopened by name
    assert other.name == shm.name and bytes(other.buf[:3]) == b"abc"
    assert repr(other) == "SharedMemory(%r, size=8)" % shm.name
    other.close()
    shm.close()
    shm.unlink()
    assert shm.name not in _segments()


def test_unlink_all_shared_memory_and_register_after_fork():
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        t = flow.ones(2).share_memory_()
        assert _segments()
        mp.unlink_all_shared_memory()
        assert not _segments() and t.numpy().tolist() == [1.0, 1.0]  # the map stays valid
        del t
        gc.collect()
    finally:
        mp.set_sharing_strategy(old)
    from oneflow_compat.multiprocessing._atfork import register_after_fork

    register_after_fork(_mark_fork_child)  # stays registered: later forked children only get the variable
    pid = os.fork()
    if pid == 0:
        os._exit(7 if os.environ.get("ONEFLOW_COMPAT_TEST_AFTER_FORK") == "1" else 0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 7 and "ONEFLOW_COMPAT_TEST_AFTER_FORK" not in os.environ


def test_oneflow_queue_classes_pickle_with_the_reductions():
    from oneflow_compat.multiprocessing.queue import Queue, SimpleQueue

    q, sq = Queue(), SimpleQueue()
    q.put(flow.tensor([1, 2]))
    sq.put(flow.tensor([3.5]))
    a, b = q.get(timeout=JOIN_S), sq.get()
    assert a.is_shared() and a.numpy().tolist() == [1, 2] and b.is_shared() and b.numpy().tolist() == [3.5]
    q.close()
    q.join_thread()
    sq.close()


def test_a_tensor_of_graph_build_has_no_memory_to_share():
    class G(flow.nn.Graph):
        def build(self, x):
            x.share_memory_()
            return x

    with pytest.raises(RuntimeError, match=r"Tensor.share_memory_\(\): a tensor of nn.Graph's build\(\) has no "
                                           r"memory to share"):
        G()(flow.ones(2))
