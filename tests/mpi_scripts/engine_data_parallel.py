"""Data parallelism with fewer synchronisations (tests/test_engine_mpi.py runs this under `mpiexec -n 2`).

* eager: the 784-512-512-10 MLP (the step of oneflow_compat/tools/data_parallel_mlp.py), batch 16 per rank: the weight gradients are all-reduced through gradient buckets
  during backward (one all-reduce per bucket, the first carrying the buckets' check), the feeds' shapes ride in
  their checks, the loss's partial sums in the buckets' check (its numpy() then sends nothing): 3 collectives per
  step (20 before buckets), and the numbers
  equal the same training on one rank;
* nn.Graph: the same training compiled: 1 collective per call (the bucket, carrying the call's check and the loss's
  partial sums: its numpy() then sends nothing);
* feeds: uneven local pieces (the balanced split), a 5-d local tensor (its shape does not fit in a check: an
  exchange of its own), ranks holding different dtypes (an error naming both ranks); `check_meta=False`: no
  collective at all, and ranks that fed different shapes after all fail at their next check naming both shapes;
* numpy() of a partial sum: small (in the check's payload) and large (an all-reduce of its own), exact.

Every rank prints `CHECK <name> ok` per check and `DONE <count>`; a failed check raises (the job ends non-zero).
"""
import os
import sys

import numpy as np

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager
from oneflow_compat.runtime.context import get as flow_context
from oneflow_compat.runtime.agreement import AgreementError
from oneflow_compat.tools.data_parallel_mlp import DataParallelMLP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import diverges, done, ok  # noqa: E402  (beside this script)

RANK, WORLD = global_eager.rank(), global_eager.world_size()
P2 = flow.placement("cpu", [0, 1])
P1 = flow.placement("cpu", [0])
S0, B, PS = flow.sbp.split(0), flow.sbp.broadcast, flow.sbp.partial_sum
COMM = global_eager.comm()


def rows(a, placement):
    """This rank's rows of a batch on `placement` (all of them on one rank; none outside it)."""
    members = [0, 1] if placement == P2 else [0]
    if RANK not in members:
        return a[:0]
    return np.array_split(a, len(members))[members.index(RANK)]


STEPS, BATCH = 4, 32
rng = np.random.default_rng(1)
data = [(rng.random((BATCH, 784), dtype=np.float32), rng.integers(0, 10, BATCH)) for _ in range(STEPS)]


def train(placement, graph=False, count_feeds=True):
    """The data-parallel step of oneflow_compat/tools/data_parallel_mlp.py (what benchmarks/bench_data_parallel.py
    times) for STEPS steps: (the trainer, losses, collectives per step)."""
    dp = DataParallelMLP(placement, lr=0.1, momentum=0.9, graph=graph)
    losses, counts = [], []
    for xs, ys in data:
        before = COMM.collectives_issued()
        x, y = dp.feed(rows(xs, placement), rows(ys, placement))
        if not count_feeds:
            before = COMM.collectives_issued()
        loss = dp.run(x, y)
        if not count_feeds:
            counts.append(COMM.collectives_issued() - before)
        losses.append(float(loss.numpy()))
        if count_feeds:
            counts.append(COMM.collectives_issued() - before)
    return dp, losses, counts


dp2, losses2, counts2 = train(P2)
dp1, losses1, _ = train(P1)
np.testing.assert_allclose(losses2, losses1, rtol=1e-5)
for p, q in zip(dp2.model.parameters(), dp1.model.parameters()):
    np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-6)
ok("eager data parallel equals one rank")
# step 0 learns the gradients' order (summed after backward), step 1 allocates the buckets that are summed during
# backward from then on (their shared memory: one collective per bucket), the steps after make only their own:
# 2 feed checks and the all-reduce of the one bucket (on CPU devices no small first bucket:
# `buckets.first_cap_bytes`) carrying the buckets' check and the loss's partial sums, so the loss's numpy() sends
# nothing
assert counts2[2:] == [3] * (STEPS - 2), counts2
assert len(next(v for k, v in flow_context().buckets.items() if k[0] == "overlapped gradients")[2].plan) == 1
ok("eager step makes 3 collectives")

