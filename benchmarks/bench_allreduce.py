"""All-reduce cost of the process comm against raw mpi4py on the same buffers.

Run: mpiexec -n 2 python -m mpi4py benchmarks/bench_allreduce.py
(`/work/main/.venv/bin/mpiexec` in this project). For each size from 64 KB to 16 MB, float32, it alternates rounds of
`MPIComm.allreduce_` (nonblocking + polled completion with timeout) and `MPI.COMM_WORLD.Allreduce(IN_PLACE)`,
takes the median round of each, and prints the ratio (the target is <= 1.1x from 1 MB up).
"""
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

from oneflow_compat.comm import get_process_comm

ROUNDS = 7
ROUND_SECONDS = 0.05


def time_round(call, repeats):
    MPI.COMM_WORLD.Barrier()
    started = time.perf_counter()
    for _ in range(repeats):
        call()
    elapsed = (time.perf_counter() - started) / repeats
    return MPI.COMM_WORLD.allreduce(elapsed, op=MPI.MAX)  # the slowest rank's view is the collective's cost


def main():
    comm = get_process_comm()
    world = MPI.COMM_WORLD
    everyone = tuple(range(comm.size))
    if comm.rank == 0:
        print("all-reduce, float32, %d ranks: process comm vs raw mpi4py (median of %d rounds)"
              % (comm.size, ROUNDS))
        print("%10s %14s %14s %8s" % ("bytes", "allreduce_ us", "Allreduce us", "ratio"))
    for size in [64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20]:
        buf = np.zeros(size // 4, np.float32)

        def ours():
            comm.allreduce_(buf, everyone)

        def raw():
            world.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

        ours(), raw()  # warm-up
        probe = time_round(raw, 3)
        repeats = max(3, int(ROUND_SECONDS / max(probe, 1e-6)))
        repeats = world.bcast(repeats, root=0)
        ours_times, raw_times = [], []
        for _ in range(ROUNDS):
            ours_times.append(time_round(ours, repeats))
            raw_times.append(time_round(raw, repeats))
        a, b = statistics.median(ours_times), statistics.median(raw_times)
        if comm.rank == 0:
            print("%10d %14.1f %14.1f %7.2fx" % (size, a * 1e6, b * 1e6, a / b))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
