"""Failure modes of a training job under mpiexec: python -m mpi4py failing_job.py MODE

MODE: mismatch (rank 1 builds a different job), raise (rank 1 raises in its training loop), kill (rank 1 kills
itself mid-training)."""
import os
import signal
import sys

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.comm import world

mode = sys.argv[1]
rank = world.get_process_comm().rank
width = 8 if (mode == "mismatch" and rank == 1) else 4


@flow.global_function(type="train")
def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
    h = flow.layers.dense(x, width, name="hidden", kernel_initializer=flow.constant_initializer(0.1))
    loss = flow.math.reduce_mean(flow.math.square(h))
    flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
    return loss


for step in range(1000):
    train(np.ones((4, 3), np.float32))
    if step == 3 and rank == 1:
        if mode == "raise":
            raise ValueError("boom on rank 1 at step 3")
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
print("finished")
