"""nn.Graph optimizers beyond the former limits: gradient clipping with any `clip_grad_norm_type` (OneFlow 0.9's
ClipGradientByGlobalNorm: p-norms, inf, -inf), checked against the eager `optimizer.clip_grad()` step and a numpy
reference of the clipping factor."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn


def _model():
    flow.manual_seed(11)
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))


X = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
Y = np.random.default_rng(1).standard_normal((6, 2)).astype(np.float32)


def _loss(model, x, y):
    return ((model(x) - y) ** 2).sum() * 3.0


def _opt(model, kind, max_norm, norm_type):
    group = {"params": list(model.parameters()), "clip_grad_max_norm": max_norm, "clip_grad_norm_type": norm_type}
    if kind == "sgd":
        return flow.optim.SGD([group], lr=0.1, momentum=0.9)
    return flow.optim.Adam([group], lr=0.01)


def _graph_weights(kind, max_norm, norm_type, steps=3):
    model = _model()
    opt = _opt(model, kind, max_norm, norm_type)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = _loss(self.model, x, y)
            loss.backward()
            return loss

    g = Train()
    for _ in range(steps):
        g(flow.tensor(X), flow.tensor(Y))
    return [p.numpy() for p in model.parameters()]


def _eager_weights(kind, max_norm, norm_type, steps=3):
    model = _model()
    opt = _opt(model, kind, max_norm, norm_type)
    for _ in range(steps):
        opt.zero_grad()
        _loss(model, flow.tensor(X), flow.tensor(Y)).backward()
        opt.clip_grad()
        opt.step()
    return [p.numpy() for p in model.parameters()]


@pytest.mark.parametrize("norm_type", [1.0, 3.0, 0.5, math.inf, -math.inf, 2.0])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_graph_clipping_of_any_norm_type_equals_the_eager_step(kind, norm_type):
    max_norm = 0.05 if norm_type != -math.inf else 1e-4  # small enough that every step is clipped
    got, want = _graph_weights(kind, max_norm, norm_type), _eager_weights(kind, max_norm, norm_type)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
    unclipped = _eager_weights(kind, 1e6, norm_type)
    assert not all(np.allclose(g, u, rtol=1e-4) for g, u in zip(got, unclipped))  # clipping changed the step


def test_the_first_clipped_step_against_numpy():
    """One SGD step: every gradient times min(max_norm / (‖g‖_p + 1e-6), 1), ‖g‖_p over all the group's
    gradients (OneFlow 0.9's formula)."""
    p = 3.0
    model = _model()
    w0 = [t.numpy().copy() for t in model.parameters()]
    _loss(model, flow.tensor(X), flow.tensor(Y)).backward()
    grads = [t.grad.numpy().astype(np.float64) for t in model.parameters()]
    norm = sum((np.abs(g) ** p).sum() for g in grads) ** (1 / p)
    coeff = min(0.05 / (norm + 1e-6), 1.0)
    assert coeff < 1
    model2 = _model()
    opt = flow.optim.SGD([{"params": list(model2.parameters()), "clip_grad_max_norm": 0.05,
                           "clip_grad_norm_type": p}], lr=0.1)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model2
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = _loss(self.model, x, y)
            loss.backward()
            return loss

    Train()(flow.tensor(X), flow.tensor(Y))
    for got, w, g in zip(model2.parameters(), w0, grads):
        np.testing.assert_allclose(got.numpy(), w - 0.1 * coeff * g, rtol=1e-5, atol=1e-7)
