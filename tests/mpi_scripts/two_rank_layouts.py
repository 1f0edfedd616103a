"""What api_gaps_ranks.py and api_shape_ranks.py share: the world of 2 MPI ranks, its placement and SBP symbols,
`ok(name)` (rank 0 prints `OK <name>`) and `g(array, sbp)`, the array as a global tensor laid out as `sbp` (each
rank holding its piece)."""
import sys

import oneflow as flow
from oneflow_compat.runtime import global_eager

comm = global_eager.comm()
RANK, WORLD = comm.rank, comm.size
assert WORLD == 2, "run under mpiexec -n 2"
P = flow.placement("cpu", ranks=[0, 1])
B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)


def ok(name):
    if RANK == 0:
        print("OK", name)
        sys.stdout.flush()


def g(a, sbp, grad=False, dtype=flow.float64):
    t = flow.tensor(a, dtype=dtype).to_global(placement=P, sbp=B).to_global(sbp=sbp)  # (each rank: its piece)
    t.requires_grad = grad
    return t
