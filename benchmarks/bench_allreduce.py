"""All-reduce cost of the process comm against raw mpi4py on the same buffers.

Run: mpiexec -n 2 python -m mpi4py benchmarks/bench_allreduce.py
(`/work/main/.venv/bin/mpiexec` in this project). For each size from 64 KB to 16 MB (float32) it times single calls
of `MPIComm.allreduce_` (nonblocking + polled completion with a timeout) and of
`MPI.COMM_WORLD.Allreduce(IN_PLACE)`, alternating one call of each after a barrier, so that both see the same
machine load; a call's time is the slowest rank's. It prints the median per call and the ratio (target: <= 1.1x
from 1 MB up).
"""
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

from oneflow_compat.comm import get_process_comm

SECONDS_PER_SIZE = 1.0


def timed_call(call, world):
    world.Barrier()
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main():
    comm = get_process_comm()
    world = MPI.COMM_WORLD
    everyone = tuple(range(comm.size))
    if comm.rank == 0:
        print("all-reduce, float32, %d ranks: process comm vs raw mpi4py (median of alternating single calls)"
              % comm.size)
        print("%10s %8s %14s %14s %8s" % ("bytes", "calls", "allreduce_ us", "Allreduce us", "ratio"))
    for size in [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]:
        buf = np.zeros(size // 4, np.float32)

        def ours():
            comm.allreduce_(buf, everyone)

        def raw():
            world.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

        for _ in range(3):  # warm-up
            ours(), raw()
        probe = max(timed_call(raw, world), timed_call(ours, world))
        pairs = world.bcast(max(50, int(SECONDS_PER_SIZE / 2 / max(probe, 1e-6))), root=0)
        ours_times, raw_times = [], []
        for _ in range(pairs):
            ours_times.append(timed_call(ours, world))
            raw_times.append(timed_call(raw, world))
        ours_times = np.max(world.allgather(ours_times), axis=0)
        raw_times = np.max(world.allgather(raw_times), axis=0)
        a, b = statistics.median(ours_times), statistics.median(raw_times)
        if comm.rank == 0:
            print("%10d %8d %14.1f %14.1f %7.2fx" % (size, pairs, a * 1e6, b * 1e6, a / b))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
