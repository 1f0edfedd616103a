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


# --- sparse optimizers: nn.Graph.add_optimizer(optim, is_sparse=True) ---------------------------------------------
ROWS = np.random.default_rng(3).standard_normal((8, 3)).astype(np.float32)
STEPS = [np.array([1, 4, 4, 6]), np.array([4, 0, 1, 1]), np.array([6, 6, 2, 4])]


def _sparse_graph_rows(make_opt, is_sparse, steps=STEPS):
    holder = nn.Module()
    holder.w = nn.Parameter(flow.tensor(ROWS))
    w = holder.w
    opt = make_opt([w])

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.holder = holder
            self.add_optimizer(opt, is_sparse=is_sparse)

        def build(self, idx):
            rows = flow.index_select(self.holder.w, 0, idx)
            loss = (rows * rows * flow.tensor(np.arange(1.0, 4.0, dtype=np.float32))).sum()
            loss.backward()
            return loss

    g = Train()
    for idx in steps:
        g(flow.tensor(idx))
    return w.numpy()


def _lazy_reference(kind, steps=STEPS, lr=0.1, wd=0.0):
    """numpy: only the rows gathered in a step move, their optimizer states with them (OneFlow's
    indexed_slices_{sgd,momentum,adam}_update: the other rows keep value and state)."""
    w = ROWS.astype(np.float64).copy()
    m, v = np.zeros_like(w), np.zeros_like(w)
    scale = np.arange(1.0, 4.0)
    for t, idx in enumerate(steps, 1):
        g = np.zeros_like(w)
        np.add.at(g, idx, 2 * w[idx] * scale)
        rows = np.unique(idx)
        gr = g[rows]
        if kind == "sgd":
            w[rows] -= lr * gr
        elif kind == "momentum":
            m[rows] = 0.9 * m[rows] + gr
            w[rows] -= lr * m[rows]
        else:  # adam / adamw (bias-corrected, step t counted per call)
            if kind == "adamw":
                w[rows] *= 1 - lr * wd
            m[rows] = 0.9 * m[rows] + 0.1 * gr
            v[rows] = 0.999 * v[rows] + 0.001 * gr * gr
            mh, vh = m[rows] / (1 - 0.9 ** t), v[rows] / (1 - 0.999 ** t)
            w[rows] -= lr * mh / (np.sqrt(vh) + 1e-8)
    return w


SPARSE = {"sgd": lambda p: flow.optim.SGD(p, lr=0.1), "momentum": lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9),
          "adam": lambda p: flow.optim.Adam(p, lr=0.1), "adamw": lambda p: flow.optim.AdamW(p, lr=0.1,
                                                                                             weight_decay=0.5)}


@pytest.mark.parametrize("kind", sorted(SPARSE))
def test_a_sparse_optimizer_updates_the_gathered_rows_alone(kind):
    got = _sparse_graph_rows(SPARSE[kind], True)
    np.testing.assert_allclose(got, _lazy_reference(kind, wd=0.5), rtol=1e-5, atol=5e-6)  # (float32 Adam)
    np.testing.assert_array_equal(got[[3, 5, 7]], ROWS[[3, 5, 7]])  # never gathered
    if kind != "sgd":  # a dense momentum / Adam moves rows after their gradient is gone; the sparse one does not
        dense = _sparse_graph_rows(SPARSE[kind], False)
        assert not np.allclose(dense[[0, 2]], got[[0, 2]])


def test_an_optimizer_without_sparse_support_is_refused_as_oneflow():
    w = nn.Parameter(flow.tensor(ROWS))

    class G(nn.Graph):
        def build(self, x):
            return x

    with pytest.raises(ValueError, match=r"^<class '.*RMSprop'> does not support sparse updating.$"):
        G().add_optimizer(flow.optim.RMSprop([w], lr=0.1), is_sparse=True)