# the loss's numpy() after backward: the sums the bucket's check carried, the very bits of numpy()'s own check
xs, ys = data[0]
x2, y2 = dp2.feed(rows(xs, P2), rows(ys, P2))
loss2 = dp2.run(x2, y2)
before = COMM.collectives_issued()
carried = loss2.numpy()
assert COMM.collectives_issued() == before, COMM.collectives_issued() - before
assert loss2._value.summed is not None
loss2._value.summed = None  # forgotten: numpy() makes its own check, with the addends in its payload
again = loss2.numpy()
assert COMM.collectives_issued() == before + 1, COMM.collectives_issued() - before
assert carried.dtype == again.dtype == np.float32 and carried.tobytes() == again.tobytes(), (carried, again)
ok("the loss's numpy() after backward sends nothing, same bits")
# a loss changed in place after backward holds other addends: its numpy() sums them again
x2, y2 = dp2.feed(rows(xs, P2), rows(ys, P2))
loss2 = dp2.run(x2, y2)
with flow.no_grad():
    loss2.fill_(0.25 + RANK)
before = COMM.collectives_issued()
np.testing.assert_array_equal(loss2.numpy(), np.float32(1.5))  # 0.25 + 1.25
assert COMM.collectives_issued() == before + 1, COMM.collectives_issued() - before
ok("a loss changed after backward is summed again")
# what a steady step copies (DDP's gradient-as-bucket-view): each parameter's `.grad` IS its slot in the bucket
# (`runtime/buckets.py` OverlappedGradients), so the backward adds each new gradient once, straight into `.grad`
# (zero_grad left partial-sum zeros there), the all-reduce sums in place, and nothing is copied back; the optimizer
# reads the summed gradients where the backward put them (no to_global of a zeroed gradient). Before the view: 6
# copies into the bucket and 6 copies back into `.grad` per step, twice the gradients' bytes (2 x 2,678,824 here)
from oneflow_compat.runtime import buckets as grad_buckets  # noqa: E402

copies = {"transfer": 0, "into a bucket": 0, "added into .grad in its slot": 0, "bytes": 0}
transfer, fill = global_eager.transfer, grad_buckets.fill_slot
write_in_place = grad_buckets.OverlappedGradients._write_in_place


def counted_transfer(*args, **kwargs):
    copies["transfer"] += 1
    return transfer(*args, **kwargs)


def counted_fill(view, new, old):
    copies["into a bucket"] += 1
    copies["bytes"] += view.nbytes
    return fill(view, new, old)


def counted_write(self, b):
    for k in self.plan[2].members[b]:
        if k in self.in_place:
            copies["added into .grad in its slot"] += 1
            copies["bytes"] += self.plan[2].views[k].nbytes
    return write_in_place(self, b)


global_eager.transfer, grad_buckets.fill_slot = counted_transfer, counted_fill
grad_buckets.OverlappedGradients._write_in_place = counted_write
try:
    dp2.step(rows(xs, P2), rows(ys, P2))
finally:
    global_eager.transfer, grad_buckets.fill_slot = transfer, fill
    grad_buckets.OverlappedGradients._write_in_place = write_in_place
grad_bytes = sum(p.numel() * 4 for p in dp2.model.parameters())
assert copies == {"transfer": 0, "into a bucket": 0, "added into .grad in its slot": 6, "bytes": grad_bytes}, copies
first = next(dp2.model.parameters())
plan = next(v for k, v in flow_context().buckets.items()
            if k[0] == "overlapped gradients" and any(r() is first for r in v[3]))[2]
assert all(np.shares_memory(p.grad.to_local().numpy(), plan.buffers[0]) for p in dp2.model.parameters())
ok("a steady step copies each gradient once")
# the gradients the step left show their parameters' SBP (broadcast) and hold the sums on every rank (OneFlow 0.9:
# oneflow/core/autograd/autograd_engine.cpp:154-175 boxes a global leaf's gradient to the leaf's SBP); zero_grad
# makes them partial-sum zeros (oneflow/api/python/framework/tensor.cpp:308-335); a small data-parallel product
# against numpy: x^T (x w) summed over both ranks' rows, in each rank's piece, steady steps sending only the bucket
assert all(tuple(p.grad.sbp) == (B,) for p in dp2.model.parameters())
W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
X = np.arange(12, dtype=np.float32).reshape(4, 3) / 4 - 1
w = flow.nn.Parameter(flow.tensor(W).to_global(placement=P2, sbp=B))
x = flow.tensor(rows(X, P2)).to_global(placement=P2, sbp=S0)
sgd = flow.optim.SGD([w], lr=0.0)
counts = []
for _ in range(4):
    sgd.zero_grad()
    assert w.grad is None or tuple(w.grad.sbp) == (PS,)
    before = COMM.collectives_issued()
    ((x.matmul(w) ** 2).sum() / 2).backward()
    sgd.step()
    counts.append(COMM.collectives_issued() - before)
    assert tuple(w.grad.sbp) == (B,), w.grad.sbp
    np.testing.assert_allclose(w.grad.to_local().numpy(), X.T @ (X @ W), rtol=1e-6)
