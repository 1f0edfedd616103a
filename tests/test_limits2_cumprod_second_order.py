"""cumprod's gradient under create_graph=True (_global/higher_order_rules.py `_cumprod`): the gradient is recorded
from differentiable ops, zeros in the input included, so it differentiates again. References: the gradient written
here in numpy as its definition, dx_i = Σ_{j>=i} w_j Π_{k<=j, k!=i} x_k, and central differences of Σ dx² (a
polynomial in x, so the differences are exact up to rounding); torch's double backward where installed."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import autograd


def _grad_by_definition(x, w, dim):
    x, w = np.moveaxis(x, dim, -1), np.moveaxis(w, dim, -1)
    n = x.shape[-1]
    out = np.zeros_like(x)
    for i in range(n):
        for j in range(i, n):
            prod = np.ones(x.shape[:-1])
            for k in range(j + 1):
                if k != i:
                    prod = prod * x[..., k]
            out[..., i] += w[..., j] * prod
    return np.moveaxis(out, -1, dim)


def _penalty_gradient_by_differences(x, w, dim, h=1e-6):
    def f(v):
        g = _grad_by_definition(v, w, dim)
        return float((g * g).sum())
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += h
        down[idx] -= h
        out[idx] = (f(up) - f(down)) / (2 * h)
    return out


CASES = {
    "no zeros": (np.array([[0.5, 1.5, -2.0, 0.7, 1.1], [1.2, -0.3, 0.8, 2.0, -1.4]]), 1),
    "one zero": (np.array([[0.5, 0.0, -2.0, 0.7, 1.1], [1.2, -0.3, 0.8, 2.0, 0.0]]), 1),
    "two zeros": (np.array([[0.5, 0.0, -2.0, 0.0, 1.1], [0.0, -0.3, 0.8, 0.0, 1.3]]), 1),
    "three zeros, dim 0": (np.array([[0.5, 1.0], [0.0, -2.0], [0.7, 0.0], [0.0, 1.5], [0.0, 0.4], [2.0, 0.6]]), 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_of_the_gradient_against_its_definition(case):
    a, dim = CASES[case]
    w = np.random.default_rng(len(case)).standard_normal(a.shape)
    x = flow.tensor(a, requires_grad=True)
    g, = autograd.grad((flow.cumprod(x, dim=dim) * flow.tensor(w)).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _grad_by_definition(a, w, dim), rtol=1e-12, atol=1e-14)
    h, = autograd.grad((g * g).sum(), x)
    np.testing.assert_allclose(h.numpy(), _penalty_gradient_by_differences(a, w, dim), rtol=1e-6, atol=1e-7)


def test_third_derivative_of_a_line():
    # f = Σ cumprod(x) for x = (a, b, c): a + ab + abc; ∂f/∂a = 1 + b + bc, ∂²f/∂a∂b = 1 + c, ∂³f/∂a∂b∂c = 1
    x = flow.tensor(np.array([0.0, 0.0, 0.0]), requires_grad=True)
    g, = autograd.grad(flow.cumprod(x, dim=0).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [1.0, 0.0, 0.0])
    h, = autograd.grad(g[0], x, create_graph=True)
    np.testing.assert_allclose(h.detach().numpy(), [0.0, 1.0, 0.0])
    t, = autograd.grad(h[1], x)
    np.testing.assert_allclose(t.numpy(), [0.0, 0.0, 1.0])


def test_against_torch():
    torch = pytest.importorskip("torch")
    for case, (a, dim) in sorted(CASES.items()):
        w = np.random.default_rng(7).standard_normal(a.shape)
        x = flow.tensor(a, requires_grad=True)
        g, = autograd.grad((flow.cumprod(x, dim=dim) * flow.tensor(w)).sum(), x, create_graph=True)
        (g * g).sum().backward()
        tx = torch.tensor(a, requires_grad=True)
        tg, = torch.autograd.grad((torch.cumprod(tx, dim=dim) * torch.tensor(w)).sum(), tx, create_graph=True)
        (tg * tg).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-14, err_msg=case)
