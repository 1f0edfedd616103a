"""Tensor.to(copy=True) returns a new tensor even where the dtype and device (or placement and sbp) do not change,
as OneFlow 0.9's ToFunctor (core/functional/impl/array_functor.cpp, v0.9.0; test/modules/test_tensor_to.py
test_global_tensor_to): the keyword was ignored, so writing into the "copy" wrote into the original."""
import numpy as np

import oneflow as flow


def test_local_copy_is_a_new_tensor():
    y = flow.ones(4)
    d = y.to(copy=True)
    assert d is not y
    d[0] = 5.0
    np.testing.assert_array_equal(y.numpy(), [1, 1, 1, 1])
    np.testing.assert_array_equal(d.numpy(), [5, 1, 1, 1])
    assert y.to("cpu", flow.float32, copy=True) is not y
    assert y.to(flow.float32) is y  # without copy=True nothing to do is no copy, as 0.9


def test_global_copy_keeps_placement_and_sbp():
    p = flow.placement("cpu", ranks=[0])
    x = flow.ones((4,), placement=p, sbp=flow.sbp.broadcast)
    cloned = x.to(copy=True)
    assert cloned.placement == x.placement and cloned.sbp == x.sbp
    local = cloned.to_local()
    local[0] = 0.0
    assert cloned.to_local()[0].numpy().item() == 0
    assert x.to_local()[0].numpy().item() == 1
