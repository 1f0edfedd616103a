"""OneFlow 0.9's fused flow._C functionals (fused_functionals.py) against numpy formulas written here."""
import math

import numpy as np
import pytest

import oneflow as flow

rng = np.random.RandomState(7)
X = rng.randn(2, 3, 4).astype(np.float32)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_bias_add_axis_grad_and_errors():
    b = np.array([1.0, -2.0, 0.5], np.float32)
    x = flow.tensor(X, requires_grad=True)
    bias = flow.tensor(b, requires_grad=True)
    out = flow._C.bias_add(x, bias, axis=1)
    np.testing.assert_allclose(out.numpy(), X + b[None, :, None])
    (out * flow.tensor(X)).sum().backward()
    np.testing.assert_allclose(bias.grad.numpy(), X.sum(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), X)
    # OneFlow 0.9's BiasAddFunctor words
    with pytest.raises(RuntimeError,
                       match=r"The size of tensor x \(2,3,4\) must match the size of tensor b \(3,\) at dimension 2"):
        flow._C.bias_add(flow.tensor(X), flow.tensor(b), axis=2)


def test_bias_add_gelu_and_dropout_extremes():
    b = np.array([0.25, 0.5, -1.0, 2.0], np.float32)
    y = flow._C.fused_bias_add_gelu(flow.tensor(X), flow.tensor(b), axis=2)
    erf = np.vectorize(math.erf)
    z = X + b
    np.testing.assert_allclose(y.numpy(), 0.5 * z * (1 + erf(z / math.sqrt(2))), rtol=1e-5, atol=1e-6)
    keep = flow._C.fused_bias_add_dropout(flow.tensor(X), flow.tensor(b), p=0.0, axis=2)
    np.testing.assert_allclose(keep.numpy(), z)
    drop = flow._C.fused_bias_add_dropout(flow.tensor(X), flow.tensor(b), p=1.0, axis=2)
    np.testing.assert_allclose(drop.numpy(), np.zeros_like(z))


def test_fast_gelu_mul_value_and_grad():
    x = flow.tensor(X, requires_grad=True)
    m = flow.tensor(X[::-1].copy(), requires_grad=True)
    out = flow._C.fused_fast_gelu_mul(x, m)
    np.testing.assert_allclose(out.numpy(), _gelu_tanh(X) * X[::-1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flow._C.fast_gelu(flow.tensor(X)).numpy(), _gelu_tanh(X), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), _gelu_tanh(X), rtol=1e-5, atol=1e-6)


def test_scale_tril_fill_and_grad():
    x = flow.tensor(X, requires_grad=True)
    y = flow._C.fused_scale_tril(x, -1, 5.0, 2.0)
    expect = np.where(np.tril(np.ones((3, 4)), -1) > 0, 2.0 * X, 5.0)
    np.testing.assert_allclose(y.numpy(), expect)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(2.0 * np.tril(np.ones((3, 4)), -1), X.shape))


def test_weighted_sum():
    a, b = X, X * 3 - 1
    out = flow._C.fused_weighted_sum([flow.tensor(a), flow.tensor(b)], [0.5, -2.0], 1.5)
    np.testing.assert_allclose(out.numpy(), 1.5 * (0.5 * a - 2.0 * b), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="as many weights as inputs"):
        flow._C.fused_weighted_sum([flow.tensor(a)], [1.0, 2.0])


def test_scale_mask_softmax_family():
    mask = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, True]])
    y = flow._C.fused_scale_mask_softmax(flow.tensor(X), flow.tensor(mask), fill_value=-10.0, scale=0.5)
    ref = _softmax(np.where(mask, X * 0.5, -10.0))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-7)
    out, soft = flow._C.fused_scale_mask_softmax_dropout(flow.tensor(X), flow.tensor(mask), fill_value=-10.0,
                                                         scale=0.5, p=0.0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(soft.numpy(), ref, rtol=1e-5, atol=1e-7)
    out, soft = flow._C.fused_scale_tril_softmax_mask_scale(flow.tensor(X), p=1.0, diagonal=0, tril_scale_value=3.0)
    np.testing.assert_allclose(soft.numpy(), _softmax(np.tril(np.ones((3, 4))) * 3.0 * X), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.numpy(), np.zeros_like(X))


def test_glu_and_matmul_bias():
    x = rng.randn(5, 4).astype(np.float32)
    w = rng.randn(6, 4).astype(np.float32)
    b = rng.randn(6).astype(np.float32)
    h = x @ w.T + b
    out = flow._C.fused_glu(flow.tensor(x), flow.tensor(w), flow.tensor(b), activation="sigmoid")
    np.testing.assert_allclose(out.numpy(), h[:, :3] / (1 + np.exp(-h[:, 3:])), rtol=1e-5,
                               atol=1e-6)
    v = rng.randn(6, 4).astype(np.float32)
    c = rng.randn(6).astype(np.float32)
    out = flow._C.fused_glu(flow.tensor(x), flow.tensor(w), flow.tensor(b), flow.tensor(v), flow.tensor(c),
                            activation="relu")
    np.testing.assert_allclose(out.numpy(), h * np.maximum(x @ v.T + c, 0), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="activation must be one of"):
        flow._C.fused_glu(flow.tensor(x), flow.tensor(w), flow.tensor(b), activation="tanh")
    add = rng.randn(5, 6).astype(np.float32)
    y = flow._C.fused_matmul_bias(flow.tensor(x), flow.tensor(w), flow.tensor(b), flow.tensor(add))
    np.testing.assert_allclose(y.numpy(), h + add, rtol=1e-5, atol=1e-5)


def test_global_bias_add():
    p = flow.placement("cpu", ranks=[0])
    g = flow.tensor(X).to_global(placement=p, sbp=flow.sbp.split(0))
    bias = flow.tensor(np.arange(4, dtype=np.float32)).to_global(placement=p, sbp=flow.sbp.broadcast)
    out = flow._C.bias_add(g, bias, axis=-1)
    assert out.is_global
    np.testing.assert_allclose(out.to_local().numpy(), X + np.arange(4))
