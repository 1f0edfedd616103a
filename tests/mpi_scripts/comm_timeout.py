"""The last rank never enters the all-reduce (it sleeps); the others must raise CollectiveTimeout after 3 s
naming it as missing, and the job must end."""
import time

import numpy as np

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
comm.set_timeout(3)
comm.barrier()
if comm.rank == comm.size - 1:
    time.sleep(60)
comm.allreduce_(np.ones(4), tuple(range(comm.size)))
