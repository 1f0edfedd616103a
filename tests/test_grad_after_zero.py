"""What is written into a gradient between `zero_grad()` and the next backward is summed, not lost (OneFlow 0.9,
on 1, 2 and 4 simulated ranks and a 2x2 mesh, against numpy written here; over MPI: tests/mpi_scripts/
grad_after_zero.py).

OneFlow 0.9's `zero_grad()` zeroes a global gradient in place and relabels broadcast as partial_sum
(oneflow/api/python/framework/tensor.cpp:293-335); the next backward adds the new gradient to it and boxes the sum
to the parameter's SBP (oneflow/core/autograd/autograd_engine.cpp:154-175 `AccGrad4LeafTensor`): the old partial
sum's pieces summed over the ranks, plus the new gradient. So `p.grad.add_(...)`, `p.grad.fill_(...)`, a write
into `p.grad.to_local()` (on every rank, on one rank only, different per rank) all count. Here the old pieces ride
in the data-parallel step's bucket all-reduce (`_global/grad_zeroing.old_partial`): the step makes the same
collectives with or without writes, and a step without writes gives the same bits as before."""
import collections
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.comm import simulated
from oneflow_compat.runtime import global_eager

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulated_ranks import on_ranks  # noqa: E402

B, P, S0 = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split(0)
W0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
X = np.arange(24, dtype=np.float32).reshape(8, 3) / 4 - 1
M = np.array([[1.0, 2.0], [-3.0, 0.5], [0.25, 4.0]], np.float32)
STEPS = 4  # step 0: no gradient yet (the bucket plan is learned), step 1: the buckets allocated, then steady


def grad_of(x, w):
    """d/dw of sum((x @ w) ** 2) / 2 = x^T (x @ w)."""
    return x.T @ (x @ w)


# each write: (what it does to the zeroed gradient on rank r, the logical value it leaves on n ranks: numpy)
def _local_all(g, r):
    g.to_local()[...] = 1.5


def _local_one_rank(g, r):
    if r == 0:
        g.to_local()[1, 0] = 5.0


def _local_per_rank(g, r):
    g.to_local()[...] = flow.tensor((r + 1) * M)


def _numpy_view(g, r):
    g.to_local().numpy()[...] += (r + 1) * M  # (a local CPU tensor's numpy() shares its memory, as OneFlow's)


def _add_scalar(g, r):
    g.add_(1.0)


def _add_partial(g, r):
    g.add_(flow.tensor((r + 1) * M).to_global(placement=g.placement, sbp=tuple(P for _ in g.sbp)))


def _fill(g, r):
    g.fill_(0.5)


def _one_at(n):
    z = np.zeros_like(W0)
    z[1, 0] = 5.0
    return z


WRITES = {
    "none": (None, lambda n: np.zeros_like(W0)),
    "to_local on every rank": (_local_all, lambda n: np.full_like(W0, 1.5 * n)),
    "to_local on rank 0 only": (_local_one_rank, _one_at),
    "to_local different per rank": (_local_per_rank, lambda n: M * (n * (n + 1) / 2)),
    "numpy() of to_local": (_numpy_view, lambda n: M * (n * (n + 1) / 2)),
    "add_ scalar": (_add_scalar, lambda n: np.ones_like(W0)),
    "add_ partial sum": (_add_partial, lambda n: M * (n * (n + 1) / 2)),
    "fill_": (_fill, lambda n: np.full_like(W0, 0.5 * n)),
}


class Meetings:
    """Collectives per simulated rank (every collective of comm/simulated.py is one meeting of the ranks)."""

    def __init__(self):
        self.counts = collections.Counter()
        self._meet = simulated.SimulatedComm._meet

    def __enter__(self):
        counts, meet = self.counts, self._meet

        def counted(comm, name, *args, **kwargs):
            counts[comm.rank] += 1
            return meet(comm, name, *args, **kwargs)

        simulated.SimulatedComm._meet = counted
        return self

    def __exit__(self, *exc):
        simulated.SimulatedComm._meet = self._meet

    def of_me(self):
        return self.counts[flow.env.get_rank()]


def _layout(n, mesh):
    if mesh:
        return flow.placement("cpu", [[0, 1], [2, 3]]), (B, B), (S0, B)
    return flow.placement("cpu", list(range(n))), (B,), (S0,)


