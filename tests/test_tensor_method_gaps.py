"""Tensor methods of OneFlow 0.9 bound to existing functions (tensor_method_gaps.py): values against numpy written
here, gradients where differentiable, a global tensor case, and the errors for bad input."""
import math

import numpy as np
import pytest

import oneflow as flow


X = np.array([[0.5, -1.5, 2.0], [-3.0, 1.0, 0.25]], np.float32)


def test_contains_scalar_tensor_and_bad_type():
    x = flow.tensor(X)
    assert 2.0 in x and -3 in x and flow.tensor(0.25) in x
    assert 7.0 not in x
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar, but you passed in a <class 'str'>"):
        "a" in x  # noqa: B015


def test_clamp_min_max_gelu_logaddexp_values_and_grads():
    x = flow.tensor(X, requires_grad=True)
    np.testing.assert_allclose(x.clamp_min(0.3).numpy(), np.maximum(X, 0.3))
    np.testing.assert_allclose(x.clamp_max(0.3).numpy(), np.minimum(X, 0.3))
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(x.gelu().numpy(), X * 0.5 * (1 + erf(X / math.sqrt(2))), rtol=1e-5, atol=1e-6)
    y = np.array([[1.0, 2.0, -1.0], [0.0, 0.5, 3.0]], np.float32)
    out = x.logaddexp(flow.tensor(y))
    np.testing.assert_allclose(out.numpy(), np.logaddexp(X, y), rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.exp(y - X)), rtol=1e-5)
    x.grad = None
    x.clamp_min(0.3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (X > 0.3).astype(np.float32))


def test_relu_in_place_and_contiguous_in_place():
    x = flow.tensor(X)
    r = x.relu_()
    assert r is x
    np.testing.assert_allclose(x.numpy(), np.maximum(X, 0))
    assert x.contiguous_() is x


def test_inverse_and_as_strided():
    a = np.array([[4.0, 7.0], [2.0, 6.0]], np.float32)
    np.testing.assert_allclose(flow.tensor(a).inverse().numpy(), np.linalg.inv(a), rtol=1e-5)
    base = np.arange(12, dtype=np.float32)
    out = flow.tensor(base).as_strided((3, 2), (4, 1), 1)
    np.testing.assert_allclose(out.numpy(), np.lib.stride_tricks.as_strided(base[1:], (3, 2), (16, 4)))


def test_exponential_fill_statistics_and_errors():
    flow.manual_seed(3)
    t = flow.empty(20000)
    assert t.exponential_(4.0) is t
    v = t.numpy()
    assert v.min() >= 0 and abs(v.mean() - 0.25) < 0.01 and abs(v.std() - 0.25) < 0.01
    with pytest.raises(RuntimeError, match="lambda > 0.0"):
        flow.empty(3).exponential_(0.0)
    with pytest.raises(RuntimeError, match="floating point"):
        flow.zeros(3, dtype=flow.int32).exponential_()


def test_init_fill_methods_match_their_formulas():
    flow.manual_seed(0)
    w = flow.empty(64, 32, 3, 3)
    assert w.kaiming_uniform_(a=math.sqrt(5)) is w
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + 5)) / math.sqrt(32 * 9)
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.95 * bound
    w.kaiming_normal_(mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() / (math.sqrt(2.0) / math.sqrt(64 * 9)) - 1) < 0.05
    # channels last: fan_out is shape[0] times shape[1:-1]
    w.kaiming_normal_(mode="fan_out", nonlinearity="relu", data_format="NHWC")
    assert abs(w.numpy().std() / (math.sqrt(2.0) / math.sqrt(64 * 32 * 3)) - 1) < 0.05
    m = flow.empty(300, 200)
    m.xavier_uniform_(gain=2.0)
    assert np.abs(m.numpy()).max() <= 2.0 * math.sqrt(6.0 / 500)
    m.xavier_normal_()
    assert abs(m.numpy().std() / math.sqrt(2.0 / 500) - 1) < 0.05
    m.trunc_normal_(std=3.0, a=-1.0, b=1.0)
    assert m.numpy().min() >= -1.0 and m.numpy().max() <= 1.0
    q = flow.empty(3, 5)
    assert q.orthogonal_(gain=2.0) is q
    np.testing.assert_allclose(q.numpy() @ q.numpy().T, 4 * np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        w.kaiming_normal_(mode="fan_avg")


def test_numpy_transfers():
    x = flow.tensor(X)
    a = x.to_numpy()
    a[0, 0] = 99.0
    np.testing.assert_allclose(x.numpy(), X)  # a copy
    out = np.zeros(6, np.float32)
    assert x._copy_to_numpy(out) is None
    np.testing.assert_allclose(out, X.reshape(-1))
    x._copy_from_numpy(np.full((2, 3), 7.0, np.float32))
    np.testing.assert_allclose(x.numpy(), np.full((2, 3), 7.0))
    with pytest.raises(RuntimeError, match="float32 with 6 elements"):
        x._copy_from_numpy(np.zeros(6, np.float64))


def test_global_tensor_methods_and_global_id():
    p = flow.placement("cpu", ranks=[0])
    g = flow.tensor(X).to_global(placement=p, sbp=flow.sbp.broadcast)
    out = g.clamp_min(0.0)
    assert out.is_global
    np.testing.assert_allclose(out.to_local().numpy(), np.maximum(X, 0))
    assert 2.0 in g
    assert g.global_id() == g.global_id()
    other = flow.tensor(X).to_global(placement=p, sbp=flow.sbp.broadcast)
    assert other.global_id() != g.global_id()
    with pytest.raises(RuntimeError, match="Only global tensors have 'global_id'"):
        flow.tensor(X).global_id()
    with pytest.raises(RuntimeError, match="to_numpy\\(\\) is only for local tensors"):
        g.to_numpy()
