"""What every collective names, the process-wide turns of eager ops and nn.Graph calls, and the texts the ranks
compare (runtime/activity.py, runtime/agreement.py) — the parts one process can show; tests/test_agreement_mpi.py
runs the ranks."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.runtime import activity, agreement, global_eager


def _run_threads(targets):
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch often, so that unserialised calls would interleave inside one call
    errors = []

    def guarded(target):
        def run():
            try:
                target()
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errors.append(e)
        return run

    threads = [threading.Thread(target=guarded(t), name="worker-%d" % k) for k, t in enumerate(targets)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0]


def test_a_legacy_job_collective_names_the_job_call_and_op():
    seen = []

    @flow.global_function()
    def watched(x: tp.Numpy.Placeholder((4,))) -> tp.Numpy:
        y = x * 2.0
        flow.watch(y, lambda v: seen.append(activity.describe_current()))  # runs inside the watch op's collective
        return y

    watched(np.ones(4, np.float32))
    watched(np.ones(4, np.float32))
    assert seen == ["job 'watched' call #1, op 'watch_0'", "job 'watched' call #2, op 'watch_0'"]
    assert activity.describe_current() is None


def test_frames_nest_and_name_the_thread():
    seen = []
    with activity.operation("nn.Graph 'G_0' call #3") as call:
        with activity.operation("compiling nn.Graph 'G_0'"):
            assert activity.describe_current() == "compiling nn.Graph 'G_0' (within nn.Graph 'G_0' call #3)"
        activity.issued_by("fc-boxing", lambda: seen.append(activity.describe_current()))()
        assert call.op is None  # the op is named only while its collective runs
    assert seen == ["nn.Graph 'G_0' call #3, op 'fc-boxing'"]
    in_thread = []

    def worker():
        with activity.operation("eager op 'relu'"):
            in_thread.append(activity.describe_current())

    _run_threads([worker])
    assert in_thread == ["eager op 'relu' in thread 'worker-0'"]


def test_eager_ops_from_two_threads_equal_the_sequential_run():
    # the same cached one-op plans (one register file each) serve both threads
    xs = [[flow.tensor(np.random.RandomState(10 * t + i).randn(16, 8).astype(np.float32)) for i in range(60)]
          for t in range(2)]

    def step(x):
        return ((x * 3.0 + 1.0).relu().sum(dim=1) - x.mean()).numpy()

    expected = [[step(x) for x in row] for row in xs]
    got = [[None] * 60, [None] * 60]

    def worker(t):
        def run():
            for i, x in enumerate(xs[t]):
                got[t][i] = step(x)
        return run

    _run_threads([worker(0), worker(1)])
    wrong = sum(not np.array_equal(g, e) for t in range(2) for g, e in zip(got[t], expected[t]))
    assert wrong == 0, "%d of 120 threaded eager results differ from the sequential ones" % wrong


def test_two_threads_calling_one_graph_equal_the_sequential_run():
    linear = flow.nn.Linear(8, 4)

    class Predict(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.linear = linear

        def build(self, x):
            return (self.linear(x) * 2.0).relu()

    graph = Predict()
    xs = [[flow.tensor(np.random.RandomState(10 * t + i).randn(16, 8).astype(np.float32)) for i in range(60)]
          for t in range(2)]
    expected = [[graph(x).numpy() for x in row] for row in xs]
    got = [[None] * 60, [None] * 60]

    def worker(t):
        def run():
            for i, x in enumerate(xs[t]):
                got[t][i] = graph(x).numpy()
        return run

    _run_threads([worker(0), worker(1)])
    wrong = sum(not np.array_equal(g, e) for t in range(2) for g, e in zip(got[t], expected[t]))
    assert wrong == 0, "%d of 120 threaded graph calls differ from the sequential ones" % wrong


def test_grad_mode_is_per_thread():
    inside, recorded = threading.Event(), threading.Event()
    results = {}

    def quiet():
        with flow.no_grad():
            inside.set()
            recorded.wait(10)
            results["quiet"] = flow.is_grad_enabled()

    def recording():
        inside.wait(10)
        x = flow.ones(3, requires_grad=True)
        results["recording"] = (flow.is_grad_enabled(), (x * 2.0).requires_grad)
        recorded.set()

    _run_threads([quiet, recording])
    assert results == {"quiet": False, "recording": (True, True)}
    assert flow.is_grad_enabled()


def test_a_turn_handed_to_a_thread_lets_only_that_thread_in():
    lock = agreement.Turns()
    order = []
    lock.acquire()
    lock.acquire()  # re-entrant
    assert lock.depth() == 2
    lock.release()
    lock.hand_to(agreement.digest("worker-1") & ((1 << 20) - 1))
    lock.release()

    def take(name):
        def run():
            with lock:
                order.append(name)
                lock.taken(agreement._THREAD.tag)
        return run

    first = threading.Thread(target=take("worker-0"), name="worker-0")
    first.start()
    first.join(0.2)
    assert first.is_alive() and order == []  # worker-0 waits: the turn is worker-1's
    second = threading.Thread(target=take("worker-1"), name="worker-1")
    second.start()
    second.join(10)
    first.join(10)
    assert order == ["worker-1", "worker-0"]
    assert lock.depth() == 0


def test_a_turn_nobody_takes_is_given_up_after_the_timeout():
    lock = agreement.Turns()
    lock.hand_to(12345)
    assert lock.wait_until_taken(12345, 0.05) is False
    with lock:  # given up: anyone may take the lock again
        assert lock.depth() == 1


def test_mismatch_messages_name_both_sides():
    op = "eager op 'to_global' ((4, 5) S(0) on cpu ranks [0, 1] -> B on cpu ranks [0, 1])"
    infos = [("MainThread", "nn.Graph 'A_0' call #2", 7, [(6, op)]),
             ("MainThread", "nn.Graph 'B_0' call #2", 7, [(6, op)])]
    assert agreement._mismatch(1, (0, 1), infos) == (
        "rank 1 runs nn.Graph 'B_0' call #2 (global op #7) while rank 0 runs nn.Graph 'A_0' call #2 (global op #7): "
        "the ranks run different global operations (every rank must run the same global ops and nn.Graph calls, "
        "in the same order)")
    # the same op now, an extra op before it on rank 1
    infos = [("MainThread", op, 3, [(1, "a"), (2, "b")]),
             ("MainThread", op, 4, [(1, "a"), (2, "b"), (3, "c")])]
    assert agreement._mismatch(0, (0, 1), infos) == (
        "rank 0 runs %s as the other ranks do, but before it the ranks ran different global operations: rank 0's "
        "global op #3 is %s; rank 1's global op #3 is c" % (op, op))
    infos = [("MainThread", op, 40, [(39, "z")]), ("MainThread", op, 40, [(39, "z")])]
    assert agreement._mismatch(0, (0, 1), infos).endswith(
        "but before it, more than %d operations back, the ranks ran different global operations" % agreement.RECENT)


class _Opaque:
    pass


def test_identity_texts_hold_nothing_that_differs_between_processes():
    text = global_eager._stable_text({"b": [1, 2.5], "a": (_Opaque(), np.zeros((2, 3), np.int64), None, "s")})
    assert text == "{'a': (_Opaque, array(2, 3) int64, None, 's'), 'b': (1, 2.5)}"
    # the digest is the same in another process (str hash() is not: it is salted per process)
    code = "from oneflow_compat.runtime import agreement; print(agreement.digest('job call #1'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONHASHSEED="random"))
    assert int(out.stdout) == agreement.digest("job call #1") < 2 ** 60


@pytest.mark.parametrize("values", [[5, 5, 5], [3, 7, 5], [1, 2, 3], [0, 10, 5], [2 ** 20 - 1, 2 ** 20 - 1, 1]])
def test_every_member_decides_alike_from_the_sums(values):
    # each member holds one value of one part; the allreduce gives the sums of the values and of their squares
    sums = np.array([sum(values), 0, 0, 0, sum(v * v for v in values), 0, 0, 0], np.int64)
    decided = [agreement._same_everywhere(sums, [v, 0, 0, 0], len(values))[0] for v in values]
    assert decided == [len(set(values)) == 1] * len(values)
