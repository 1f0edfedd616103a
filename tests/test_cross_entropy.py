"""OneFlow 0.9's cross entropy (`flow.nn.functional.cross_entropy`, `flow.nn.CrossEntropyLoss`, `flow._C`) against
a numpy reference written here from OneFlow's formulas (nn_functor.cpp, v0.9.0): class weights, ignore_index (the
mean divides by the kept samples' summed weights), label smoothing, targets OneFlow flattens ((N, 1) for (N,)),
probability targets; values and gradients (central differences), eagerly and in nn.Graph. Torch comparisons of the
same cases are in test_nn_losses.py."""
import numpy as np
import pytest

import oneflow_compat as flow

F = flow.nn.functional


def log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def reference(x, t, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """OneFlow's CrossEntropy (class indices): rows (N·d..., C), labels flattened, nll and smoothing terms."""
    c = x.shape[1]
    rows = np.moveaxis(x, 1, -1).reshape(-1, c)
    labels = t.reshape(-1)
    lp = log_softmax(rows)
    kept = labels != ignore_index
    safe = np.where(kept, labels, 0)
    w = kept * (weight[safe] if weight is not None else 1.0)
    nll = -lp[np.arange(len(safe)), safe] * w
    loss = nll
    if smoothing:
        spread = lp * (weight if weight is not None else 1.0)
        loss = (1 - smoothing) * nll + smoothing / c * (-spread.sum(1) * kept)
    if reduction == "none":
        return loss.reshape(t.shape)
    return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def reference_probs(x, p, weight=None, reduction="mean", smoothing=0.0):
    c = x.shape[1]
    lp, q = log_softmax(np.moveaxis(x, 1, -1)), np.moveaxis(p, 1, -1)
    if smoothing:
        q = q * (1 - smoothing) + smoothing / c
    terms = lp * q * (weight if weight is not None else 1.0)
    loss = -terms.sum(-1)
    return loss if reduction == "none" else (loss.sum() if reduction == "sum" else loss.mean())


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up).sum() - f(down).sum()) / (2 * eps)
    return g


RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 5))
LABELS = np.array([1, 0, -100, 4, 2, 4])
WEIGHT = RNG.uniform(0.2, 2.0, 5)
X3 = RNG.standard_normal((3, 5, 2))
LABELS3 = np.array([[1, 3], [0, 0], [4, 2]])
PROBS = RNG.dirichlet(np.ones(5), 6)

CASES = {  # name: (x, target, kwargs)
    "default_ignores_minus_100": (X, LABELS, {}),
    "weight": (X, LABELS, {"weight": WEIGHT}),
    "weight_sum": (X, LABELS, {"weight": WEIGHT, "reduction": "sum"}),
    "smoothing": (X, LABELS, {"label_smoothing": 0.2}),
    "smoothing_weight_none": (X, LABELS, {"weight": WEIGHT, "label_smoothing": 0.3, "reduction": "none"}),
    "ignore_a_class": (X, np.array([1, 0, 3, 4, 2, 3]), {"ignore_index": 3}),
    "target_n_by_1": (X, np.array([[1], [0], [3], [4], [2], [3]]), {"reduction": "none"}),
    "spatial_weight_smoothing": (X3, LABELS3, {"weight": WEIGHT, "label_smoothing": 0.1, "ignore_index": 0}),
    "spatial_none": (X3, LABELS3, {"reduction": "none"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cross_entropy_matches_oneflows_formula_with_its_gradient(name):
    x, t, kw = CASES[name]
    ref_kw = {k if k != "label_smoothing" else "smoothing": v for k, v in kw.items()}
    want = reference(x, t, **ref_kw)
    xt = flow.tensor(x, requires_grad=True)
    kwargs = dict(kw, weight=flow.tensor(kw["weight"]) if "weight" in kw else None)
    got = F.cross_entropy(xt, flow.tensor(t), **kwargs)
    assert tuple(got.shape) == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    got.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(lambda v: reference(v, t, **ref_kw), x),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kw", [{}, {"weight": WEIGHT, "label_smoothing": 0.25}, {"reduction": "none"}],
                         ids=["plain", "weight_smoothing", "none"])
def test_probability_targets(kw):
    ref_kw = {k if k != "label_smoothing" else "smoothing": v for k, v in kw.items()}
    kwargs = dict(kw, weight=flow.tensor(kw["weight"]) if "weight" in kw else None)
    xt = flow.tensor(X, requires_grad=True)
    got = F.cross_entropy(xt, flow.tensor(PROBS), **kwargs)
    np.testing.assert_allclose(got.numpy(), reference_probs(X, PROBS, **ref_kw), rtol=1e-10, atol=1e-12)
    got.sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), numeric_grad(lambda v: reference_probs(v, PROBS, **ref_kw), X),
                               rtol=1e-6, atol=1e-8)


