"""one_embedding in nn.Graph with gradient accumulation, a loss scaler (set_grad_scaler: static and dynamic) and
gradient clipping (its group's clip_grad_max_norm / clip_grad_norm_type, alone or with dense parameters in the
group), each against the same graph with a dense nn.Embedding holding the same initial rows (every key is looked
up in every step, so the dense optimizer moves the same rows as the sparse one)."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn

oe = flow.one_embedding
KEYS = np.array([5, 2 ** 40 + 3, 77, -9, 123456789], dtype=np.int64)
DIM = 3
_names = iter(range(10 ** 6))


def _embedding(tmp_path, size_factor):
    name = "lim%d" % next(_names)
    store = oe.make_device_mem_store_options(persistent_path=str(tmp_path / name), capacity=1000,
                                             size_factor=size_factor)
    return oe.MultiTableEmbedding(name, DIM, flow.float, flow.int64,
                                  [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5))], store)


def _batches(steps, seed=0):
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(steps):  # every key in every micro-batch of 2 rows, some repeated
        rows = [np.concatenate([rng.permutation(5), rng.randint(0, 5, 1)]) for _ in range(4)]
        out.append(np.stack(rows))  # (4, 6) indices into KEYS
    return out


TARGET = np.linspace(-1, 1, 6 * DIM, dtype=np.float32).reshape(6, DIM)
WEIGHT = np.random.default_rng(4).standard_normal((DIM, 2)).astype(np.float32)


class _Dense(nn.Module):
    def __init__(self, initial):
        super().__init__()
        self.emb = nn.Embedding(len(KEYS), DIM)
        self.emb.weight.data = flow.tensor(initial)

    def forward(self, idx):
        return self.emb(idx)


class _Sparse(nn.Module):
    def __init__(self, e):
        super().__init__()
        self.e = e

    def forward(self, idx):
        return self.e(flow.tensor(KEYS)[idx] if not isinstance(idx, np.ndarray) else flow.tensor(KEYS[idx]))


def _run(emb, make_opt, head, steps, accumulation=1, scaler=None, scale_loss=1.0):
    """Trains `emb` (a module taking index/key tensors) and a dense linear head (or None); returns the head's
    weight after the steps."""
    params = list(emb.parameters()) + (list(head.parameters()) if head is not None else [])

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.emb, self.head = emb, head
            self.add_optimizer(make_opt(params))
            if accumulation > 1:
                self.config.set_gradient_accumulation_steps(accumulation)
            if scaler is not None:
                self.set_grad_scaler(scaler)

        def build(self, ids):
            y = self.emb(ids)
            if self.head is not None:
                y = flow.matmul(y, self.head.weight.T)
            loss = ((y - flow.tensor(TARGET if self.head is None else TARGET[:, :2])) ** 2).sum() * scale_loss
            loss.backward()
            return loss

    g = Train()
    for idx in steps:
        g(idx)
    return None if head is None else head.weight.numpy()


CASES = {
    "sgd": (1, lambda p: flow.optim.SGD(p, lr=0.05)),
    "momentum": (2, lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.9)),
    "adam": (3, lambda p: flow.optim.Adam(p, lr=0.05)),
}


def _clipped(kind, max_norm, norm_type):
    factor, make = CASES[kind]

    def opt(params):
        base = make([flow.tensor(np.zeros(1, np.float32))])  # (its class and hyper-parameters)
        group = dict(base.param_groups[0])
        group.update(params=params, clip_grad_max_norm=max_norm, clip_grad_norm_type=norm_type)
        return type(base)([group])
    return factor, opt


def _compare(tmp_path, factor, make_opt, with_head=False, **kw):
    steps = _batches(3)
    e = _embedding(tmp_path, factor)
    keys = [flow.tensor(KEYS[idx]) for idx in steps]
    probe = _embedding(tmp_path, 1)
    with flow.no_grad():
        initial = probe(flow.tensor(KEYS)).numpy()

    def head():
        if not with_head:
            return None
        lin = nn.Linear(DIM, 2, bias=False)
        lin.weight.data = flow.tensor(WEIGHT.T.copy())
        return lin

    sparse_head = _run(e, make_opt, head(), keys, **kw)
    with flow.no_grad():
        got = e(flow.tensor(KEYS)).numpy()
    dense = _Dense(initial)
    dense_head = _run(dense, make_opt, head(), [flow.tensor(idx) for idx in steps], **kw)
    want = dense.emb.weight.numpy()
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    if with_head:
        np.testing.assert_allclose(sparse_head, dense_head, rtol=2e-5, atol=2e-6)
    assert not np.allclose(got, initial)
    return got, initial


@pytest.mark.parametrize("kind", sorted(CASES))
def test_gradient_accumulation_matches_the_dense_embedding(tmp_path, kind):
    factor, make = CASES[kind]
    _compare(tmp_path, factor, make, accumulation=2)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_a_static_grad_scaler_matches_the_dense_embedding(tmp_path, kind):
    factor, make = CASES[kind]
    _compare(tmp_path, factor, make, scaler=flow.amp.StaticGradScaler(64.0), accumulation=2)


def test_a_dynamic_grad_scaler_matches_the_dense_embedding_and_skips_overflowing_steps(tmp_path):
    factor, make = CASES["momentum"]
    _compare(tmp_path, factor, make, scaler=flow.amp.GradScaler(init_scale=2.0 ** 10, growth_interval=1))
    # a scale that overflows float32 gradients: the first step is skipped by both (the scale then backs off by
    # 2^16 and the next steps update)
    got, initial = _compare(tmp_path, factor, make, scale_loss=1e10, scaler=flow.amp.GradScaler(
        init_scale=2.0 ** 96, growth_factor=2.0 ** 16, backoff_factor=2.0 ** -16, growth_interval=100))
    assert np.isfinite(got).all()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_clipping_the_embedding_group_matches_the_dense_embedding(tmp_path, kind, norm_type):
    factor, make = _clipped(kind, 0.3, norm_type)
    _compare(tmp_path, factor, make)


def test_clipping_a_group_of_the_embedding_and_dense_parameters_with_accumulation(tmp_path):
    factor, make = _clipped("momentum", 0.5, 2.0)
    _compare(tmp_path, factor, make, with_head=True, accumulation=2, scaler=flow.amp.StaticGradScaler(8.0))


def test_clipping_by_the_minimum_norm_is_refused_as_oneflow_refuses_it(tmp_path):
    factor, make = _clipped("sgd", 0.3, -math.inf)
    e = _embedding(tmp_path, factor)
    with pytest.raises(NotImplementedError, match="one_embedding gradient's invalid values set to 0, so not "
                                                  "support abs_reduce_min"):
        _run(e, make, None, [flow.tensor(KEYS[_batches(1)[0]])])