def _train(n, write, mesh=False, data_sbp=None, meetings=None, hook=None, set_to_none=False, lr=0.0):
    """STEPS data-parallel steps of sum((x @ w) ** 2) / 2; before each backward after the first, zero_grad() then
    `write`. Per step: (sbp, this rank's piece, the collectives of the backward, the logical value) of w.grad; and the
    parameter's bits at the end."""
    def body():
        pl, bsbp, dsbp = _layout(n, mesh)
        r = flow.env.get_rank()
        w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=pl, sbp=bsbp))
        x = flow.tensor(X).to_global(placement=pl, sbp=bsbp).to_global(sbp=data_sbp or dsbp)
        if hook is not None:
            w.register_hook(hook)
        opt = flow.optim.SGD([w], lr=lr)
        rows = []
        for step in range(STEPS):
            if step:
                opt.zero_grad(set_to_none=set_to_none)
                if write is not None:
                    write(w.grad, r)
            before = meetings.of_me() if meetings else 0  # (the backward's own: a global add_ is an op of its own)
            ((x.matmul(w) ** 2).sum() / 2).backward()
            collectives = (meetings.of_me() - before) if meetings else None
            g = w.grad
            rows.append((tuple(g.sbp), g.to_local().numpy().copy(), collectives))
            rows[-1] += (g.numpy().copy(),)
            opt.step()
        return rows, w.to_local().numpy().tobytes()

    return on_ranks(4 if mesh else n, body)


NUMPY_VIEW = "a CPU tensor's numpy() shares its memory (a GPU tensor's is a host copy)"


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.cpu_only(NUMPY_VIEW)) if k == "numpy() of to_local"
                                  else k for k in sorted(WRITES)])
def test_writes_between_zero_grad_and_backward_are_summed(n, kind):
    write, old = WRITES[kind]
    g = grad_of(X, W0)
    for rows, _ in _train(n, write):
        sbp, piece, _, whole = rows[0]
        np.testing.assert_allclose(whole, g, rtol=1e-6)
        for sbp, piece, _, whole in rows[1:]:  # the learning step, the allocating step, the steady steps
            want = old(n) + g
            assert sbp == (B,)
            np.testing.assert_allclose(whole, want, rtol=1e-6)
            np.testing.assert_allclose(piece, want, rtol=1e-6)  # every rank's piece holds the whole sum


@pytest.mark.parametrize("kind", ["to_local on rank 0 only", "to_local different per rank", "add_ scalar", "fill_"])
def test_a_2x2_mesh(kind):
    """(B, B) parameter, (S(0), B) data: the zeroed gradient is (P, P); what was written is summed over all four."""
    write, old = WRITES[kind]
    g = grad_of(X, W0)
    for rows, _ in _train(4, write, mesh=True):
        for sbp, piece, _, whole in rows[1:]:
            assert sbp == (B, B)
            np.testing.assert_allclose(whole, old(4) + g, rtol=1e-6)
            np.testing.assert_allclose(piece, old(4) + g, rtol=1e-6)


@pytest.mark.parametrize("kind", ["to_local on rank 0 only", "to_local different per rank"])
def test_a_broadcast_gradient_into_written_partial_sum_zeros(kind):
    """Broadcast data on 2 ranks: the new gradient is broadcast; with the written partial sum it is summed over the
    ranks (OneFlow 0.9's add and boxing; here through the buckets)."""
    write, old = WRITES[kind]
    g = grad_of(X, W0)
    for rows, _ in _train(2, write, data_sbp=(B,)):
        for sbp, piece, _, whole in rows[1:]:
            assert sbp == (B,)
            np.testing.assert_allclose(whole, old(2) + g, rtol=1e-6)
            np.testing.assert_allclose(piece, old(2) + g, rtol=1e-6)


def test_a_hook_sees_the_new_gradient_alone():
    """A leaf's hook runs on the new gradient before it is added to `.grad` (OneFlow 0.9), so the old pieces are
    not carried in the bucket for it; the sum is the same."""
    seen = collections.defaultdict(list)

    def hook(grad):
        seen[flow.env.get_rank()].append(grad.numpy().copy())

    write, old = WRITES["to_local different per rank"]
    g = grad_of(X, W0)
    for rows, _ in _train(2, write, hook=hook):
        for sbp, piece, _, whole in rows[1:]:
            assert sbp == (B,)
            np.testing.assert_allclose(whole, old(2) + g, rtol=1e-6)
    for r in (0, 1):
        assert len(seen[r]) == STEPS
        for got in seen[r]:
            np.testing.assert_allclose(got, g, rtol=1e-6)


