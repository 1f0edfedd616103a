"""log2 / log10 as OneFlow 0.9's own unary ops (user/ops/math_unary_elementwise_seq.h, v0.9.0): one rounding of
the result, so a bfloat16 log2 equals float32's log2 rounded to bfloat16 (OneFlow 0.9's
test/tensor/test_bfloat16_activation.py test_log2_with_random_data); gradient dy / (x ln b), differentiable again.
Expected values: numpy's, written here."""
import numpy as np
import pytest

import oneflow as flow


@pytest.mark.parametrize("name, np_fn, base", [("log2", np.log2, 2.0), ("log10", np.log10, 10.0)])
def test_values_and_gradients(name, np_fn, base):
    a = np.random.RandomState(0).rand(4, 5) * 10 + 0.1
    x = flow.tensor(a, requires_grad=True)
    y = getattr(flow, name)(x)
    np.testing.assert_array_equal(y.numpy(), np_fn(a))  # one rounding: numpy's result bit for bit
    (gx,) = flow.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(gx.numpy(), 1.0 / (a * np.log(base)), rtol=1e-12)
    (ggx,) = flow.autograd.grad(gx.sum(), x)
    np.testing.assert_allclose(ggx.numpy(), -1.0 / (a * a * np.log(base)), rtol=1e-12)
    np.testing.assert_array_equal(getattr(flow.tensor(a), name)().numpy(), np_fn(a))
    np.testing.assert_array_equal(getattr(flow._C, name)(flow.tensor(a)).numpy(), np_fn(a))
    assert getattr(flow, name)(flow.tensor([4, 100])).dtype is flow.float32  # integers become float32


def test_bfloat16_log2_is_float32_log2_rounded_once():
    a = np.random.RandomState(1).rand(16, 16)
    x = flow.tensor(a, dtype=flow.bfloat16)
    y = flow.log2(x)
    assert y.dtype is flow.bfloat16
    np.testing.assert_array_equal(y.float().numpy(), flow.log2(x.float()).bfloat16().float().numpy())
