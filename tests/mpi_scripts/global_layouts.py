"""Global tensors on 4 ranks (run by tests/test_global_mpi.py under `mpiexec -n 4`): every to_global transition
with its gradient, local -> global, ranks outside a placement, op numbers and output SBPs, layout-free random
numbers, mixed placements. Rank 0 prints `OK <check>` per check; any failure raises (and ends every rank)."""
import itertools
import sys

import numpy as np

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

comm = global_eager.comm()
RANK, WORLD = comm.rank, comm.size
assert WORLD == 4, "run under mpiexec -n 4"
S0, S1, B, PS = flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast, flow.sbp.partial_sum
PLACEMENTS = [[0, 1], [2, 3], [0], [1, 2, 3], [0, 1, 2, 3]]
SBPS = [S0, S1, B, PS]


def ok(name):
    if RANK == 0:
        print("OK", name)
        sys.stdout.flush()


def assemble(per_rank, ranks, sbp):
    """The logical value from every rank's piece (None off the placement), checking who holds what."""
    for r in range(WORLD):
        assert (per_rank[r] is not None) == (r in ranks), (r, ranks)
    pieces = [per_rank[r] for r in sorted(ranks)]
    if sbp == B:
        for p in pieces[1:]:
            np.testing.assert_array_equal(p, pieces[0])
        return pieces[0]
    if sbp == PS:
        return sum(pieces)
    return np.concatenate(pieces, axis=sbp._ir.axis)


def piece(t):
    return t._value.pieces[0] if t._value.pieces else None


# --- every transition between {S0, S1, B, P} on the five placements, with gradients -------------------------------
def transitions(shape, with_grad):
    rng = np.random.default_rng(sum(shape))
    full = rng.standard_normal(shape).astype(np.float32)
    coef = rng.standard_normal(shape).astype(np.float32)
    rows = []
    coefs = {}
    if with_grad:
        for dst_ranks, dst_sbp in itertools.product(PLACEMENTS, SBPS):
            coefs[str(dst_ranks), dst_sbp] = flow.tensor(coef, placement=flow.placement("cpu", dst_ranks),
                                                         sbp=dst_sbp)
    for src_ranks, src_sbp in itertools.product(PLACEMENTS, SBPS):
        src = flow.placement("cpu", src_ranks)
        x = flow.tensor(full, placement=src, sbp=src_sbp, requires_grad=with_grad)
        for dst_ranks, dst_sbp in itertools.product(PLACEMENTS, SBPS):
            dst = flow.placement("cpu", dst_ranks)
            y = x.to_global(placement=dst, sbp=dst_sbp)
            assert y.placement == dst and y.sbp == (dst_sbp,) and tuple(y.shape) == shape
            grad = None
            if with_grad:
                (y * coefs[str(dst_ranks), dst_sbp]).sum().backward()
                assert x.grad.placement == src and x.grad.sbp == (src_sbp,), (x.grad.placement, x.grad.sbp)
                grad = piece(x.grad)
                x.grad = None
            rows.append((src_ranks, src_sbp, dst_ranks, dst_sbp, piece(y), grad))
    everyone = comm.allgather_object(rows)
    for k, (src_ranks, src_sbp, dst_ranks, dst_sbp, _, _) in enumerate(rows):
        what = "%s %r -> %s %r" % (src_ranks, src_sbp, dst_ranks, dst_sbp)
        value = assemble([everyone[r][k][4] for r in range(WORLD)], dst_ranks, dst_sbp)
        np.testing.assert_allclose(value, full, rtol=1e-6, err_msg=what)
        if with_grad:
            grad = assemble([everyone[r][k][5] for r in range(WORLD)], src_ranks, src_sbp)
            np.testing.assert_allclose(grad, coef, rtol=1e-6, err_msg="gradient of " + what)
    return len(rows)


n = transitions((4, 6), with_grad=False)
ok("%d transitions of a 4x6 tensor" % n)
n = transitions((5, 7), with_grad=True)
ok("%d transitions of a 5x7 tensor with gradients" % n)
x = flow.tensor(np.ones((2, 3), np.float32), placement=flow.placement("cpu", [0, 1]), sbp=S0)
assert x.to_global(placement=flow.placement("cpu", [0, 1]), sbp=S0) is x
ok("same placement and sbp give the same tensor")

