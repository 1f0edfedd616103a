"""OneFlow 0.9's error types and exact words for tensor indexing (core/functional/tensor_index.cpp and
array_functor.cpp TensorGetItemFunctor, v0.9.0): a negative slice step, one integer into a 0-d tensor, too many
indices in an assignment; with what indexing does where the input is good."""
import re

import numpy as np
import pytest

import oneflow as flow


def _words(text):
    return "^" + re.escape(text) + "$"


def test_negative_slice_step():
    x = flow.tensor([0, 1, 2, 3], dtype=flow.int32)
    with pytest.raises(RuntimeError, match=_words("Step must be greater than zero.")):
        x[0:2:-1]
    with pytest.raises(ValueError):  # still a ValueError, as before
        x[::-2]
    with pytest.raises(ValueError, match="slice step cannot be zero"):  # Python's own, as OneFlow's slice unpacking
        x[::0]
    np.testing.assert_array_equal(x[1::2].numpy(), [1, 3])


def test_one_integer_into_a_0d_tensor():
    # the fast path for one integer of a local tensor that requires no grad: ApplySelectIndexing's RuntimeError
    with pytest.raises(RuntimeError, match=_words("select() cannot be applied to a 0-dim tensor.")):
        flow.tensor(5, dtype=flow.int32)[0]
    # otherwise PrepareSliceIndices' IndexError
    with pytest.raises(IndexError, match=_words("Too many indices for tensor of dimension 0")):
        flow.tensor(5.0, requires_grad=True)[0]
    with pytest.raises(IndexError, match=_words("Too many indices for tensor of dimension 0")):
        flow.tensor(5.0)[0, 0]
    assert flow.tensor(5.0)[...].item() == 5.0


def test_assignment_with_too_many_indices():
    x = flow.arange(16).reshape(4, 4)
    with pytest.raises(IndexError, match=_words("Too many indices for tensor of dimension 2")):
        x[0, 0, 0] = 0
    with pytest.raises(IndexError, match=_words("Too many indices for tensor of dimension 2")):
        x[flow.ones(4, 4, dtype=flow.bool), 0] = 0  # a mask names as many axes as it has
    np.testing.assert_array_equal(x.numpy(), np.arange(16).reshape(4, 4))
    x[None, 1, ..., 2] = -1  # None and Ellipsis name no axis
    x[flow.tensor([[True, False, False, False]] * 4)] = 9
    want = np.arange(16).reshape(4, 4)
    want[1, 2] = -1
    want[:, 0] = 9
    np.testing.assert_array_equal(x.numpy(), want)
