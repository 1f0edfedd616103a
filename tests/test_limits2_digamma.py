"""digamma / polygamma (ops/polygamma_ops.py, kernels/special.py) and, through them, lgamma's gradients of every
order (`autograd.grad(..., create_graph=True)`). References: closed forms (ψ(1) = -γ, ψ(1/2) = -γ - 2 ln 2,
ψ'(1) = π²/6, ψ'(1/2) = π²/2, ψ''(1) = -2ζ(3), the reflection ψ'(x) + ψ'(1-x) = π²/sin²(πx)), central differences
of math.lgamma (always), and torch.special.digamma / torch.polygamma where torch is installed."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import autograd

EULER_GAMMA = 0.57721566490153286061
ZETA3 = 1.2020569031595942854
# positive values and negative ones away from the poles 0, -1, -2, …
X = np.array([0.01, 0.3, 0.5, 1.0, 1.7, 2.5, 4.2, 9.9, 10.5, 37.0, 1e4, -0.4, -1.3, -2.75, -7.5, -12.2])


def _lgamma_diff(x, order, h):
    """The order-th derivative of math.lgamma at x by central differences (weights of the 5-point stencils)."""
    f = [math.lgamma(x + k * h) for k in (-2, -1, 0, 1, 2)]
    if order == 1:
        return (f[0] - 8 * f[1] + 8 * f[3] - f[4]) / (12 * h)
    return (-f[0] + 16 * f[1] - 30 * f[2] + 16 * f[3] - f[4]) / (12 * h * h)


def _series(x, n, terms=4000):
    """ψ^(n)(x), n >= 1, summed directly: (-1)^(n+1) n! Σ_k 1/(x+k)^(n+1), the tail after `terms` terms by
    Euler-Maclaurin (its integral, half its first term, and its first derivative's correction)."""
    k = np.arange(terms, dtype=np.float64)
    z = x + terms
    head = np.sum(1.0 / (x + k) ** (n + 1))
    tail = z ** -n / n + z ** -(n + 1) / 2 + (n + 1) * z ** -(n + 2) / 12
    return (-1) ** (n + 1) * math.factorial(n) * (head + tail)


def test_closed_forms():
    x = flow.tensor([1.0, 0.5, 2.0])
    np.testing.assert_allclose(flow.digamma(x.double()).numpy(),
                               [-EULER_GAMMA, -EULER_GAMMA - 2 * math.log(2), 1 - EULER_GAMMA], rtol=1e-14)
    np.testing.assert_allclose(flow.polygamma(1, x.double()).numpy(),
                               [math.pi ** 2 / 6, math.pi ** 2 / 2, math.pi ** 2 / 6 - 1], rtol=1e-14)
    np.testing.assert_allclose(flow.polygamma(2, x.double()).numpy(),
                               [-2 * ZETA3, -14 * ZETA3, -2 * ZETA3 + 2], rtol=1e-13)
    # ψ^(3)(1) = 6 ζ(4) = π⁴/15
    np.testing.assert_allclose(flow.polygamma(3, flow.tensor([1.0], dtype=flow.float64)).numpy(),
                               [math.pi ** 4 / 15], rtol=1e-13)


def test_the_reflection_formula_holds_for_negative_inputs():
    x = np.array([-0.4, -1.3, -2.75, -7.5, -12.2, 0.3])
    t = flow.tensor(x, dtype=flow.float64)
    s = flow.polygamma(1, t).numpy() + flow.polygamma(1, flow.tensor(1 - x, dtype=flow.float64)).numpy()
    np.testing.assert_allclose(s, math.pi ** 2 / np.sin(math.pi * x) ** 2, rtol=1e-12)
    d = flow.digamma(flow.tensor(1 - x, dtype=flow.float64)).numpy() - flow.digamma(t).numpy()
    np.testing.assert_allclose(d, math.pi / np.tan(math.pi * x), rtol=1e-12, atol=1e-12)


def test_against_differences_of_math_lgamma_and_direct_sums():
    t = flow.tensor(X, dtype=flow.float64)
    want1 = [_lgamma_diff(v, 1, 1e-3 * min(1.0, abs(v))) for v in X]
    np.testing.assert_allclose(flow.digamma(t).numpy(), want1, rtol=1e-9, atol=1e-9)
    moderate = X[(X > 0.2) & (X < 20)]  # (second differences of lgamma lose digits elsewhere)
    np.testing.assert_allclose(flow.polygamma(1, flow.tensor(moderate, dtype=flow.float64)).numpy(),
                               [_lgamma_diff(v, 2, 1e-3) for v in moderate], rtol=1e-6)
    for n in (1, 2, 3, 4):
        # (the direct sums cancel at negative x: ~2e-11 of their own error there)
        np.testing.assert_allclose(flow.polygamma(n, t).numpy(), [_series(v, n) for v in X], rtol=1e-10)


def test_against_torch():
    torch = pytest.importorskip("torch")
    tx = torch.tensor(X, dtype=torch.float64)
    t = flow.tensor(X, dtype=flow.float64)
    np.testing.assert_allclose(flow.digamma(t).numpy(), torch.special.digamma(tx).numpy(), rtol=1e-12, atol=1e-14)
    # (torch's trigamma is good to ~5e-10 relative; ours to 1e-15 against the closed forms above)
    np.testing.assert_allclose(flow.polygamma(1, t).numpy(), torch.polygamma(1, tx).numpy(), rtol=2e-9)
    for n in (2, 3, 4):
        np.testing.assert_allclose(flow.polygamma(n, t).numpy(), torch.polygamma(n, tx).numpy(), rtol=1e-9)
    x32 = flow.tensor(X[:11].astype(np.float32))
    got = flow.digamma(x32)
    assert got.dtype == flow.float32
    np.testing.assert_allclose(got.numpy(), torch.special.digamma(tx[:11].float()).numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(x32.polygamma(2).numpy(), torch.polygamma(2, tx[:11].float()).numpy(), rtol=2e-5)


def test_poles_integers_and_bad_n():
    assert np.isinf(flow.polygamma(1, flow.tensor([0.0, -1.0, -3.0])).numpy()).all()
    assert np.isnan(flow.polygamma(2, flow.tensor([0.0, -2.0])).numpy()).all()
    assert np.isnan(flow.digamma(flow.tensor([0.0, -1.0])).numpy()).all()
    got = flow.digamma(flow.tensor([1, 2]))  # integers become float32, as lgamma's
    assert got.dtype == flow.float32
    np.testing.assert_allclose(got.numpy(), [-EULER_GAMMA, 1 - EULER_GAMMA], rtol=1e-6)
    with pytest.raises(ValueError, match=r"polygamma\(n, input\): n must be a non-negative integer, got -1"):
        flow.polygamma(-1, flow.tensor([1.0]))
    with pytest.raises(ValueError, match=r"polygamma\(n, input\): n must be a non-negative integer, got 1.5"):
        flow.polygamma(1.5, flow.tensor([1.0]))


def test_lgamma_gradients_of_every_order():
    x = flow.tensor(X[:-1], dtype=flow.float64, requires_grad=True)
    g1, = autograd.grad(flow.lgamma(x).sum(), x, create_graph=True)
    g2, = autograd.grad(g1.sum(), x, create_graph=True)
    g3, = autograd.grad(g2.sum(), x)
    v = X[:-1]
    np.testing.assert_allclose(g2.numpy(), [_series(a, 1) for a in v], rtol=1e-11)
    np.testing.assert_allclose(g3.numpy(), flow.polygamma(2, flow.tensor(v, dtype=flow.float64)).numpy(),
                               rtol=1e-14)
    np.testing.assert_allclose(g3.numpy(), [_series(a, 2) for a in v], rtol=1e-11)


def test_lgamma_double_backward_against_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).uniform(0.2, 5.0, (3, 4))
    w = np.random.default_rng(4).standard_normal((3, 4))
    x = flow.tensor(a, requires_grad=True)
    g, = autograd.grad((flow.lgamma(x) * flow.tensor(w)).sum(), x, create_graph=True)
    (g * g).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    tg, = torch.autograd.grad((torch.lgamma(tx) * torch.tensor(w)).sum(), tx, create_graph=True)
    (tg * tg).sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-8)


def test_digamma_is_differentiable_in_a_graph():
    class M(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = flow.nn.Parameter(flow.tensor([1.5, 2.5, 0.7], dtype=flow.float64))

        def forward(self):
            return flow.digamma(self.w).sum()

    m = M()
    opt = flow.optim.SGD(m.parameters(), lr=0.125)  # (exact in float32, as the graph's rate is)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)

        def build(self):
            loss = self.m()
            loss.backward()
            return loss

    before = m.w.numpy().copy()
    G()()
    want = before - 0.125 * np.array([_series(v, 1) for v in before])
    np.testing.assert_allclose(m.w.numpy(), want, rtol=1e-12)
