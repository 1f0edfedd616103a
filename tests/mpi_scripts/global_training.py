"""Eager data-parallel training of a tiny MLP written with global tensors and functional ops, on every rank of the
world (tests/test_global_mpi.py runs it on 1 rank and under `mpiexec -n 2` and compares step by step).

Weights are broadcast, the batch is split along dim 0; the loss is a partial sum whose backward leaves P
gradients that autograd all-reduces into the weights' own B layout. Rank 0 prints one `STEP k loss` line per step
and the final weights."""
import json

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

world = global_eager.world_size()
P = flow.placement("cpu", list(range(world)))
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
flow.manual_seed(11)
w1 = flow.randn(6, 16, placement=P, sbp=B) * 0.3
b1 = flow.zeros(16, placement=P, sbp=B)
w2 = flow.randn(16, 4, placement=P, sbp=B) * 0.3
params = [w1, b1, w2]
for p in params:
    p.requires_grad_(True)
x = flow.randn(10, 6, placement=P, sbp=S0)  # 10 rows: uneven pieces on 4 ranks, even on 2
labels = flow.randint(0, 4, (10,), placement=P, sbp=S0)
for step in range(5):
    h = flow.relu(flow.matmul(x, w1) + b1)
    loss = flow.nn.functional.cross_entropy(flow.matmul(h, w2), labels)
    loss.backward()
    with flow.no_grad():
        for p in params:
            assert p.grad.sbp == (B,), p.grad.sbp
            p -= 0.5 * p.grad
            p.grad = None
    value = loss.item()  # a collective: every rank calls it
    if global_eager.rank() == 0:
        print("STEP", step, repr(value))
final = [p.numpy().tolist() for p in params]
if global_eager.rank() == 0:
    print("WEIGHTS", json.dumps(final))
