"""Edges found by rerunning OneFlow 0.9's test/modules/test_constant.py and test_constant_pad.py:

* flow.full's dtype is that of flow.tensor(fill_value): a tensor fill value gives its own dtype, a numpy scalar
  counts as the Python scalar it holds (python/oneflow/nn/modules/constant.py:396-405 at v0.9.0).
* a constant pad whose negative pads crop an axis to size 0 gives an empty axis (pad's shape is
  x + before + after, user/ops/pad_op.cpp:33-44), as torch's; cropping below 0 stays an error.
References: numpy / torch written here."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")


def test_full_takes_the_dtype_of_a_tensor_fill_value():
    y = flow.full((2, 3), flow.tensor(2.0, requires_grad=True), requires_grad=True)
    assert y.dtype is flow.float32 and y.requires_grad
    np.testing.assert_array_equal(y.numpy(), np.full((2, 3), 2.0, np.float32))
    assert flow.full((2,), flow.tensor(3, dtype=flow.int8)).dtype is flow.int8
    assert flow.full((2,), flow.tensor(3, dtype=flow.int8), dtype=flow.float64).dtype is flow.float64


def test_full_reads_a_numpy_scalar_as_its_python_value():
    y = flow.full((2,), np.float32(1.5))
    assert y.dtype is flow.float32
    np.testing.assert_array_equal(y.numpy(), [1.5, 1.5])
    assert flow.full((2,), np.int32(4)).dtype is flow.int64


@pytest.mark.parametrize("pads", [(-1, -1, -1, -1), (1, 0, -1, -1), (-3, 0, 0, 0)])
def test_constant_pad_may_crop_an_axis_to_size_zero(pads):
    a = np.random.RandomState(0).randn(1, 2, 2, 3).astype(np.float32)
    x = flow.tensor(a, requires_grad=True)
    y = flow.nn.functional.pad(x, pads, mode="constant", value=2.0)
    want = torch.nn.functional.pad(torch.tensor(a), pads, mode="constant", value=2.0)
    assert tuple(y.shape) == tuple(want.shape) and 0 in tuple(y.shape)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(a))


def test_constant_pad_cropping_below_zero_is_refused():
    with pytest.raises(RuntimeError, match=r"pad: the pads \(-2, -2\) crop dim 3 of size 3 below nothing"):
        flow.nn.functional.pad(flow.ones(1, 1, 2, 3), (-2, -2))
