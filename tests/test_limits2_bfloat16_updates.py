"""Optimizer updates of bfloat16 parameters (eager step() and nn.Graph's compiled update) store bfloat16 numbers:
the update computes in float32 and the parameter and its bfloat16 states are stored rounded to nearest, ties to
even (OneFlow's float -> bfloat16 conversion, core/common/bfloat16.h at v0.9.0). The rounding reference here is
written independently of kernels/bfloat16.py: the two bfloat16 neighbours of each float32, the nearer one, the one
with an even last kept bit on a tie."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn


def _bf16(x):
    x = np.asarray(x, np.float32)
    lo = (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)
    step = np.where(lo == 0, 2.0 ** -133, np.abs(lo) * 0 + 2.0 ** (np.floor(np.log2(np.abs(np.where(lo == 0, 1, lo))))
                                                                  - 7))
    hi = lo + np.sign(np.where(x == 0, 1, x)) * step
    d_lo, d_hi = np.abs(x - lo), np.abs(hi - x)
    lo_even = ((lo.astype(np.float32).view(np.uint32) >> 16) & 1) == 0
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & ~lo_even)
    return np.where(pick_hi, hi, lo).astype(np.float32)


def _representable(a):
    return bool(np.all(np.asarray(a, np.float32).view(np.uint32) & 0xFFFF == 0))


def test_the_reference_rounds_ties_to_even():
    ulp = 2.0 ** -7  # of [1, 2)
    x = np.array([1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp / 2 + 2 ** -12, -(1 + ulp / 2), 3.0], np.float32)
    np.testing.assert_array_equal(_bf16(x), np.array([1, 1 + 2 * ulp, 1 + ulp, -1, 3], np.float32))
    assert _representable(_bf16(np.random.default_rng(0).standard_normal(100).astype(np.float32)))


# w = 1 and lr = 1: w - g lands on the halfway points between bfloat16 neighbours of [1, 2) (spacing 2^-7)
W0 = np.ones(5, np.float32)
G = np.array([-2 ** -8, -3 * 2 ** -8, -(2 ** -8 + 2 ** -12), 2 ** -9, -5 * 2 ** -8], np.float32)
AFTER_ONE_SGD_STEP = np.array([1.0, 1 + 2 ** -6, 1 + 2 ** -7, 1.0, 1 + 2 ** -6], np.float32)  # (by hand)


def _param():
    return nn.Parameter(flow.tensor(W0, dtype=flow.bfloat16))


def _loss(w):
    return (w * flow.tensor(G, dtype=flow.bfloat16)).sum()


class _Holder(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = w


def _graph(w, opt):
    m = _Holder(w)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)

        def build(self, x):
            loss = (self.m.w * x).sum()
            loss.backward()
            return loss
    g = Train()
    step = lambda: g(flow.tensor(G, dtype=flow.bfloat16))  # noqa: E731
    step.graph = g
    return step


def test_an_eager_sgd_step_stores_the_hand_computed_bfloat16_values():
    w = _param()
    opt = flow.optim.SGD([w], lr=1.0)
    _loss(w).backward()
    opt.step()
    assert w.dtype == flow.bfloat16
    np.testing.assert_array_equal(w.numpy(), AFTER_ONE_SGD_STEP)


def test_a_graph_sgd_step_stores_the_hand_computed_bfloat16_values():
    w = _param()
    _graph(w, flow.optim.SGD([w], lr=1.0))()
    np.testing.assert_array_equal(w.numpy(), AFTER_ONE_SGD_STEP)


def _momentum_reference(steps, lr=0.37, beta=0.9):
    w, buf = W0.copy(), np.zeros_like(W0)
    for _ in range(steps):
        nxt = np.float32(beta) * buf + G
        buf = _bf16(nxt)
        w = _bf16(w - np.float32(lr) * nxt)
    return w, buf


def _adam_reference(steps, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    w, m, v = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for t in range(1, steps + 1):
        nm = np.float32(b1) * m + np.float32(1 - b1) * G
        nv = np.float32(b2) * v + np.float32(1 - b2) * G * G
        m, v = _bf16(nm), _bf16(nv)
        bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
        w = _bf16(w - np.float32(lr) * (nm / np.float32(bc1)) / (np.sqrt(nv / np.float32(bc2)) + np.float32(eps)))
    return w, m, v


def _close_in_bfloat16(got, want):
    """Equal up to one bfloat16 step: float32 sums in another order may round the other way at a tie."""
    assert _representable(got)
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=0)


@pytest.mark.parametrize("where", ["eager", "graph"])
def test_sgd_with_momentum_stores_bfloat16_parameters_and_buffers(where):
    w = _param()
    opt = flow.optim.SGD([w], lr=0.37, momentum=0.9)
    if where == "eager":
        for _ in range(3):
            opt.zero_grad()
            _loss(w).backward()
            opt.step()
        buf = opt.state[w]["momentum_buf"].numpy()
        assert _representable(buf)
        _close_in_bfloat16(buf, _momentum_reference(3)[1])
    else:
        step = _graph(w, opt)
        for _ in range(3):
            step()
    want = _momentum_reference(3)[0]
    _close_in_bfloat16(w.numpy(), want)
    assert not _representable(_momentum_reference_unrounded(3))  # (the unrounded update is not bfloat16)


def _momentum_reference_unrounded(steps, lr=0.37, beta=0.9):
    w, buf = W0.copy(), np.zeros_like(W0)
    for _ in range(steps):
        buf = np.float32(beta) * buf + G
        w = w - np.float32(lr) * buf
    return w


@pytest.mark.parametrize("where", ["eager", "graph"])
def test_adam_stores_bfloat16_parameters_and_moments(where):
    w = _param()
    opt = flow.optim.Adam([w], lr=0.01)
    if where == "eager":
        for _ in range(4):
            opt.zero_grad()
            _loss(w).backward()
            opt.step()
        want_w, want_m, want_v = _adam_reference(4)
        for name, want in (("exp_avg", want_m), ("exp_avg_sq", want_v)):
            _close_in_bfloat16(opt.state[w][name].numpy(), want)
    else:
        step = _graph(w, opt)
        for _ in range(4):
            step()
        want_w, want_m, want_v = _adam_reference(4)
        states = step.graph.state_dict()
        for name, want in (("m.w-m", want_m), ("m.w-v", want_v)):
            assert states[name].dtype == flow.bfloat16
            _close_in_bfloat16(states[name].numpy(), want)
    assert w.dtype == flow.bfloat16
    _close_in_bfloat16(w.numpy(), want_w)


def test_lamb_on_a_split_bfloat16_parameter_stores_bfloat16_numbers():
    """LAMB on a parameter split over 2 devices runs the collective update reading whole-tensor norms
    (optimizer_update_whole_norms); its stores are rounded as the per-device update's, and agree with 1 device."""
    from simulated_ranks import on_ranks

    w0 = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    x0 = np.arange(8, dtype=np.float32).reshape(4, 2) * 0.377

    def train(placement=None):
        w = flow.tensor(w0, dtype=flow.bfloat16)
        x = flow.tensor(x0, dtype=flow.bfloat16)
        if placement is not None:
            w, x = (t.to_global(placement=placement, sbp=flow.sbp.broadcast).to_global(
                placement=placement, sbp=flow.sbp.split(0)) for t in (w, x))
        w = nn.Parameter(w)
        m = _Holder(w)
        opt = flow.optim.LAMB([w], lr=0.0123)

        class Train(nn.Graph):
            def __init__(self):
                super().__init__()
                self.m = m
                self.add_optimizer(opt)

            def build(self, x):
                loss = (self.m.w * x).sum()
                loss.backward()
                return loss
        g = Train()
        for _ in range(2):
            g(x)
        types = [op.type for op in g._compiled.exe.plan.step_ops]
        # (this rank's own piece, as stored: a conversion to broadcast would round its output anyway)
        return ("optimizer_update_whole_norms" in types, w.numpy() if placement is None else w.to_local().numpy(),
                flow.env.get_rank())

    _, one, _ = train()
    for collective, piece, rank in on_ranks(2, lambda: train(flow.placement("cpu", [0, 1]))):
        assert collective
        _close_in_bfloat16(piece, one[2 * rank:2 * rank + 2])
    assert _representable(one)
