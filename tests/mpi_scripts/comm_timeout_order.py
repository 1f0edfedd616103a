"""Ranks 0 and 1 wait in different operations (rank 0 in an all-reduce over (0, 1), rank 1 in a receive from
rank 0 that never comes): after the 3 s timeout, the message must say where the other rank is."""
import numpy as np

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
comm.set_timeout(3)
comm.barrier()
if comm.rank == 0:
    comm.allreduce_(np.ones(4), (0, 1))
elif comm.rank == 1:
    comm.recv((4,), 0)
comm.barrier()