@pytest.mark.parametrize("n,mesh", [(2, False), (4, False), (4, True)])
def test_the_step_makes_the_same_collectives_with_or_without_writes(n, mesh):
    """The old pieces ride in the bucket's all-reduce: a steady step makes its check and its all-reduce, with
    writes or without (counted per rank: every collective is one meeting of the simulated ranks), and boxes no
    gradient."""
    transfers = []
    transfer = global_eager.transfer

    def counted(value, placement, sbp, *args, **kwargs):
        transfers.append((value.sbp, sbp))
        return transfer(value, placement, sbp, *args, **kwargs)

    per_kind = {}
    # (writes that keep the gradient's layout: `add_` of a scalar lays a partial sum out anew, split here)
    kinds = ("none", "to_local different per rank", "to_local on rank 0 only", "add_ partial sum", "fill_")
    for kind in kinds:
        with Meetings() as meetings:
            results = _train(n, WRITES[kind][0], mesh=mesh, meetings=meetings)
        per_kind[kind] = [[c for _, _, c, _ in rows] for rows, _ in results]
    # the check and the all-reduce (on a mesh the gradient comes (P, B), no bucket: added to the old (P, P) pieces
    # and boxed to (B, B) once, its check and its all-reduce, as the new gradient alone was before)
    assert per_kind["none"] == [[2] * STEPS] * (4 if mesh else n), per_kind
    assert all(per_kind[kind] == per_kind["none"] for kind in kinds), per_kind
    if not mesh:
        global_eager.transfer = counted
        try:
            _train(n, None)
        finally:
            global_eager.transfer = transfer
        assert [str(dst) for _, dst in transfers] == ["S(0)"] * n, transfers  # (the feed's B -> S(0) alone)


@pytest.mark.parametrize("n,mesh", [(2, False), (4, False), (4, True)])
def test_the_common_path_keeps_its_bits(n, mesh):
    """zero_grad() without writes gives the bits of a backward into no gradient at all (set_to_none: nothing to
    add), gradients and trained parameters (SGD, lr 0.01)."""
    kept = _train(n, None, mesh=mesh, lr=0.01)
    fresh = _train(n, None, mesh=mesh, lr=0.01, set_to_none=True)
    for (rows_a, w_a), (rows_b, w_b) in zip(kept, fresh):
        assert w_a == w_b
        for a, b in zip(rows_a, rows_b):
            assert a[1].tobytes() == b[1].tobytes() and a[3].tobytes() == b[3].tobytes()


ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"


@pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)
def test_over_mpi_on_2_ranks():
    pytest.importorskip("mpi4py")
    from oneflow_compat.comm import mpiexec_command

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_"))
           and k not in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", ONEFLOW_COMPAT_OUTPUT="all",
               ONEFLOW_COMPAT_COMM_TIMEOUT="60", ONEFLOW_COMPAT_DEVICE="cpu")
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "grad_after_zero.py")],
                          cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        prefix = "[rank %d] " % rank
        lines = [line[len(prefix):] for line in done.stdout.splitlines() if line.startswith(prefix)]
        assert [line for line in lines if line.startswith("CHECK ")] == [
            "CHECK writes summed ok", "CHECK steady step collectives ok", "CHECK gradient in its shared bucket slot ok",
            "CHECK common path bits ok"], lines


# --- the gradient as its bucket slot (DDP's gradient-as-bucket-view) -----------------------------------------------
def _in_its_slot(w):
    """Whether w.grad's storage is a slot of the step's gradient buckets (the backward writes there)."""
    from oneflow_compat.runtime import context

    plans = [v for k, v in context.get().buckets.items() if k[0] == "overlapped gradients"]
    piece = w.grad._value.pieces[0]
    return any(piece is view for plan in plans for view in plan[2].views)


SLOTS = "the buckets are host memory: a GPU's gradient stays on its device and is staged through them"


