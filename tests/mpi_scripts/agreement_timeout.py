"""A collective that times out names the graph, the call and the op that issued it (tests/test_agreement_mpi.py
runs this under `mpiexec -n 2` with a short comm timeout).

Both ranks call the graph once; then rank 1 is held up inside the second call, after the ranks agreed on it and
before the graph's boxing, so rank 0 waits in the boxing's collective until the timeout ends the job. Rank 0 prints
`COLLECTIVE <op name>` (the op whose collective it will wait in) before the second call.
"""
import time

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

RANK = global_eager.rank()
P = flow.placement("cpu", [0, 1])


class Gather(flow.nn.Graph):
    def build(self, x):
        return (x * 2.0).to_global(sbp=flow.sbp.broadcast)


graph = Gather()
x = flow.randn(4, 5, placement=P, sbp=flow.sbp.split(0))
graph(x)
plan = graph._compiled.plan
if RANK == 0:
    print("COLLECTIVE %s" % next(op.name for op in plan.step_ops if op.defn.collective), flush=True)
else:
    first = plan.steps[0]

    def held_up():
        time.sleep(60)
        first()

    plan.steps[0] = held_up
graph(x)
print("rank %d passed the second call" % RANK, flush=True)