# (step 0 learns the gradients' order, step 1 allocates the bucket) then the bucket's all-reduce alone, its check
# carried: nothing for the zeroed gradients
assert counts[2:] == [1, 1], counts
ok("gradients show broadcast and hold the sums")
# ranks of which one fetched the loss (no collective) and the other did not fail at the next check, naming both
x2, y2 = dp2.feed(rows(xs, P2), rows(ys, P2))
loss2 = dp2.run(x2, y2)
probe = flow.tensor(np.full((40,), 1.0, np.float32)).to_global(placement=P2, sbp=PS)
diverges("a carried numpy() one rank made",
         [lambda: (loss2.numpy(), probe.numpy()), lambda: probe.numpy()],
         "before it the ranks ran different global operations", "is numpy() of a global tensor () float32",
         "is numpy() of a global tensor (40,) float32")

dpg, graph_losses, graph_counts = train(P2, graph=True, count_feeds=False)
np.testing.assert_allclose(graph_losses, losses1, rtol=1e-5)
for p, q in zip(dpg.model.parameters(), dp1.model.parameters()):
    np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-6)
ok("graph data parallel equals one rank")
# the first call checks on its own (it compiles); from then on the call's check rides in its bucket's all-reduce
assert graph_counts[1:] == [1] * (STEPS - 1), graph_counts
assert dpg.graph._compiled.check_rides
members = [op for op in dpg.graph._compiled.job.ops if "bucket" in op.attrs]
assert len(members) == 6 and {op.attrs["bucket"][0] for op in members} == {0}, [op.attrs.get("bucket") for op in members]
ok("graph call makes 1 collective")
# the call's check, riding in its bucket's all-reduce, carries the loss it computed before: its numpy() sends nothing
x3, y3 = dpg.feed(rows(data[0][0], P2), rows(data[0][1], P2))
loss3 = dpg.run(x3, y3)
assert dpg.graph._compiled.carried_output == (0, ())
before = COMM.collectives_issued()
carried3 = loss3.numpy()
assert COMM.collectives_issued() == before, COMM.collectives_issued() - before
loss3._value.summed = None  # forgotten: numpy() makes its own check, with the addends in its payload
again3 = loss3.numpy()
assert COMM.collectives_issued() == before + 1, COMM.collectives_issued() - before
assert carried3.dtype == again3.dtype == np.float32 and carried3.tobytes() == again3.tobytes(), (carried3, again3)
ok("the graph's loss numpy() sends nothing, same bits")

# --- feeds ------------------------------------------------------------------------------------------------------
uneven = flow.tensor(np.full((3 - RANK, 2), RANK, np.float32)).to_global(placement=P2, sbp=S0)
assert tuple(uneven.shape) == (5, 2)
np.testing.assert_array_equal(uneven.numpy(), [[0, 0]] * 3 + [[1, 1]] * 2)
ok("uneven feed")
five = flow.tensor(np.full((1, 1, 1, 1, 2), RANK, np.float32)).to_global(placement=P2, sbp=S0)
assert tuple(five.shape) == (2, 1, 1, 1, 2)
np.testing.assert_array_equal(five.numpy().reshape(2, 2), [[0, 0], [1, 1]])
ok("5-d feed")
try:
    flow.tensor(np.zeros(2, np.float32 if RANK == 0 else np.float64)).to_global(placement=P2, sbp=S0)
except TypeError as e:
    assert "rank 0: float32, rank 1: float64" in str(e), e
    ok("dtypes differ")
else:
    raise AssertionError("ranks holding different dtypes were not refused")

