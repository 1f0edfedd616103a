"""The SBP and value of a global parameter's `.grad` in a data-parallel eager step (issue 18 follow-up), on 2
simulated ranks, against numpy written here.

OneFlow 0.9: after every accumulation into an eager global leaf's gradient, the engine boxes it to the leaf's own
placement and SBP (oneflow/core/autograd/autograd_engine.cpp:154-175, `AccGrad4LeafTensor`), so a broadcast
parameter's `.grad` shows broadcast and holds the summed gradient on every rank; `zero_grad()` (set_to_none=False)
zeroes it and relabels broadcast as partial_sum in place (oneflow/api/python/framework/tensor.cpp:293-335,
test_optim_sgd.py `test_eager_global_zero_grad_sbp`); `set_to_none=True` drops it."""
import sys
from pathlib import Path

import numpy as np

import oneflow_compat as flow
from oneflow_compat.runtime import global_eager

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulated_ranks import on_ranks  # noqa: E402

B, P, S0 = flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.split(0)
W0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], np.float32)
X = np.arange(12, dtype=np.float32).reshape(4, 3) / 4 - 1
X2 = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]], np.float32)


def grad_of(x, w):
    """d/dw of sum((x @ w) ** 2) / 2 = x^T (x @ w)."""
    return x.T @ (x @ w)


def _setup():
    pl = flow.placement("cpu", [0, 1])
    w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=pl, sbp=B))
    x = flow.tensor(X).to_global(placement=pl, sbp=B).to_global(sbp=S0)  # data parallel: rows split
    return pl, w, x


def _loss(x, w):
    return (x.matmul(w) ** 2).sum() / 2


def _seen(g):
    """(sbp, this rank's piece, the logical value) of a gradient."""
    return tuple(g.sbp), g.to_local().numpy().copy(), g.numpy().copy()


def test_a_broadcast_parameter_gradient_shows_broadcast_and_holds_the_sum_on_every_rank():
    def body():
        _, w, x = _setup()
        _loss(x, w).backward()
        first = _seen(w.grad)
        opt = flow.optim.SGD([w], lr=0.1)
        opt.zero_grad()
        zeroed = _seen(w.grad)
        g = w.grad
        _loss(x, w).backward()
        after = _seen(w.grad)
        return first, zeroed, after, w.grad is g

    g = grad_of(X, W0)
    for first, zeroed, after, same in on_ranks(2, body):
        assert first[0] == (B,) and after[0] == (B,)
        np.testing.assert_allclose(first[1], g, rtol=1e-6)  # each rank's piece is the whole sum
        np.testing.assert_allclose(first[2], g, rtol=1e-6)
        np.testing.assert_allclose(after[1], g, rtol=1e-6)
        np.testing.assert_allclose(after[2], g, rtol=1e-6)
        assert zeroed[0] == (P,)  # zero_grad: partial-sum zeros, as OneFlow 0.9
        np.testing.assert_array_equal(zeroed[1], np.zeros_like(g))
        np.testing.assert_array_equal(zeroed[2], np.zeros_like(g))
        assert same  # the zeroed tensor takes the sum (its storage, its identity)


def test_gradients_accumulate_over_backwards_whatever_layouts_they_come_in():
    def body():
        pl, w, x = _setup()
        xb = flow.tensor(X2).to_global(placement=pl, sbp=B)  # every rank the whole batch: a broadcast gradient
        opt = flow.optim.SGD([w], lr=0.1)
        rows = []
        _loss(x, w).backward()  # P, summed through the bucket
        _loss(x, w).backward()  # + P, no zero_grad
        rows.append(_seen(w.grad))
        _loss(xb, w).backward()  # + B
        rows.append(_seen(w.grad))
        opt.zero_grad()
        _loss(xb, w).backward()  # a B gradient into partial-sum zeros
        rows.append(_seen(w.grad))
        _loss(x, w).backward()  # + P
        rows.append(_seen(w.grad))
        opt.zero_grad(set_to_none=True)
        rows.append(w.grad)
        _loss(x, w).backward()
        rows.append(_seen(w.grad))
        return rows

    gs, gb = grad_of(X, W0), grad_of(X2, W0)
    for rows in on_ranks(2, body):
        want = [2 * gs, 2 * gs + gb, gb, gb + gs, None, gs]
        for got, ref in zip(rows, want):
            if ref is None:
                assert got is None
                continue
            assert got[0] == (B,)
            np.testing.assert_allclose(got[1], ref, rtol=1e-6)
            np.testing.assert_allclose(got[2], ref, rtol=1e-6)


def test_a_partial_sum_gradient_assigned_by_hand_is_summed_into_the_next_backward():
    def body():
        pl, w, x = _setup()
        r = flow.env.get_rank()
        # a P gradient whose pieces differ per rank: its logical value is their sum
        w.grad = flow.tensor(np.full((3, 2), r + 1, np.float32)).to_global(placement=pl, sbp=P)
        _loss(x, w).backward()
        return _seen(w.grad)

    for sbp, piece, whole in on_ranks(2, body):
        assert sbp == (B,)
        np.testing.assert_allclose(piece, grad_of(X, W0) + 3, rtol=1e-6)
        np.testing.assert_allclose(whole, grad_of(X, W0) + 3, rtol=1e-6)


