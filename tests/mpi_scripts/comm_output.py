"""Each rank prints one stdout line and one stderr line, so the per-rank output rules can be checked."""
import os
import sys

from oneflow_compat.comm import get_process_comm

comm = get_process_comm()
print("hello from rank %d of %d" % (comm.rank, comm.size))
print("threads %s %s %s" % tuple(os.environ.get(v, "-") for v in
                                ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")))
sys.stderr.write("note from rank %d\n" % comm.rank)
comm.barrier()
