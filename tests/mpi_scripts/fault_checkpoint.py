"""Training with a checkpoint after every step, one rank killed (SIGKILL) during the save at step STEP:

    python fault_checkpoint.py HOW WHO STEP POINT FOLDER

HOW: `save` (flow.checkpoint.save into a new folder FOLDER/step_<k> each step) or `replace` (flow.checkpoint.replace
of FOLDER/ckpt each step: written beside it, then swapped in). WHO: `writer` — rank 0, the one writer, kills
itself as it is about to write file number POINT (from 0) of the save; `other` — rank 1 kills itself POINT × 20 ms
into the save while rank 0 writes slowly, so MPI ends the writer at some point of its save. Rank 0 prints
"SAVING <k> <crc>" before each save and "SAVED <k> <crc>" after it (crc: `checkpoint_crc` of the values saved), so
that the test can tell which checkpoint each folder must hold; the rank to be killed writes "FAULT rank R pid P" to
stderr."""
import os
import signal
import sys
import threading
import time
import zlib

import numpy as np

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.comm import world
from oneflow_compat.framework import checkpoint_format as fmt


def checkpoint_crc(arrays):
    """One number for {name: array}: the same for the values saved and for the same values loaded back."""
    crc = 0
    for name in sorted(arrays):
        crc = zlib.crc32(name.encode(), crc)
        crc = zlib.crc32(np.ascontiguousarray(arrays[name]).tobytes(), crc)
    return crc


def main(how, who, fault_step, point, folder):
    comm = world.get_process_comm()
    if comm.rank == (0 if who == "writer" else 1):
        sys.stderr.write("FAULT rank %d pid %d\n" % (comm.rank, os.getpid()))
        sys.stderr.flush()

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 64))) -> tp.Numpy:
        h = flow.layers.dense(x, 256, name="hidden", activation=flow.math.relu,
                              kernel_initializer=flow.random_uniform_initializer(-0.1, 0.1))
        out = flow.layers.dense(h, 4, name="out", kernel_initializer=flow.random_uniform_initializer(-0.1, 0.1))
        loss = flow.math.reduce_mean(flow.math.square(out))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.05]), momentum=0.9).minimize(loss)
        return loss

    write_file = fmt._write_file
    rng = np.random.RandomState(0)
    for step in range(6):
        train(rng.rand(8, 64).astype(np.float32))
        values = {name: blob.numpy() for name, blob in flow.get_all_variables().items()}
        crc = checkpoint_crc(values)
        if comm.rank == 0:
            print("SAVING %d %d" % (step, crc), flush=True)
        if step == fault_step:
            if who == "writer" and comm.rank == 0:
                written = [0]

                def write_then_die(path, payload):
                    if written[0] == point:
                        os.kill(os.getpid(), signal.SIGKILL)
                    written[0] += 1
                    write_file(path, payload)

                fmt._write_file = write_then_die
            elif who == "other":
                if comm.rank == 0:
                    def slow_write(path, payload):
                        time.sleep(0.02)
                        write_file(path, payload)

                    fmt._write_file = slow_write
                else:
                    threading.Timer(point * 0.02, os.kill, (os.getpid(), signal.SIGKILL)).start()
        if how == "save":
            flow.checkpoint.save(os.path.join(folder, "step_%d" % step), values)
        else:
            flow.checkpoint.replace(os.path.join(folder, "ckpt"), values)
        if comm.rank == 0:
            print("SAVED %d %d" % (step, crc), flush=True)
    print("finished rank %d" % comm.rank, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