# --- local -> global ----------------------------------------------------------------------------------------------
P01, P123 = flow.placement("cpu", [0, 1]), flow.placement("cpu", [1, 2, 3])
local = flow.tensor(np.full((2, 5), RANK, np.float32) + np.arange(5, dtype=np.float32))
g = local.to_global(placement=P01, sbp=S0)
assert tuple(g.shape) == (4, 5) and g.sbp == (S0,)
np.testing.assert_array_equal(g.numpy(), np.concatenate([np.arange(5) + 0.0] * 2 + [np.arange(5) + 1.0] * 2)
                              .reshape(4, 5))
g = local.to_global(placement=P123, sbp=B)  # the placement's first rank (1) wins, no error though ranks differ
np.testing.assert_array_equal(g.numpy(), np.arange(5) + np.ones((2, 5)))
if RANK in (2, 3):
    np.testing.assert_array_equal(g.to_local().numpy(), np.arange(5) + np.ones((2, 5)))
g = local.to_global(placement=P123, sbp=PS)
np.testing.assert_array_equal(g.numpy(), 3 * np.arange(5) + 6 * np.ones((2, 5)))
uneven = flow.tensor(np.ones((3 if RANK < 2 else 2, 4), np.float32)).to_global(
    placement=flow.placement("cpu", [0, 1, 2, 3]), sbp=S0)
assert tuple(uneven.shape) == (10, 4)
try:
    flow.tensor(np.ones((2 if RANK < 3 else 3, 4), np.float32)).to_global(
        placement=flow.placement("cpu", [0, 1, 2, 3]), sbp=S0)
    raise AssertionError("unbalanced split accepted")
except ValueError as e:
    assert str(e).startswith("Sizes of tensors in dimension 0 must be same or match balanced split distribution"), e
# the gradient of a local tensor is its piece of the global gradient
local = flow.tensor(np.full((2, 3), RANK + 1.0, np.float32), requires_grad=True)
(local.to_global(placement=P01, sbp=S0) * 3).sum().backward()
if RANK in (0, 1):
    np.testing.assert_array_equal(local.grad.numpy(), np.full((2, 3), 3.0))
else:
    assert local.grad is None
ok("local -> global: split, broadcast from the first rank, partial sum, balanced rule, gradient")

# --- ranks outside a placement ------------------------------------------------------------------------------------
g = flow.randn(4, 5, 6, placement=flow.placement("cpu", [2, 3]), sbp=S1)
lp = g.to_local()
if RANK in (2, 3):
    assert tuple(lp.shape) == (4, 3 if RANK == 2 else 2, 6)
else:
    assert tuple(lp.shape) == (0, 0, 0) and lp.numel() == 0
assert tuple(g.shape) == (4, 5, 6)
text = repr(g)  # a collective: every rank prints the whole value
assert text.startswith("tensor([[[") and 'placement=oneflow.placement(type="cpu", ranks=[2, 3])' in text, text
assert "sbp=(oneflow.sbp.split(dim=1),)" in text and text.endswith("dtype=oneflow.float32)"), text
ok("ranks outside a placement: empty local piece of the logical ndim; numpy/print gather the whole value")

# --- random numbers never depend on the layout --------------------------------------------------------------------
values = []
for ranks, sbp in [([0], B), ([0, 1, 2, 3], S0), ([0, 1, 2, 3], S1), ([1, 2, 3], B), ([2, 3], PS), ([3], S0)]:
    flow.manual_seed(7)
    values.append(flow.randn(5, 7, placement=flow.placement("cuda", ranks), sbp=sbp).numpy())
flow.manual_seed(7)
values.append(flow.randn(5, 7).numpy())  # a local tensor: the first draw of this rank's generator, seeded alike
for v in values[1:]:
    np.testing.assert_array_equal(v, values[0])
if RANK == 0:
    print("RANDN", repr(float(values[0].astype(np.float64).sum())), repr(float(values[0][4, 6])))
ok("random tensors: one value on every layout")