def test_the_module_the_c_namespace_and_the_fused_path_agree():
    labels = np.array([1, 0, 3, 4, 2, 4])
    x, t = flow.tensor(X), flow.tensor(labels)
    fused = flow.nn.CrossEntropyLoss()(x, t)  # no weight, no smoothing, no label ignored: one fused op
    exact = flow.nn.CrossEntropyLoss(ignore_index=-100)(x, t)  # passed explicitly: OneFlow's composition
    np.testing.assert_allclose(fused.numpy(), reference(X, labels), rtol=1e-12)
    np.testing.assert_allclose(exact.numpy(), fused.numpy(), rtol=1e-12)
    np.testing.assert_allclose(flow._C.cross_entropy(x, t, flow.tensor(WEIGHT)).numpy(),
                               reference(X, labels, WEIGHT), rtol=1e-12)
    module = flow.nn.CrossEntropyLoss(weight=flow.tensor(WEIGHT), label_smoothing=0.1)
    assert list(module.state_dict()) == ["weight"] and repr(module) == "CrossEntropyLoss()"
    np.testing.assert_allclose(module(x, t).numpy(), reference(X, labels, WEIGHT, smoothing=0.1), rtol=1e-12)


def test_in_nn_graph():
    model = flow.nn.Linear(5, 5).to(flow.float64)

    class Step(flow.nn.Graph):
        def __init__(self, loss):
            super().__init__()
            self.model, self.loss = model, loss

        def build(self, x, t):
            return self.loss(self.model(x), t)

    x, labels = flow.tensor(X), flow.tensor(LABELS)
    logits = model(x).numpy()
    explicit = Step(flow.nn.CrossEntropyLoss(weight=flow.tensor(WEIGHT), ignore_index=-100, label_smoothing=0.2))
    np.testing.assert_allclose(explicit(x, labels).numpy(), reference(logits, LABELS, WEIGHT, smoothing=0.2),
                               rtol=1e-10)
    # in a graph the labels are not at hand: the default ignore_index is not looked for, and -100 is no class
    with pytest.raises(ValueError, match=r"label -100 is out of range \[0, 5\)"):
        Step(flow.nn.CrossEntropyLoss())(x, labels)


def test_errors():
    x = flow.tensor(X)
    with pytest.raises(ValueError, match=r"^cross_entropy\(\): target of shape \(5,\) does not fit input of shape "
                                         r"\(6, 5\)$"):
        F.cross_entropy(x, flow.tensor(np.arange(5)))
    with pytest.raises(RuntimeError, match=r"^label_smoothing must be between 0.0 and 1.0. Got: 1.5$"):
        F.cross_entropy(x, flow.tensor(LABELS), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, flow.tensor(PROBS), ignore_index=0)
    with pytest.raises(ValueError, match=r"reduction must be one of \('none', 'mean', 'sum'\), got 'avg'"):
        F.cross_entropy(x, flow.tensor(LABELS), reduction="avg")
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 5\)"):
        F.cross_entropy(x, flow.tensor(np.array([1, 0, 7, 4, 2, 4])), weight=flow.tensor(WEIGHT))