def test_zeroed_gradients_written_in_place_are_summed_not_dropped():
    def body():
        pl, w, x = _setup()
        r = flow.env.get_rank()
        _loss(x, w).backward()
        flow.optim.SGD([w], lr=0.1).zero_grad()
        # partial-sum zeros + a partial sum of pieces 1 and 2 (3 in all), written in place into their storage
        w.grad.add_(flow.tensor(np.full((3, 2), r + 1, np.float32)).to_global(placement=pl, sbp=P))
        held = tuple(w.grad.sbp)
        _loss(x, w).backward()
        first = _seen(w.grad)
        flow.optim.SGD([w], lr=0.1).zero_grad()
        w.grad.add_(1.0)  # partial-sum zeros + 1: the logical value 1
        _loss(x, w).backward()
        return held, first, _seen(w.grad)

    for held, (sbp, piece, whole), (sbp2, piece2, whole2) in on_ranks(2, body):
        assert held == (P,) and sbp == sbp2 == (B,)
        np.testing.assert_allclose(whole, grad_of(X, W0) + 3, rtol=1e-6)
        np.testing.assert_allclose(piece, whole)
        np.testing.assert_allclose(whole2, grad_of(X, W0) + 1, rtol=1e-6)
        np.testing.assert_allclose(piece2, whole2)


def test_clip_grad_norm_of_global_gradients():
    def body():
        pl, w, x = _setup()
        b = flow.nn.Parameter(flow.tensor(np.array([1.0, -2.0], np.float32)).to_global(placement=pl, sbp=B))
        opt = flow.optim.SGD([w, b], lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            ((x.matmul(w) + b) ** 2).sum().div(2).backward()
        total = flow.nn.utils.clip_grad_norm_([w, b], max_norm=1.0)
        return float(total.numpy()), _seen(w.grad), _seen(b.grad)

    y = X @ W0 + np.array([1.0, -2.0], np.float32)
    gw, gb = X.T @ y, y.sum(axis=0)
    norm = np.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    for total, (sw, pw, ww), (sb, pb, wb) in on_ranks(2, body):
        np.testing.assert_allclose(total, norm, rtol=1e-5)
        assert sw == sb == (B,)
        np.testing.assert_allclose(ww, gw / (norm + 1e-6), rtol=1e-5)
        np.testing.assert_allclose(wb, gb / (norm + 1e-6), rtol=1e-5)
        np.testing.assert_allclose(pw, ww)
        np.testing.assert_allclose(pb, wb)


def test_a_steady_data_parallel_step_boxes_no_gradient():
    """zero_grad, backward, step: the gradients' only collective is the bucket's all-reduce (no to_global of a
    zeroed gradient, in backward or in the optimizer), and the update equals SGD on the summed gradient."""
    transfers = []
    transfer = global_eager.transfer

    def counted(value, placement, sbp, *args, **kwargs):
        transfers.append((value.sbp, sbp))
        return transfer(value, placement, sbp, *args, **kwargs)

    def body():
        _, w, x = _setup()
        opt = flow.optim.SGD([w], lr=0.01)
        seen = []
        for step in range(3):
            if step == 2:
                seen.append(len(transfers))
            opt.zero_grad()
            _loss(x, w).backward()
            opt.step()
            if step == 2:
                seen.append(len(transfers))
        return seen, w.to_local().numpy().copy(), tuple(w.grad.sbp)

    w = W0.copy()
    for _ in range(3):
        w = w - np.float32(0.01) * grad_of(X, w)
    global_eager.transfer = counted
    try:
        results = on_ranks(2, body)
    finally:
        global_eager.transfer = transfer
    for (before, after), got, sbp in results:
        assert after == before, transfers[before:after]  # (rank threads share the list: none at all)
        assert sbp == (B,)
        np.testing.assert_allclose(got, w, rtol=1e-5)


def test_one_device_and_a_2x2_mesh():
    """One device: the SBP shown follows the same rule (the one piece is the value). A 2x2 mesh: a (B, B)
    parameter's gradient from (S(0), B) data shows (B, B) and holds the sum on every rank; zero_grad makes it
    (P, P) zeros."""
    one = flow.placement("cpu", [0])
    w = flow.nn.Parameter(flow.tensor(W0).to_global(placement=one, sbp=B))
    x = flow.tensor(X).to_global(placement=one, sbp=B)
    opt = flow.optim.SGD([w], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        assert w.grad is None or tuple(w.grad.sbp) == (P,)
        _loss(x, w).backward()
        assert tuple(w.grad.sbp) == (B,)
        np.testing.assert_allclose(w.grad.numpy(), grad_of(X, W0), rtol=1e-6)

    def body():
        mesh = flow.placement("cpu", [[0, 1], [2, 3]])
        wm = flow.nn.Parameter(flow.tensor(W0).to_global(placement=mesh, sbp=(B, B)))
        xm = flow.tensor(X).to_global(placement=mesh, sbp=(B, B)).to_global(sbp=(S0, B))
        sgd = flow.optim.SGD([wm], lr=0.1)
        seen = []
        for _ in range(2):
            sgd.zero_grad()
            seen.append(None if wm.grad is None else _seen(wm.grad))
            _loss(xm, wm).backward()
            seen.append(_seen(wm.grad))
        return seen

    g = grad_of(X, W0)
    for seen in on_ranks(4, body):
        assert seen[0] is None and seen[2][0] == (P, P)
        np.testing.assert_array_equal(seen[2][2], np.zeros_like(g))
        for sbp, piece, whole in (seen[1], seen[3]):
            assert sbp == (B, B)
            np.testing.assert_allclose(piece, g, rtol=1e-6)
            np.testing.assert_allclose(whole, g, rtol=1e-6)
