"""Tensor.new_tensor as OneFlow 0.9 (python/oneflow/framework/tensor.py _new_tensor, v0.9.0): dtype and device taken
positionally, self's dtype / device by default; a global self's placement AND sbp by default (OneFlow 0.9's
test/tensor/test_new_tensor.py)."""
import numpy as np
import pytest

import oneflow as flow


def test_local_defaults_and_positional_dtype_device():
    t = flow.randn(5, dtype=flow.float64)
    n = t.new_tensor([[1, 2], [3, 4]])
    assert n.dtype is flow.float64 and n.device == t.device
    np.testing.assert_array_equal(n.numpy(), [[1, 2], [3, 4]])
    n = t.new_tensor([[1, 2], [3, 4]], flow.int64, "cuda")
    assert n.dtype is flow.int64
    assert n.device == flow.device("cuda")
    assert t.new_tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(AssertionError, match="self is local tensor, placement and sbp are expected to be None."):
        t.new_tensor([1.0], placement=flow.placement("cpu", ranks=[0]))


def test_global_keeps_placement_and_sbp():
    p = flow.placement("cpu", ranks=[0])
    g = flow.randn(4, 4, placement=p, sbp=flow.sbp.split(0))
    n = g.new_tensor(np.arange(6.0).reshape(3, 2))
    assert n.placement == p and n.sbp == (flow.sbp.split(0),)
    np.testing.assert_array_equal(n.numpy(), np.arange(6.0).reshape(3, 2))
    n = g.new_tensor([1.0, 2.0], sbp=flow.sbp.broadcast)
    assert n.sbp == (flow.sbp.broadcast,)
    with pytest.raises(AssertionError, match="self is global tensor, device is expected to be None."):
        g.new_tensor([1.0], device="cpu")
