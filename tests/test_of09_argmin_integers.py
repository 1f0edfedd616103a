"""argmin / min(dim) of unsigned, extreme integer and bool tensors: OneFlow 0.9's ArgMinFunctor negates the input
in at least float32 (core/functional/impl/array_functor.cpp, v0.9.0), so a uint8's or the least int64's negation
never wraps and a bool tensor has a minimum (found by OneFlow 0.9's test/tensor/test_tensor_part_1.py
test_min_bool_input_with_random_data). Expected values: numpy's argmin / min."""
import numpy as np

import oneflow as flow


def test_argmin_of_unsigned_and_extreme_integers():
    for values, dtype in (([0, 5, 3, 0], flow.uint8), ([7, 200, 1, 1], flow.uint8),
                          ([-2 ** 62, 5, 0], flow.int64), ([3, -2 ** 31, 4], flow.int32)):
        a = np.array(values)
        assert flow.argmin(flow.tensor(values, dtype=dtype)).item() == np.argmin(a)


def test_min_along_a_dim_of_bool_and_uint8():
    rng = np.random.RandomState(0)
    b = rng.rand(3, 4, 5) > 0.5
    for a, dtype in ((b, flow.bool), ((rng.rand(3, 4, 5) * 255).astype(np.uint8), flow.uint8)):
        x = flow.tensor(a, dtype=dtype)
        for d in range(3):
            values, indices = x.min(d)
            np.testing.assert_array_equal(values.numpy(), a.min(axis=d))
            np.testing.assert_array_equal(indices.numpy(), a.argmin(axis=d))
            assert indices.dtype is flow.int64
    np.testing.assert_array_equal(flow.argmin(flow.tensor([[0.5, -1.0, 3.0]]), dim=1).numpy(), [1])
