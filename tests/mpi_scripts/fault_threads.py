"""Two threads calling one job on every rank, under MPI: each thread's results must be those of a sequential run.

Thread t feeds its own batches (the same on every rank); the results of every call are compared with the results
of the same batches fed one by one from the main thread. On rank 0 thread 0 starts first, on rank 1 thread 1: the
ranks must still pair each call with the same call on the other rank. Rank 0 prints "THREADS <calls> calls, wrong on ranks
[...]" with the ranks (if any) where some thread got another call's result."""
import sys
import threading
import time

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.comm import world

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
comm = world.get_process_comm()


@flow.global_function()
def predict(x: tp.Numpy.Placeholder((8, 16))) -> tp.Numpy:
    w = flow.get_variable("w", shape=(16, 4), initializer=flow.random_uniform_initializer())
    return flow.math.tanh(flow.matmul(x, w))


batches = [[np.random.RandomState(1000 * t + i).rand(8, 16).astype(np.float32) for i in range(CALLS)]
           for t in range(2)]
expected = [[predict(x) for x in thread_batches] for thread_batches in batches]
got = [[None] * CALLS for _ in range(2)]
errors = []


def caller(t):
    if t != comm.rank % 2:
        time.sleep(0.5)  # the threads reach the job in one order on rank 0 and in the other on rank 1
    try:
        for i, x in enumerate(batches[t]):
            got[t][i] = predict(x)
    except BaseException as e:  # noqa: BLE001 (reported below, on every rank)
        errors.append("%s: %s" % (type(e).__name__, e))


old = sys.getswitchinterval()
sys.setswitchinterval(1e-5)  # switch threads often, so that calls would interleave inside a job call
threads = [threading.Thread(target=caller, args=(t,), name="caller-%d" % t) for t in range(2)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
sys.setswitchinterval(old)
if errors:
    raise RuntimeError("a calling thread failed on rank %d: %s" % (comm.rank, errors[0]))
wrong = [(t, i) for t in range(2) for i in range(CALLS) if not np.array_equal(got[t][i], expected[t][i])]
verdicts = comm.allgather_object(len(wrong))
if comm.rank == 0:
    print("THREADS %d calls, wrong on ranks %s" % (2 * CALLS, [r for r, n in enumerate(verdicts) if n]), flush=True)
