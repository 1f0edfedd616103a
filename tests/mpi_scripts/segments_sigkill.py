"""Every rank says which MPICH shared-memory segments it maps, then the last rank kills itself with SIGKILL: it never
reaches MPI_Finalize, which would unlink them (tests/test_segment_cleanup.py checks the launchers remove them)."""
import os
import signal
import sys

import numpy as np

from oneflow_compat.comm import get_process_comm
from oneflow_compat.comm.rank_records import mapped_segments

comm = get_process_comm()
members = tuple(range(comm.size))
comm.allreduce_(np.ones(1000), members)
print("SEGMENTS %d %s" % (comm.rank, " ".join(mapped_segments())), file=sys.stderr, flush=True)
comm.allreduce_(np.ones(1000), members)  # every rank has said it before one dies
if comm.rank == comm.size - 1:
    os.kill(os.getpid(), signal.SIGKILL)
comm.allreduce_(np.ones(1000), members)
