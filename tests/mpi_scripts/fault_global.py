"""Faults of the global-tensor API on two ranks (issue 21), under a launcher:

    python fault_global.py save WHO STEP POINT FOLDER
    python fault_global.py graph RANK STEP
    python fault_global.py boxing RANK STEP

`save`: eager data-parallel training of a global module (broadcast parameters on ranks 0 and 1), the state dict
saved with `flow.save` into FOLDER/step_<k> after every step; at step STEP rank 0 (WHO=writer, the one writer)
kills itself as it is about to write file number POINT of the save, or rank 1 (WHO=other) kills itself POINT x 20 ms
into it while rank 0 writes slowly. Rank 0 prints "SAVING <k> <crc>" before each save and "SAVED <k> <crc>" after
(crc: `checkpoint_crc` of the values saved), so that the test can tell what each folder must hold.

`graph`: an nn.Graph training step on a global model (batch split over the ranks); at step STEP rank RANK is
killed (SIGKILL) by a timer 10 ms into the step (a step of some 100 ms), while the other rank computes or waits
in the step's collectives.
Rank 0 prints "RESULT <step> <loss>" after each step and every rank "finished rank R" at its end.

`boxing`: every step moves a 4 MB global tensor S(0) -> S(1) -> B on ranks 0 and 1 forty times (all-to-alls and
all-gathers whose results lie in the ranks' shared arenas, each rank copying straight into the other's result); at
step STEP rank RANK is killed by a timer 10 ms into the step, while the other pushes, reads or waits. Rank 0 prints
"RESULT <step> ok" (or "wrong") after each step, having compared its broadcast copy with the whole tensor.

The rank to be killed first writes "FAULT rank R pid P" to stderr."""
import os
import signal
import sys
import threading
import time
import zlib

import numpy as np

import oneflow as flow
import oneflow.nn as nn
from oneflow_compat.framework import checkpoint_format as fmt


def checkpoint_crc(arrays):
    crc = 0
    for name in sorted(arrays):
        crc = zlib.crc32(name.encode(), crc)
        crc = zlib.crc32(np.ascontiguousarray(arrays[name]).tobytes(), crc)
    return crc


def announce(rank):
    if flow.env.get_rank() == rank:
        sys.stderr.write("FAULT rank %d pid %d\n" % (rank, os.getpid()))
        sys.stderr.flush()


def model_on_both_ranks(width, depth=1):
    placement = flow.placement("cpu", ranks=[0, 1])
    flow.manual_seed(0)
    layers = [nn.Linear(64, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, 4))
    return model.to_global(placement, flow.sbp.broadcast), placement


def run_save(who, fault_step, point, folder):
    rank = flow.env.get_rank()
    announce(0 if who == "writer" else 1)
    model, placement = model_on_both_ranks(256)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    write_file = fmt._write_file
    rng = np.random.RandomState(0)
    for step in range(6):
        x = flow.tensor(rng.rand(8, 64).astype(np.float32), placement=placement, sbp=flow.sbp.split(0))
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        state = model.state_dict()
        crc = checkpoint_crc({name: t.numpy() for name, t in state.items()})
        if rank == 0:
            print("SAVING %d %d" % (step, crc), flush=True)
        if step == fault_step:
            if who == "writer" and rank == 0:
                written = [0]

                def write_then_die(path, payload):
                    if written[0] == point:
                        os.kill(os.getpid(), signal.SIGKILL)
                    written[0] += 1
                    write_file(path, payload)

                fmt._write_file = write_then_die
            elif who == "other":
                if rank == 0:
                    def slow_write(path, payload):
                        time.sleep(0.02)
                        write_file(path, payload)

                    fmt._write_file = slow_write
                else:
                    threading.Timer(point * 0.02, os.kill, (os.getpid(), signal.SIGKILL)).start()
        flow.save(state, os.path.join(folder, "step_%d" % step))
        if rank == 0:
            print("SAVED %d %d" % (step, crc), flush=True)
    print("finished rank %d" % rank, flush=True)


def run_graph(fault_rank, fault_step):
    rank = flow.env.get_rank()
    announce(fault_rank)
    model, placement = model_on_both_ranks(2048, depth=2)  # a step of some 100 ms: the kill falls inside it
    optimizer = flow.optim.SGD(model.parameters(), lr=0.01)

    class TrainStep(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    step_graph = TrainStep()
    rng = np.random.RandomState(0)
    for step in range(8):
        x = flow.tensor(rng.rand(256, 64).astype(np.float32), placement=placement, sbp=flow.sbp.split(0))
        if step == fault_step and rank == fault_rank:
            threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGKILL)).start()
        loss = step_graph(x)
        value = float(loss.to_global(sbp=flow.sbp.broadcast).to_local().numpy())
        if rank == 0:
            print("RESULT %d %.6f" % (step, value), flush=True)
    print("finished rank %d" % rank, flush=True)


def run_boxing(fault_rank, fault_step):
    rank = flow.env.get_rank()
    announce(fault_rank)
    placement = flow.placement("cpu", ranks=[0, 1])
    whole = np.random.RandomState(0).rand(1024, 1024).astype(np.float32)
    x = flow.tensor(whole[rank * 512:(rank + 1) * 512]).to_global(placement=placement, sbp=flow.sbp.split(0))
    for step in range(6):
        if step == fault_step and rank == fault_rank:
            threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGKILL)).start()
        right = True
        for _ in range(40):
            copy = x.to_global(sbp=flow.sbp.split(1)).to_global(sbp=flow.sbp.broadcast)
            right = right and np.array_equal(copy.to_local().numpy(), whole)
        if rank == 0:
            print("RESULT %d %s" % (step, "ok" if right else "wrong"), flush=True)
    print("finished rank %d" % rank, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "save":
        run_save(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif sys.argv[1] == "boxing":
        run_boxing(int(sys.argv[2]), int(sys.argv[3]))
    else:
        run_graph(int(sys.argv[2]), int(sys.argv[3]))
