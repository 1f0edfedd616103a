"""OneFlow 0.9's logical_or with a number (ScalarLogicalOr, functional_api.yaml v0.9.0; test/modules/test_logical_or.py
test_scalar_logical_or: it raised) and randn's error for an integer dtype (core/functional/impl/random_functor.cpp
RandNFunctor: NotImplementedError "Only support floating dtype in randn()."; test/modules/test_randn.py).
Expected values: numpy's, written here."""
import re

import numpy as np
import pytest

import oneflow as flow


@pytest.mark.parametrize("dtype", [flow.float32, flow.int32])
@pytest.mark.parametrize("scalar", [1, 0])
def test_logical_or_with_a_number(dtype, scalar):
    a = np.array([[0, 1, 2], [2, 0, 0]])
    out = flow.tensor(a, dtype=dtype).logical_or(scalar)
    assert out.dtype is flow.bool
    np.testing.assert_array_equal(out.numpy(), np.logical_or(a, scalar))
    np.testing.assert_array_equal(flow.logical_or(flow.tensor(a, dtype=dtype), scalar).numpy(),
                                  np.logical_or(a, scalar))


def test_randn_refuses_integer_dtypes_with_0_9s_words():
    with pytest.raises(NotImplementedError, match="^" + re.escape("Only support floating dtype in randn().") + "$"):
        flow.randn(2, 3, dtype=flow.int32)
    assert flow.randn(2, 3, dtype=flow.float64).dtype is flow.float64
