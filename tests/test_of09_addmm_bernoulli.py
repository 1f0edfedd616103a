"""OneFlow 0.9's argument orders of flow.addmm and flow.bernoulli (found by rerunning OneFlow 0.9's
test/modules/test_addmm.py and test_bernoulli.py):

* addmm(input, mat1, mat2, alpha=1, beta=1): alpha comes first, positionally too (torch's order is beta first),
  input is always scaled by beta, and inputs of more than 2 dims are refused
  (python/oneflow/nn/modules/math_ops.py:195-199, Tensor.addmm: framework/tensor.py:117 at v0.9.0).
* flow.bernoulli is oneflow._C.bernoulli (python/oneflow/__init__.py:172): keyword dtype (float32 by default).
Expected values: numpy's, written here."""
import numpy as np
import pytest

import oneflow as flow


def _f32(a):
    return flow.tensor(a, dtype=flow.float32)


@pytest.mark.parametrize("alpha, beta", [(4, 1.2), (-3.7, 1), (1.2, -3.7)])
def test_addmm_alpha_comes_before_beta(alpha, beta):
    rs = np.random.RandomState(0)
    i, a, b = rs.randn(3, 3), rs.randn(3, 3), rs.randn(3, 3)
    want = beta * i + alpha * (a @ b)
    np.testing.assert_allclose(flow.addmm(_f32(i), _f32(a), _f32(b), alpha, beta).numpy(), want, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(flow.addmm(_f32(i), _f32(a), _f32(b), beta=beta, alpha=alpha).numpy(), want,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_f32(i).addmm(_f32(a), _f32(b), alpha, beta).numpy(), want, rtol=1e-5, atol=1e-5)


def test_addmm_gradients_and_beta_zero_keeps_nan():
    rs = np.random.RandomState(1)
    i, a, b = rs.randn(3, 3), rs.randn(3, 3), rs.randn(3, 3)
    x = flow.tensor(i, requires_grad=True)
    m1 = flow.tensor(a, requires_grad=True)
    flow.addmm(x, m1, flow.tensor(b), 2.0, 0.5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 3), 0.5))
    np.testing.assert_allclose(m1.grad.numpy(), 2.0 * np.ones((3, 3)) @ b.T, rtol=1e-12)
    i[0, 0] = np.nan  # beta * input is computed even for beta == 0, as OneFlow's flow.mul(x, beta)
    out = flow.addmm(flow.tensor(i), flow.tensor(a), flow.tensor(b), 1, 0).numpy()
    assert np.isnan(out[0, 0]) and not np.isnan(out[1:]).any()


def test_addmm_refuses_more_than_two_dims():
    with pytest.raises(ValueError, match="input matrixes shape can not be greater than 2"):
        flow.addmm(flow.ones(2, 3, 3), flow.ones(3, 3), flow.ones(3, 3))


def test_bernoulli_dtype_keyword():
    p = flow.tensor(np.array([[0.0, 1.0], [1.0, 0.0]]), dtype=flow.float64)
    assert flow.bernoulli(p).dtype is flow.float32  # float32 by default, whatever input's dtype
    y = flow.bernoulli(p, dtype=flow.int32)
    assert y.dtype is flow.int32
    np.testing.assert_array_equal(y.numpy(), [[0, 1], [1, 0]])
    np.testing.assert_array_equal(flow.bernoulli(p, 1.0, dtype=flow.float64).numpy(), np.ones((2, 2)))
