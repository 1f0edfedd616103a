"""OneFlow 0.9's tensor types are Python classes (api/python/framework/tensortype.cpp, v0.9.0: a metaclass
`oneflow.tensortype` over PyType_Type): `isinstance(t, flow.LongTensor)` is legal and False (a tensor's class is
flow.Tensor), as OneFlow 0.9's test/tensor/test_tensor_indexing2.py relies on; calling one still builds a tensor."""
import numpy as np

import oneflow as flow


def test_tensor_types_are_classes():
    for t in (flow.LongTensor, flow.FloatTensor, flow.DoubleTensor, flow.IntTensor, flow.BoolTensor,
              flow.cuda.LongTensor):
        assert isinstance(t, type)
        assert not isinstance(flow.tensor([1]), t)
    assert repr(flow.LongTensor) == "<class 'oneflow.LongTensor'>"
    assert repr(flow.cuda.FloatTensor) == "<class 'oneflow.cuda.FloatTensor'>"
    assert flow.LongTensor.__name__ == "LongTensor"


def test_calling_a_tensor_type_builds_a_tensor():
    t = flow.LongTensor([1, 2])
    assert t.dtype is flow.int64
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    assert flow.FloatTensor(2, 3).shape == (2, 3)
    assert flow.DoubleTensor([1.5]).dtype is flow.float64
    assert flow.tensor([1.0]).type() == "oneflow.FloatTensor"
    flow.set_default_tensor_type(flow.DoubleTensor)
    try:
        assert flow.ones(2).dtype is flow.float64
    finally:
        flow.set_default_tensor_type("oneflow.FloatTensor")
    assert flow.ones(2).dtype is flow.float32
