"""The ranks agree on what they run (tests/test_agreement_mpi.py runs this under `mpiexec -n 2`).

Each divergence below makes every rank raise `AgreementError` at the first global operation that communicates,
naming what each side runs; the script catches it on both ranks and goes on (the ranks compare from there on).
Then two threads call one nn.Graph, and two threads run eager global ops with backward: every thread's results
equal the sequential run's. Every rank checks its own results and prints `CHECK <name> ok` per check, and finally
`DONE <count>`; any failed check raises (the job then ends non-zero).
"""
import os
import sys
import threading
import time

import numpy as np

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.runtime import global_eager
from oneflow_compat.runtime.agreement import AgreementError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import diverges, done, ok  # noqa: E402  (beside this script)

RANK = global_eager.rank()
P = flow.placement("cpu", [0, 1])
S0, S1, B = flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast
flow.manual_seed(3)




def both(fn):
    return [fn, fn]


class Scale(nn.Graph):
    """x (S(0)) times a broadcast weight, gathered to B: one allgather per call."""

    def __init__(self, weight):
        super().__init__()
        # (OneFlow 0.9 refuses a Tensor attribute of a graph; the weight is a free eager tensor read in build)
        self.operands = (weight,)

    def build(self, x):
        return flow.matmul(x, self.operands[0]).to_global(sbp=B)


class Shift(Scale):
    def build(self, x):
        return (flow.matmul(x, self.operands[0]) + 1.0).to_global(sbp=B)


x = flow.randn(4, 5, placement=P, sbp=S0)
w = flow.randn(5, 3, placement=P, sbp=B)

# --- eager ops ------------------------------------------------------------------------------------------------
# the ops that differ do not communicate: the next op that does (the same on both ranks) names them
diverges("eager op type",
         [lambda: (x + 1.0).to_global(sbp=B), lambda: (x * 2.0).to_global(sbp=B)],
         "rank %d runs eager op 'to_global' ((4, 5) S(0) on cpu ranks [0, 1] -> B on cpu ranks [0, 1])" % RANK,
         "as the other ranks do, but before it the ranks ran different global operations",
         "rank 0's global op #1 is eager op 'scalar_add'", "rank 1's global op #1 is eager op 'scalar_mul'")
diverges("eager op attrs",
         [lambda: (x * 2.0).numpy(), lambda: (x * 3.0).numpy()],
         "numpy() of a global tensor (4, 5) float32 S(0)", "attrs {'value': 2.0}", "attrs {'value': 3.0}")
y = flow.randn(6 if RANK == 1 else 4, 5, placement=P, sbp=S0)  # a shape that differs: every op on it does too
diverges("eager input shapes",
         both(lambda: y.to_global(sbp=B)),
         "rank %d runs eager op 'to_global' ((%d, 5) S(0)" % (RANK, y.shape[0]),
         "while rank %d runs eager op 'to_global' ((%d, 5) S(0)" % (1 - RANK, 10 - y.shape[0]))
diverges("eager input sbp",
         [lambda: x.to_global(sbp=B), lambda: x.to_global(sbp=S1).to_global(sbp=B)],
         "rank 0 runs eager op 'to_global' ((4, 5) S(0) on cpu ranks [0, 1] -> B",
         "rank 1 runs eager op 'to_global' ((4, 5) S(0) on cpu ranks [0, 1] -> S(1)")
# after a caught mismatch the ranks compare from there on: the same ops agree again
np.testing.assert_allclose(x.to_global(sbp=B).numpy(), x.numpy())
ok("eager agrees again")
# a to_global's check rides in its collective's header when that goes through shared memory (one collective, not
# two); ranks in different operations still fail naming both, whichever collective or check the other one is in
COMM = global_eager.comm()
SHM = os.environ.get("ONEFLOW_COMPAT_SHM", "1") != "0"
before = COMM.collectives_issued()
whole = x.to_global(sbp=B)
made = COMM.collectives_issued() - before
np.testing.assert_array_equal(whole.to_local().numpy(), x.numpy())
assert made == (1 if SHM else 2), made
ok("a to_global makes one collective")
diverges("to_global against numpy()",
         [lambda: x.to_global(sbp=B), lambda: x.numpy()],
         "rank 0 runs eager op 'to_global' ((4, 5) S(0) on cpu ranks [0, 1] -> B",
         "rank 1 runs numpy() of a global tensor (4, 5) float32 S(0)")
