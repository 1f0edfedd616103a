"""A global op that only rank 1 reaches (tests/test_global_mpi.py runs it under `mpiexec -n 2` with a short comm
timeout): rank 1 waits in the op's collective until rank 0 leaves the program, then fails naming the op and rank 0,
and every rank ends."""
import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

P = flow.placement("cpu", [0, 1])
x = flow.randn(4, 5, placement=P, sbp=flow.sbp.split(0))
if global_eager.rank() == 1:
    x.to_global(sbp=flow.sbp.broadcast)
    print("rank 1 passed the divergent op")
print("rank %d reached the end" % global_eager.rank())
