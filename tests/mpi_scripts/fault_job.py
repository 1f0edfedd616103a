"""A two-rank training job with one injected fault: python fault_job.py MODE [STEP]

MODE names what the last rank does at step STEP (default 3): raise, exit (sys.exit(3)), kill (SIGKILL), term
(SIGTERM), stop (SIGSTOP: only the comm timeout can end the job), diverge (calls the other job), skip (catches a
rejected feed and goes on with the next batch), none. Rank 0 prints "RESULT <loss>" for each step it completes and
"finished" at the end; a rank that reaches the end after a fault on another rank is a wrong result."""
import os
import signal
import sys

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.comm import world

mode = sys.argv[1]
fault_step = int(sys.argv[2]) if len(sys.argv) > 2 else 3
comm = world.get_process_comm()
faulty = comm.rank == comm.size - 1


@flow.global_function(type="train")
def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
    h = flow.layers.dense(x, 4, name="hidden", kernel_initializer=flow.constant_initializer(0.1))
    loss = flow.math.reduce_mean(flow.math.square(h))
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss


@flow.global_function(type="predict")
def evaluate(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
    return flow.math.reduce_sum(x)


for step in range(8):
    batch = np.full((4, 3), step + 1, np.float32)
    if faulty and step == fault_step:
        if mode == "raise":
            raise ValueError("injected failure on rank %d at step %d" % (comm.rank, step))
        if mode == "exit":
            sys.exit(3)
        if mode in ("kill", "term", "stop"):
            os.kill(os.getpid(), {"kill": signal.SIGKILL, "term": signal.SIGTERM, "stop": signal.SIGSTOP}[mode])
        if mode == "diverge":
            evaluate(batch)
            continue
        if mode == "skip":
            try:
                train(np.ones((5, 3), np.float32))  # rejected: wrong shape
            except (AssertionError, ValueError):
                continue  # the batch is dropped on this rank only
    loss = train(batch)
    if comm.rank == 0:
        print("RESULT %d %r" % (step, float(np.mean(loss))), flush=True)
print("finished rank %d" % comm.rank, flush=True)
