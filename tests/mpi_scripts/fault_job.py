"""A two-rank training job with one injected fault: python fault_job.py MODE [RANK [STEP]]

Rank RANK (default: the last) does MODE at step STEP (default 3): raise, exit (sys.exit(3)), sysexit (a bare
`raise SystemExit(3)`), leave (returns from the program normally, skipping the remaining steps), kill (SIGKILL),
term (SIGTERM), segv (a segmentation fault), stop (SIGSTOP: only the comm timeout can end the job), diverge (calls
the other job), skip (catches a rejected feed and goes on with the next batch), none. The faulty rank first
writes "FAULT rank R pid P" to stderr (MPI names a killed process by pid only). Rank 0 prints "RESULT <step>
<loss>" for each step it completes and every rank "finished rank R" at the end: a rank that reaches the end after
a fault on another rank is a wrong result."""
import ctypes
import os
import signal
import sys

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.comm import world

mode = sys.argv[1]
comm = world.get_process_comm()
faulty_rank = int(sys.argv[2]) if len(sys.argv) > 2 else comm.size - 1
fault_step = int(sys.argv[3]) if len(sys.argv) > 3 else 3
faulty = comm.rank == faulty_rank
if faulty:
    sys.stderr.write("FAULT rank %d pid %d\n" % (comm.rank, os.getpid()))
    sys.stderr.flush()


@flow.global_function(type="train")
def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
    h = flow.layers.dense(x, 4, name="hidden", kernel_initializer=flow.constant_initializer(0.1))
    loss = flow.math.reduce_mean(flow.math.square(h))
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss


@flow.global_function(type="predict")
def evaluate(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
    return flow.math.reduce_sum(x)


SIGNALS = {"kill": signal.SIGKILL, "term": signal.SIGTERM, "stop": signal.SIGSTOP}


def main():
    for step in range(8):
        batch = np.full((4, 3), step + 1, np.float32)
        if faulty and step == fault_step:
            if mode == "raise":
                raise ValueError("injected failure on rank %d at step %d" % (comm.rank, step))
            if mode == "exit":
                sys.exit(3)
            if mode == "sysexit":
                raise SystemExit(3)
            if mode == "leave":
                return False
            if mode == "segv":
                ctypes.string_at(0)
            if mode in SIGNALS:
                os.kill(os.getpid(), SIGNALS[mode])
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
    return True


if main():
    print("finished rank %d" % comm.rank, flush=True)
