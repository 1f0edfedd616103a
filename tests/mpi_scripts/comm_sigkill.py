"""The last rank kills itself with SIGKILL mid-run; the others wait in a collective. The job must end non-zero."""
import os
import signal

import numpy as np

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
comm.allreduce_(np.ones(1000), tuple(range(comm.size)))
if comm.rank == comm.size - 1:
    os.kill(os.getpid(), signal.SIGKILL)
comm.allreduce_(np.ones(1000), tuple(range(comm.size)))