diverges("to_global against a local tensor's to_global",
         [lambda: x.to_global(sbp=S1), lambda: flow.tensor(np.ones(3, np.float32)).to_global(P, S0)],
         "rank 0 runs eager op 'to_global' ((4, 5) S(0) on cpu ranks [0, 1] -> S(1)",
         "rank 1 runs to_global of a local tensor onto")
# a placement change onto other ranks: a gather onto rank 1, and rank 0's whole value sent to rank 1 point to point
# (its check goes first, on its own); ranks in different operations fail naming both, whether the other one is in a
# collective, a standalone check or another move
ZERO, ONE = flow.placement("cpu", [0]), flow.placement("cpu", [1])
x0 = x.to_global(ZERO, B)
for moved in (x.to_global(ONE, B), x0.to_global(ONE, B)):
    if RANK == 1:
        np.testing.assert_array_equal(moved.to_local().numpy(), whole.to_local().numpy())
ok("a to_global onto other ranks")
diverges("a to_global onto other ranks against one onto the same",
         [lambda: x0.to_global(ONE, B), lambda: x.to_global(sbp=B)],
         "rank 0 runs eager op 'to_global' ((4, 5) B on cpu ranks [0] -> B on cpu ranks [1])",
         "rank 1 runs eager op 'to_global' ((4, 5) S(0) on cpu ranks [0, 1] -> B on cpu ranks [0, 1])")
diverges("a to_global onto other ranks against numpy()",
         [lambda: x.numpy(), lambda: x0.to_global(ONE, S1)],
         "rank 0 runs numpy() of a global tensor (4, 5) float32 S(0)",
         "rank 1 runs eager op 'to_global' ((4, 5) B on cpu ranks [0] -> S(1) on cpu ranks [1])")
diverges("two different to_globals onto other ranks",
         [lambda: x0.to_global(ONE, B), lambda: x0.to_global(ONE, S1)],
         "-> B on cpu ranks [1])", "-> S(1) on cpu ranks [1])")
np.testing.assert_array_equal(x0.to_global(ONE, S1).to_global(P, B).numpy(), whole.to_local().numpy())
ok("to_globals onto other ranks agree again")
# local tensors may differ per rank (shapes, ops): only global operations are compared
local = flow.randn(3 - RANK, 5) * float(RANK + 1)
if RANK == 1:
    local = local.exp().log()
joined = local.to_global(P, S0).to_global(sbp=B)
assert tuple(joined.shape) == (5, 5)
ok("local ops are not compared")

# --- nn.Graph calls -------------------------------------------------------------------------------------------
scale, shift = Scale(w), Shift(w)
expected = (x.numpy() @ w.numpy())
np.testing.assert_allclose(scale(x).to_local().numpy(), expected, rtol=1e-5)
np.testing.assert_allclose(shift(x).to_local().numpy(), expected + 1, rtol=1e-5)
diverges("different graphs",
         [lambda: scale(x), lambda: shift(x)],
         "rank %d runs nn.Graph '%s_0' call #2" % (RANK, ["Scale", "Shift"][RANK]),
         "while rank %d runs nn.Graph '%s_0' call #2" % (1 - RANK, ["Scale", "Shift"][1 - RANK]))

twice = Scale(w)
twice(x)
if RANK == 0:
    twice(x)  # an extra call: it pairs with rank 1's next call, and the call after it is caught
diverges("a graph called a different number of times",
         both(lambda: (twice(x), x.numpy())),
         "rank 0 runs nn.Graph 'Scale_1' call #3", "rank 1 runs numpy() of a global tensor (4, 5) float32 S(0)")

