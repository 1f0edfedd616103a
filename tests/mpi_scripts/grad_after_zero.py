"""Gradients written between zero_grad() and backward, over MPI on 2 ranks (tests/test_grad_after_zero.py runs this
under `mpiexec -n 2` with a timeout): the buckets live in memory the ranks share (comm/shm.py) and the old
partial-sum pieces ride in their all-reduce.

* writes of every kind (to_local on one rank, different per rank, add_ of a partial sum, fill_) give OneFlow 0.9's
  sum: the old partial sum's pieces summed over the ranks plus the new gradient (numpy reference);
* a steady step makes one collective (the bucket's all-reduce, its check carried), with writes or without;
* the gradient is its slot in the shared bucket;
* a step without writes gives the bits of a backward into no gradient (zero_grad(set_to_none=True)).

Every rank prints `CHECK <name> ok` per check and `DONE <count>`."""
import os
import sys

import numpy as np

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import done, ok  # noqa: E402  (beside this script)

RANK = global_eager.rank()
COMM = global_eager.comm()
PL = flow.placement("cpu", [0, 1])
B, P, S0 = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split(0)
W0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
X = np.arange(24, dtype=np.float32).reshape(8, 3) / 4 - 1
M = np.array([[1.0, 2.0], [-3.0, 0.5], [0.25, 4.0]], np.float32)
G = X.T @ (X @ W0)


def one_rank(g):
    if RANK == 0:
        g.to_local()[1, 0] = 5.0


def per_rank(g):
    g.to_local()[...] = flow.tensor((RANK + 1) * M)


def add_partial(g):
    g.add_(flow.tensor((RANK + 1) * M).to_global(placement=PL, sbp=P))


def fill(g):
    g.fill_(0.5)


FIVE = np.zeros_like(W0)
FIVE[1, 0] = 5.0
WRITES = [(None, np.zeros_like(W0)), (one_rank, FIVE), (per_rank, 3 * M), (add_partial, 3 * M),
          (fill, np.full_like(W0, 1.0))]


def train(write, steps=4, lr=0.0, set_to_none=False):
    """Per step: (w.grad's sbp, this rank's piece, collectives of the backward); the parameter's bits."""
    w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=PL, sbp=B))
    x = flow.tensor(np.array_split(X, 2)[RANK]).to_global(placement=PL, sbp=S0)
    opt = flow.optim.SGD([w], lr=lr)
    rows = []
    for step in range(steps):
        if step:
            opt.zero_grad(set_to_none=set_to_none)
            if write is not None:
                write(w.grad)
        before = COMM.collectives_issued()
        ((x.matmul(w) ** 2).sum() / 2).backward()
        rows.append((tuple(w.grad.sbp), w.grad.to_local().numpy().copy(), COMM.collectives_issued() - before))
        opt.step()
    return rows, w.to_local().numpy().tobytes()


counts = {}
for write, old in WRITES:
    rows, _ = train(write)
    np.testing.assert_allclose(rows[0][1], G, rtol=1e-6)
    for sbp, piece, _ in rows[1:]:
        assert sbp == (B,), sbp
        np.testing.assert_allclose(piece, old + G, rtol=1e-6)
    counts[getattr(write, "__name__", "none")] = [c for _, _, c in rows]
ok("writes summed")
# (step 0 learns the gradients' order, step 1 allocates the bucket) then the bucket's all-reduce alone, its check
# carried, with the old pieces in it or not
assert all(c[2:] == [1, 1] for c in counts.values()), counts
ok("steady step collectives")
# the gradient is its slot in the bucket the ranks share (DDP's gradient-as-bucket-view): written by the backward,
# summed in place, read by the optimizer
from oneflow_compat.runtime.context import get as flow_context  # noqa: E402

w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=PL, sbp=B))
x = flow.tensor(np.array_split(X, 2)[RANK]).to_global(placement=PL, sbp=S0)
sgd = flow.optim.SGD([w], lr=0.0)
for _ in range(3):
    sgd.zero_grad()
    ((x.matmul(w) ** 2).sum() / 2).backward()
plan = next(v for k, v in flow_context().buckets.items()
            if k[0] == "overlapped gradients" and any(r() is w for r in v[3]))[2]
if type(w.grad._value.pieces[0]) is np.ndarray:
    assert np.shares_memory(w.grad._value.pieces[0], plan.buffers[0])
else:  # (a GPU's gradient stays on its device, staged through the host bucket: tests/mpi_scripts/on_fake_device.py)
    assert not any(w.grad._value.pieces[0] is view for view in plan.views)
np.testing.assert_allclose(w.grad.to_local().numpy(), G, rtol=1e-6)
ok("gradient in its shared bucket slot")
kept = train(None, lr=0.01)
fresh = train(None, lr=0.01, set_to_none=True)
assert kept[1] == fresh[1]
assert all(a[1].tobytes() == b[1].tobytes() for a, b in zip(kept[0], fresh[0]))
ok("common path bits")
done()