# check_meta=False (OneFlow 0.9): every rank holds one shape and dtype, no shapes exchanged: the cast makes no
# collective, and the numbers are those of the exchanged cast
piece = np.arange(6, dtype=np.float32).reshape(3, 2) + 10 * RANK
before = COMM.collectives_issued()
fast = flow.tensor(piece).to_global(placement=P2, sbp=S0, check_meta=False)
assert COMM.collectives_issued() == before, COMM.collectives_issued() - before
assert tuple(fast.shape) == (6, 2)
checked = flow.tensor(piece).to_global(placement=P2, sbp=S0)
np.testing.assert_array_equal(fast.numpy(), checked.numpy())
np.testing.assert_array_equal((fast * 2).sum(0).numpy(), 2 * np.concatenate([piece - 10 * RANK, piece - 10 * RANK + 10]).sum(0))
ok("check_meta=False feed makes no collective")
# ranks whose local tensors differ after all fail at their next check, naming both sides' shapes (and go on)
try:
    bad = flow.tensor(np.zeros((2 + RANK, 2), np.float32)).to_global(placement=P2, sbp=S0, check_meta=False)
    bad.sum().numpy()
except AgreementError as e:
    text = str(e)
    assert "check_meta=False: local tensor (2, 2) float32" in text and \
        "check_meta=False: local tensor (3, 2) float32" in text, text
    ok("check_meta=False with differing shapes fails naming both")
else:
    raise AssertionError("ranks that fed different shapes with check_meta=False were not refused")
np.testing.assert_array_equal(checked.numpy(), fast.numpy())  # the ranks go on in step

# --- numpy() of partial sums ----------------------------------------------------------------------------------------
small = flow.tensor(np.full((2, 3), RANK + 1.5, np.float32)).to_global(placement=P2, sbp=PS)
np.testing.assert_array_equal(small.numpy(), np.full((2, 3), 4.0, np.float32))  # 1.5 + 2.5
big = flow.tensor(np.full((40,), RANK + 0.25, np.float32)).to_global(placement=P2, sbp=PS)
np.testing.assert_array_equal(big.numpy(), np.full(40, 1.5, np.float32))
ok("numpy of partial sums")

# --- checks that ride in a collective: ranks that run different operations still fail naming both ---------------


xs, ys = data[0]
# eager: rank 0's backward starts the buckets' all-reduce (carrying their check) while rank 1 fetches a loss
dp_e = DataParallelMLP(P2, lr=0.1, momentum=0.9)
for _ in range(3):  # (the buckets summed during backward exist from the third step on)
    dp_e.step(rows(xs, P2), rows(ys, P2))
loss_e = dp_e.run(*dp_e.feed(rows(xs, P2), rows(ys, P2)))
loss_e.numpy()
x_e, y_e = dp_e.feed(rows(xs, P2), rows(ys, P2))
pending = dp_e.loss_fn(dp_e.model(x_e), y_e)
diverges("a bucket's carried check against numpy()",
         [lambda: pending.backward(), lambda: pending.numpy()],
         "rank 0 runs gradient all-reduce of 6 gradient(s)", "rank 1 runs numpy() of a global tensor")
# nn.Graph: rank 0's call (its check riding in the bucket) while rank 1 fetches a value; the failed call changed
# no parameter on rank 0 (nothing before its first collective has an effect)
dp_g = DataParallelMLP(P2, lr=0.1, momentum=0.9, graph=True)
for _ in range(2):
    dp_g.step(rows(xs, P2), rows(ys, P2))
x_g, y_g = dp_g.feed(rows(xs, P2), rows(ys, P2))
before_call = [p.numpy().copy() for p in dp_g.model.parameters()]
diverges("a graph call's carried check against numpy()",
         [lambda: dp_g.graph(x_g, y_g), lambda: x_g.sum().numpy()],
         "rank 0 runs nn.Graph 'TrainGraph_", "rank 1 runs numpy() of a global tensor")
for p, q in zip(dp_g.model.parameters(), before_call):
    np.testing.assert_array_equal(p.numpy(), q)
ok("the failed graph call changed no parameter")


# a graph with an effect before its first collective (batch norm's running statistics) checks on its own first
class NormGraph(flow.nn.Graph):
    def __init__(self, norm):
        super().__init__()
        self.norm = norm

    def build(self, x):
        return self.norm(x).sum()


norm = flow.nn.BatchNorm1d(4)
norm.to_global(placement=P2, sbp=B)
ng = NormGraph(norm)
ng(flow.tensor(np.ones((2, 4), np.float32)).to_global(placement=P2, sbp=S0)).numpy()
assert not ng._compiled.check_rides
ok("a graph with an effect before its first collective checks on its own")

done()