@pytest.mark.cpu_only(SLOTS)
def test_a_steady_gradient_is_its_bucket_slot_and_nothing_is_copied_back():
    """From the step after the buckets exist, `.grad`'s storage is the parameter's bucket slot: the backward adds the
    new gradient into it once (the old partial-sum zeros, or what was written, are its content) and the
    all-reduce's sum is `.grad` (no copy back, nothing copied into the bucket from elsewhere)."""
    from oneflow_compat.runtime import buckets

    counts = collections.Counter()
    fill, write = buckets.fill_slot, buckets.OverlappedGradients._write_in_place

    def counted_fill(view, new, old):
        counts["copied into a bucket"] += 1
        return fill(view, new, old)

    def counted_write(self, b):
        counts["added into .grad in its slot"] += sum(k in self.in_place for k in self.plan[2].members[b])
        return write(self, b)

    def body():
        pl = flow.placement("cpu", [0, 1])
        w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=pl, sbp=B))
        x = flow.tensor(X).to_global(placement=pl, sbp=B).to_global(sbp=S0)
        opt = flow.optim.SGD([w], lr=0.0)
        rows = []
        for step in range(5):
            opt.zero_grad()
            if step == 4:
                w.grad.to_local()[...] = flow.env.get_rank() + 1.0  # written into the slot: summed, 3 in all
            ((x.matmul(w) ** 2).sum() / 2).backward()
            rows.append((_in_its_slot(w), w.grad.numpy().copy()))
        return rows

    buckets.fill_slot, buckets.OverlappedGradients._write_in_place = counted_fill, counted_write
    try:
        results = on_ranks(2, body)
    finally:
        buckets.fill_slot, buckets.OverlappedGradients._write_in_place = fill, write
    g = grad_of(X, W0)
    for rows in results:
        # step 0: no gradient (summed after backward), step 1: the buckets made (the sum becomes .grad), then in place
        assert [slot for slot, _ in rows] == [False, True, True, True, True]
        for _, whole in rows[:4]:
            np.testing.assert_allclose(whole, g, rtol=1e-6)
        np.testing.assert_allclose(rows[4][1], g + 3, rtol=1e-6)
    # per rank (2 ranks): steps 0 and 1 copy into a bucket (the end-of-backward one, then the new one), steps 2-4
    # add into .grad in its slot
    assert counts == {"copied into a bucket": 4, "added into .grad in its slot": 6}, counts


@pytest.mark.cpu_only(SLOTS)
def test_a_gradient_in_its_slot_keeps_every_meaning():
    """Accumulating without zero_grad, a gradient held after zero_grad(set_to_none=True) or after `w.grad = ...`
    (its slot is not written again: new buckets), a hook registered after the gradient went into its slot (it sees
    the new gradient alone): the numbers of OneFlow 0.9, on every rank."""
    def body():
        pl = flow.placement("cpu", [0, 1])
        w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=pl, sbp=B))
        x = flow.tensor(X).to_global(placement=pl, sbp=B).to_global(sbp=S0)
        opt = flow.optim.SGD([w], lr=0.0)

        def backward():
            ((x.matmul(w) ** 2).sum() / 2).backward()

        out = {}
        for _ in range(3):
            opt.zero_grad()
            backward()
        assert _in_its_slot(w)
        backward()  # no zero_grad: the broadcast gradient in its slot is set aside and the sum added to it
        out["accumulated"] = (_in_its_slot(w), w.grad.numpy().copy())
        opt.zero_grad()
        backward()
        held = w.grad
        kept = held.to_local().numpy().copy()
        opt.zero_grad(set_to_none=True)
        backward()
        out["held after set_to_none"] = (held.to_local().numpy().copy(), kept, w.grad.numpy().copy())
        held = w.grad
        kept = held.to_local().numpy().copy()
        w.grad = flow.tensor(M).to_global(placement=pl, sbp=B)
        backward()
        out["held after assignment"] = (held.to_local().numpy().copy(), kept, w.grad.numpy().copy())
        for _ in range(3):  # new buckets, and the gradient back in a slot
            opt.zero_grad()
            backward()
        out["back in a slot"] = (_in_its_slot(w), w.grad.numpy().copy())
        seen = []
        w.register_hook(lambda grad: seen.append(grad.numpy().copy()))
        opt.zero_grad()
        w.grad.to_local()[...] = 1.0
        backward()
        out["hooked"] = (seen[-1], w.grad.numpy().copy())
        backward()
        out["hooked, accumulated"] = (seen[-1], w.grad.numpy().copy())
        return out

    g = grad_of(X, W0)
    for out in on_ranks(2, body):
        slot, whole = out["accumulated"]
        assert slot
        np.testing.assert_allclose(whole, 2 * g, rtol=1e-6)
        for case, extra in (("held after set_to_none", 0), ("held after assignment", M)):
            now, kept, whole = out[case]
            np.testing.assert_array_equal(now, kept)  # what the user holds is not written
            np.testing.assert_allclose(whole, g + extra, rtol=1e-6)
        slot, whole = out["back in a slot"]
        assert slot
        np.testing.assert_allclose(whole, g, rtol=1e-6)
        seen, whole = out["hooked"]
        np.testing.assert_allclose(seen, g, rtol=1e-6)
        np.testing.assert_allclose(whole, g + 2, rtol=1e-6)
        seen, whole = out["hooked, accumulated"]
        np.testing.assert_allclose(seen, g, rtol=1e-6)
        np.testing.assert_allclose(whole, 2 * g + 2, rtol=1e-6)