# --- ops on global tensors: numbers and output SBPs ---------------------------------------------------------------
flow.manual_seed(3)
P = flow.placement("cpu", [0, 1, 2, 3])
x = flow.randn(6, 5, placement=P, sbp=S0)
w = flow.randn(5, 8, placement=P, sbp=B)
assert flow.matmul(x, w).sbp == (S0,)
np.testing.assert_allclose(flow.matmul(x, w).numpy(), x.numpy() @ w.numpy(), rtol=1e-5)
xb, ws1 = x.to_global(sbp=B), w.to_global(sbp=S1)
assert flow.matmul(xb, ws1).sbp == (S1,)
np.testing.assert_allclose(flow.matmul(xb, ws1).numpy(), x.numpy() @ w.numpy(), rtol=1e-5)
xs1, ws0 = x.to_global(sbp=S1), w.to_global(sbp=S0)
assert flow.matmul(xs1, ws0).sbp == (PS,)
np.testing.assert_allclose(flow.matmul(xs1, ws0).numpy(), x.numpy() @ w.numpy(), rtol=1e-5)
assert flow.matmul(xb, w).sbp == (B,)
ok("matmul(S0, B) -> S0, matmul(B, S1) -> S1, matmul(S1, S0) -> P, matmul(B, B) -> B")
xn, wn = x.numpy(), w.numpy()
b = flow.randn(8, placement=P, sbp=B)
h = flow.matmul(x, w) + b
np.testing.assert_allclose(h.numpy(), xn @ wn + b.numpy(), rtol=1e-5)
assert h.sbp == (S0,)
np.testing.assert_allclose((x * 2 - 1).numpy(), xn * 2 - 1, rtol=1e-6)
np.testing.assert_allclose((x / (x.abs() + 1)).numpy(), xn / (np.abs(xn) + 1), rtol=1e-5)
np.testing.assert_allclose((x ** 2).numpy(), xn ** 2, rtol=1e-5)
assert x.sum().sbp == (PS,) and x.sum(1).sbp == (S0,)
np.testing.assert_allclose(x.sum().numpy(), xn.sum(), rtol=1e-5)
np.testing.assert_allclose(x.sum(0).numpy(), xn.sum(0), rtol=1e-5)
np.testing.assert_allclose(x.mean(1, keepdim=True).numpy(), xn.mean(1, keepdims=True), rtol=1e-5)
np.testing.assert_allclose(x.relu().numpy(), np.maximum(xn, 0), rtol=1e-6)
e = np.exp(xn - xn.max(1, keepdims=True))
np.testing.assert_allclose(flow.softmax(x, dim=1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5)
assert flow.softmax(x, dim=1).sbp == (S0,)
labels = flow.randint(0, 5, (6,), placement=P, sbp=S0)
loss = flow.nn.functional.cross_entropy(x, labels)
yn = labels.numpy()
logp = np.log(e / e.sum(1, keepdims=True))
np.testing.assert_allclose(loss.numpy(), -logp[np.arange(6), yn].mean(), rtol=1e-5)
assert loss.shape == () and loss.sbp == (PS,)
np.testing.assert_allclose(flow.cat([x, x * 2], dim=1).numpy(), np.concatenate([xn, xn * 2], 1), rtol=1e-6)
np.testing.assert_array_equal(x.argmax(1).numpy(), xn.argmax(1))
np.testing.assert_allclose(x.reshape(3, 10).numpy(), xn.reshape(3, 10), rtol=1e-6)
np.testing.assert_allclose(x.transpose(0, 1).numpy(), xn.T, rtol=1e-6)
np.testing.assert_allclose(flow.exp(x).log().numpy(), xn, rtol=1e-5, atol=1e-6)
# gradients of a small expression against the numpy formula
wg = flow.randn(5, 8, placement=P, sbp=B, requires_grad=True)
(flow.matmul(x, wg).relu() * 3).sum().backward()
mask = (xn @ wg.numpy()) > 0
np.testing.assert_allclose(wg.grad.numpy(), xn.T @ (3.0 * mask), rtol=1e-5)
assert wg.grad.sbp == (B,)
ok("global op numbers equal numpy on the gathered inputs; data-parallel weight gradients are B")

# --- mixed placements ----------------------------------------------------------------------------------------------
try:
    flow.matmul(x, flow.randn(5, 8, placement=flow.placement("cpu", [2, 3]), sbp=B))
    raise AssertionError("mixed placements accepted")
except ValueError as e:
    assert 'oneflow.placement(type="cpu", ranks=[0, 1, 2, 3])' in str(e), e
    assert 'oneflow.placement(type="cpu", ranks=[2, 3])' in str(e) and "matmul" in str(e), e
ok("mixed placements in one op: an error naming both")
