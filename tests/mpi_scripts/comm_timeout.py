"""The last rank never enters the all-reduce (it sleeps); the others must raise CollectiveTimeout after 3 s
naming it as missing, and the job must end. With the argument `shared`, the all-reduce is of a buffer in memory the
ranks share (`shared_buffer`: no MPI call while it waits), with the same guarantee."""
import sys
import time

import numpy as np

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
comm.set_timeout(3)
everyone = tuple(range(comm.size))
buf = comm.shared_buffer((4,), np.float64, everyone) if sys.argv[1:] == ["shared"] else np.ones(4)
comm.barrier()
if comm.rank == comm.size - 1:
    time.sleep(60)
comm.allreduce_(buf, everyone)
