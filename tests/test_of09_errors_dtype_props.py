"""OneFlow 0.9's dtype properties (api/python/framework/dtype.cpp; values from core/framework/dtype.cpp
DTypeMeta4DataType, v0.9.0): is_floating_point, is_signed, is_complex, bytes."""
import pytest

import oneflow as flow


@pytest.mark.parametrize("name, floating, signed, nbytes", [
    ("float16", True, True, 2), ("float32", True, True, 4), ("float64", True, True, 8), ("bfloat16", True, True, 2),
    ("int8", False, True, 1), ("int32", False, True, 4), ("int64", False, True, 8),
    ("uint8", False, False, 1), ("bool", False, False, 1), ("char", False, False, 1),
])
def test_dtype_properties(name, floating, signed, nbytes):
    d = getattr(flow, name)
    assert (d.is_floating_point, d.is_signed, d.is_complex, d.bytes) == (floating, signed, False, nbytes)


def test_dtype_without_a_fixed_size():
    with pytest.raises(NotImplementedError, match="has no fixed byte size"):
        flow.tensor_buffer.bytes
