"""The last rank reports a failure to the others, as the failure handler does, but never aborts (a launcher that
lost the abort): the others must end the job themselves within seconds instead of waiting for their timeout."""
import time

import numpy as np

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
comm.barrier()
if comm.rank == comm.size - 1:
    comm.tell_others_this_rank_fails()
    time.sleep(60)  # stands for a rank that failed and whose abort nobody acted on
comm.allreduce_(np.ones(4), tuple(range(comm.size)))
print("not reached")
