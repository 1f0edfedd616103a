"""The last rank raises; the others wait in a collective. All ranks must end within seconds, non-zero."""
from oneflow_compat.comm import get_process_comm
import numpy as np

comm = get_process_comm()
comm.barrier()
if comm.rank == comm.size - 1:
    raise ValueError("boom on purpose on the last rank")
comm.allreduce_(np.ones(4), tuple(range(comm.size)))