@pytest.mark.cpu_only(SLOTS)
def test_ranks_that_drop_their_gradient_differently_fail_naming_both():
    """A gradient in its slot dropped on one rank only (zero_grad(set_to_none=True) there, zero_grad() on the other):
    the slot is not written again on that rank (the gradient it held may still be read), so its step sums through
    new buckets while the other's uses its slot: the ranks fail at once, naming both operations (no hang)."""
    from oneflow_compat.runtime.agreement import AgreementError

    def body():
        pl = flow.placement("cpu", [0, 1])
        w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=pl, sbp=B))
        x = flow.tensor(X).to_global(placement=pl, sbp=B).to_global(sbp=S0)
        opt = flow.optim.SGD([w], lr=0.0)
        for step in range(4):
            opt.zero_grad(set_to_none=step == 3 and flow.env.get_rank() == 0)
            ((x.matmul(w) ** 2).sum() / 2).backward()

    with pytest.raises(AgreementError) as failed:
        on_ranks(2, body, timeout=30)
    text = str(failed.value)
    assert "rank 0 runs eager gradient all-reduce of 1 gradient(s) (3, 2) float32" in text, text
    assert "rank 1 runs gradient all-reduce of 1 gradient(s) (3, 2) float32" in text, text


def test_broadcast_gradients_into_partial_sum_zeros_share_one_all_reduce():
    """Broadcast data on 2 ranks (every rank the whole batch): the gradients come broadcast; into the partial-sum
    `.grad`s zero_grad() left (written on rank 0 only here) they are added as partial sums through the buckets: one
    check and one all-reduce per step for both parameters (OneFlow 0.9 adds and boxes each: one all-reduce each)."""
    bias = np.array([1.0, -2.0], np.float32)

    def body():
        with Meetings() as meetings:
            pl = flow.placement("cpu", [0, 1])
            w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=pl, sbp=B))
            b = flow.nn.Parameter(flow.tensor(bias).to_global(placement=pl, sbp=B))
            x = flow.tensor(X).to_global(placement=pl, sbp=B)
            opt = flow.optim.SGD([w, b], lr=0.0)
            rows = []
            for step in range(4):
                if step:
                    opt.zero_grad()
                    if flow.env.get_rank() == 0:
                        b.grad.to_local()[...] = 1.0
                before = meetings.of_me()
                ((x.matmul(w) + b) ** 2).sum().div(2).backward()
                rows.append((meetings.of_me() - before, tuple(w.grad.sbp), w.grad.numpy().copy(),
                             b.grad.to_local().numpy().copy()))
            return rows

    y = X @ W0 + bias
    gw, gb = X.T @ y, y.sum(axis=0)
    for rows in on_ranks(2, body):
        assert [c for c, _, _, _ in rows] == [0, 2, 2, 2]  # (step 0: no old gradient, nothing to sum)
        for c, sbp, w_grad, b_piece in rows:
            assert sbp == (B,)
            np.testing.assert_allclose(w_grad, gw, rtol=1e-6)
        np.testing.assert_allclose(rows[0][3], gb, rtol=1e-6)
        for _, _, _, b_piece in rows[1:]:
            np.testing.assert_allclose(b_piece, gb + 1, rtol=1e-6)
