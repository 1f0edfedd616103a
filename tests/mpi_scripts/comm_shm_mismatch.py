"""The last rank calls an all-to-all where the others call an all-gather over the same ranks of one host (their
shared-memory board): every rank must raise CommError naming what each runs, then the job goes on (the board is
still usable: a matching all-gather after it works)."""
import numpy as np

from oneflow_compat.comm import CommError, get_process_comm

comm = get_process_comm()
everyone = tuple(range(comm.size))
last = comm.rank == comm.size - 1
try:
    if last:
        comm.alltoallv([np.ones((2, 3))] * comm.size, everyone, axis=0, recv_sizes=[2] * comm.size)
    else:
        comm.allgatherv(np.ones((2, 3)), everyone, axis=0, sizes=[2] * comm.size)
    raise SystemExit("no error raised on rank %d" % comm.rank)
except CommError as e:
    print("rank %d caught: %s" % (comm.rank, e), flush=True)
got = comm.allgatherv(np.full((1, 2), comm.rank), everyone, sizes=[1] * comm.size)
assert got.tolist() == [[r, r] for r in everyone], got
