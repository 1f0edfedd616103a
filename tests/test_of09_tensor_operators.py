"""`%` and `//` on tensors as OneFlow 0.9's number protocol (api/python/framework/tensor_functions.cpp, v0.9.0:
nb_remainder is functional::fmod, C's remainder with the sign of the dividend, not Python's; nb_floor_divide is
functional::floor_divide), and an integer 0-d tensor taken as an int argument (OneFlow 0.9's
test/modules/test_functional_scalar_tensor_param.py: `x.flatten(start_dim=tensor(1), end_dim=tensor(3))`).
Expected values: numpy's, written here."""
import numpy as np
import pytest

import oneflow as flow


def test_remainder_operator_is_fmod():
    a = np.array([5, -5, 7, -8], dtype=np.int64)
    np.testing.assert_array_equal((flow.tensor(a) % 3).numpy(), np.fmod(a, 3))  # [2, -2, 1, -2], not a % 3
    f = np.array([5.5, -5.5, 0.25], dtype=np.float32)
    np.testing.assert_array_equal((flow.tensor(f) % 2).numpy(), np.fmod(f, np.float32(2)))
    b = np.array([3, 4, -3, 5], dtype=np.int64)
    np.testing.assert_array_equal((flow.tensor(a) % flow.tensor(b)).numpy(), np.fmod(a, b))
    with pytest.raises(TypeError):
        7 % flow.tensor(a)  # 0.9's fmod takes a Tensor first


def test_floor_divide_operator():
    a = np.array([5, -5, 7, -8], dtype=np.int64)
    out = flow.tensor(a) // 2
    assert out.dtype is flow.int64
    np.testing.assert_array_equal(out.numpy(), np.floor_divide(a, 2))
    f = np.array([5.5, -5.5], dtype=np.float32)
    np.testing.assert_array_equal((flow.tensor(f) // 2).numpy(), np.floor_divide(f, np.float32(2)))
    x = flow.tensor(f, requires_grad=True)
    y = x % 2  # differentiable as fmod: d/dx = 1
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_integer_scalar_tensors_as_int_arguments():
    a = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
    y = flow.tensor(a).flatten(start_dim=flow.tensor(1), end_dim=flow.tensor(3))
    np.testing.assert_array_equal(y.numpy(), a.reshape(2, 60))