rejected = Scale(w)
rejected(x)
x_b = x.to_global(sbp=B)
if RANK == 1:
    try:
        rejected(x_b)
    except ValueError as e:
        assert "input 0 is a global tensor (4, 5) float32 on cpu ranks [0, 1] oneflow.sbp.broadcast" in str(e), e
diverges("a rank that caught a rejected call",
         both(lambda: rejected(x)),
         "rank 0 runs nn.Graph 'Scale_2' call #2", "rank 1 runs nn.Graph 'Scale_2' call #3")


# --- threads --------------------------------------------------------------------------------------------------
def in_threads(targets):
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch often: unserialised calls would interleave inside one call
    errors = []

    def guarded(target):
        def run():
            try:
                target()
            except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
                errors.append(e)
        return run

    threads = [threading.Thread(target=guarded(t), name="worker-%d" % k) for k, t in enumerate(targets)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0]


CALLS = 40
graph = Scale(w)
inputs = [[flow.randn(4, 5, placement=P, sbp=S0) for _ in range(CALLS)] for _ in range(2)]
sequential = [[graph(v).to_local().numpy() for v in vs] for vs in inputs]
got = [[None] * CALLS for _ in range(2)]


def pause(rng):
    """Other work between calls, for a random time that differs per rank: the threads' calls reach the ranks in
    different orders unless the ranks agree on one."""
    time.sleep(rng.uniform(0, 0.002))


def graph_caller(t):
    def run():
        rng = np.random.RandomState(10 * RANK + t)
        for i, v in enumerate(inputs[t]):
            pause(rng)
            got[t][i] = graph(v).to_local().numpy()
    return run


in_threads([graph_caller(0), graph_caller(1)])
wrong = sum(not np.array_equal(g, s) for t in range(2) for g, s in zip(got[t], sequential[t]))
assert wrong == 0, "%d of %d threaded graph calls differ from the sequential ones" % (wrong, 2 * CALLS)
ok("two threads calling one nn.Graph")


def eager_step(v, scale_by):
    """Forward with boxing, backward (its gradient is all-reduced to the leaf's B), numpy(): every kind of
    collective an eager program issues."""
    leaf = flow.ones(5, 3, placement=P, sbp=B).requires_grad_(True)
    out = flow.matmul(v * scale_by, leaf).to_global(sbp=B)
    loss = (out * out).sum()
    loss.backward()
    return out.numpy(), float(loss.numpy()), leaf.grad.numpy()


steps = 15
seq_eager = [[eager_step(v, t + 1.0) for v in inputs[t][:steps]] for t in range(2)]
got_eager = [[None] * steps for _ in range(2)]


def eager_runner(t):
    def run():
        rng = np.random.RandomState(10 * RANK + t)
        for i, v in enumerate(inputs[t][:steps]):
            pause(rng)
            got_eager[t][i] = eager_step(v, t + 1.0)
    return run


def mover(t):
    """to_global only, onto the same ranks and onto another placement (turns are settled inside their checks)."""
    def run():
        rng = np.random.RandomState(20 * RANK + t)
        for i, v in enumerate(inputs[t][:steps]):
            pause(rng)
            there = v.to_global(sbp=S1).to_global(ZERO, B).to_global(ONE, S0)  # a gather, then point to point
            moved[t][i] = there.to_global(P, B).to_local().numpy()
    return run


moved = [[None] * steps for _ in range(2)]
in_threads([mover(0), mover(1)])
for t in range(2):
    for got_t, v in zip(moved[t], inputs[t][:steps]):
        np.testing.assert_array_equal(got_t, v.numpy())
ok("two threads running to_global")

in_threads([eager_runner(0), eager_runner(1)])
for t in range(2):
    for g, s in zip(got_eager[t], seq_eager[t]):
        np.testing.assert_array_equal(g[0], s[0])
        assert g[1] == s[1], (g[1], s[1])
        np.testing.assert_array_equal(g[2], s[2])
ok("two threads running eager global ops")

done()
