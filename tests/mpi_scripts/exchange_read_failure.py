"""A 1 -> 2 S(0) `to_global` of a 4 MB tensor whose receiver's read of the root's memory fails (rank 1's
`cross_memory.read` refuses after the first, warm-up call): rank 1 raises CommError naming rank 0; rank 0's call
completes (rank 1 says it is through before raising) and it prints "sender released"; the job then ends through the
failure handlers. Run by tests/test_boxing_passes.py."""
import numpy as np

import oneflow_compat as flow
from oneflow_compat.comm import cross_memory
from oneflow_compat.runtime import global_eager

comm = global_eager.comm()
rank = comm.rank
x = flow.tensor(np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024)).to_global(
    placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
every = flow.placement("cpu", [0, 1])
y = x.to_global(placement=every, sbp=flow.sbp.split(0))  # warm: boards probed, arenas grown
assert comm.reads_between([0, 1])
assert np.array_equal(y.to_local().numpy(), np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024)
                      [512 * rank:512 * (rank + 1)])
if rank == 1:
    def refuse(pid, where, into):
        raise OSError(1, "refused for the test")
    cross_memory.read = refuse
y = x.to_global(placement=every, sbp=flow.sbp.split(0))
if rank == 0:
    print("sender released", flush=True)
    comm.barrier()  # (rank 1 never comes: the job ends through its failure)
