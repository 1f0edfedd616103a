"""flow.as_tensor as OneFlow 0.9 has it (v0.9.0 python/oneflow/nn/modules/as_tensor.py): a tensor comes back itself
when dtype and device match, converted otherwise; a numpy array of a matching dtype on the CPU shares memory."""
import numpy as np

import oneflow as flow


def test_as_tensor_of_a_tensor_is_itself_when_nothing_changes():
    x = flow.tensor([1.0, 2.0])
    assert flow.as_tensor(x) is x
    assert flow.as_tensor(x, dtype=flow.float32) is x
    assert flow.as_tensor(x, device="cpu") is x
    assert flow.as_tensor(x, device=flow.device("cpu")) is x


def test_as_tensor_of_a_tensor_converts_dtype_and_device():
    x = flow.tensor([1.5, 2.5])
    y = flow.as_tensor(x, dtype=flow.float64)
    assert y is not x and y.dtype == flow.float64
    np.testing.assert_array_equal(y.numpy(), np.array([1.5, 2.5]))
    z = flow.as_tensor(x, device=flow.device("cuda:0"))
    assert z is not x and z.device == flow.device("cuda:0")
    np.testing.assert_array_equal(z.numpy(), x.numpy())


def test_as_tensor_of_an_array_shares_memory_when_the_dtype_matches():
    a = np.arange(4, dtype=np.float64)
    t = flow.as_tensor(a)
    a[0] = 9.0
    assert t.dtype == flow.float64 and t.numpy()[0] == 9.0
    t2 = flow.as_tensor(a, dtype=flow.float64)
    a[1] = 7.0
    assert t2.numpy()[1] == 7.0


def test_as_tensor_of_an_array_copies_when_the_dtype_differs():
    a = np.arange(3, dtype=np.float64)
    t = flow.as_tensor(a, dtype=flow.float32)
    a[0] = 5.0
    assert t.dtype == flow.float32
    np.testing.assert_array_equal(t.numpy(), np.array([0.0, 1.0, 2.0], dtype=np.float32))


def test_as_tensor_of_a_list_with_dtype():
    t = flow.as_tensor([1, 2, 3], dtype=flow.float32)
    assert t.dtype == flow.float32
    np.testing.assert_array_equal(t.numpy(), np.array([1, 2, 3], dtype=np.float32))
