"""sign of a bool tensor is that tensor's values, bool (OneFlow 0.9's test/modules/test_sign.py
test_sign_with_random_data on bool; numpy's sign has no bool loop, so the kernel raised)."""
import numpy as np

import oneflow as flow


def test_sign_of_bool():
    a = np.array([[True, False], [False, True]])
    for y in (flow.sign(flow.tensor(a)), flow.tensor(a).sign()):
        assert y.dtype is flow.bool
        np.testing.assert_array_equal(y.numpy(), a)
    np.testing.assert_array_equal(flow.sign(flow.tensor([-2.0, 0.0, 3.0])).numpy(), [-1.0, 0.0, 1.0])
