"""OneFlow 0.9's checks, error types and exact words for `flow._C.slice` / `flow._C.slice_update`: the op's
attributes are taken as the op takes them, normalized (user/ops/slice_op.cpp, v0.9.0), with what the forms do
where the input is good."""
import re

import numpy as np
import pytest

import oneflow as flow

M = np.arange(12, dtype=np.float32).reshape(3, 4)


def _words(text):
    return "^" + re.escape(text) + "$"


@pytest.mark.parametrize("start, stop, step, words", [
    ([-1], [1], [1], "The start list elements must be greater than or equal to 0, but got -1 at index 0"),
    ([1], [-1], [1], "The stop list elements must be greater than or equal to 0, but got -1 at index 0"),
    ([1], [1], [-1], "The step list elements must be greater than 0, but got -1 at index 0"),
    ([2], [1], [1], "The element in start list must be less than or equal to the element in stop list at index 0, "
                    "but got 2 and 1"),
    ([0, 0], [1, 1], [1, 1], "start_vec's dim not equal to ref shape's dim: 2 vs 1"),
])
def test_slice_attribute_checks(start, stop, step, words):
    with pytest.raises(RuntimeError, match=_words(words)):
        flow._C.slice(flow.tensor([1]), start, stop, step)


@pytest.mark.parametrize("ref, value, start, stop, step, words", [
    ([[1], [2]], [[1], [2]], [-1], [1], [1],
     "The start list elements must be greater than or equal to 0, but got -1 at index 0"),
    ([[1], [2]], [[1], [2]], [1], [-1], [1],
     "The stop list elements must be greater than or equal to 0, but got -1 at index 0"),
    ([[1], [2]], [[1], [2]], [1], [1], [0], "The step list elements must be greater than 0, but got 0 at index 0"),
    ([[1], [2]], [[1], [2]], [2], [1], [1],
     "The element in start list must be less than or equal to the element in stop list at index 0, but got 2 and 1"),
    ([1, 2], [1, 2], [1, 2, 3], [1, 2, 3], [1, 2, 3],
     "The size of slice tuple must be equal to the size of value tensor at dimension 0, but got 0 and 2"),
    ([[1, 2], [3, 4]], [[1, 2]], [0], [1], [1], "The size of start list must be equal to the dimension of ref "
                                                "tensor, but got 1 and 2"),
])
def test_slice_update_attribute_checks(ref, value, start, stop, step, words):
    with pytest.raises(RuntimeError, match=_words(words)):
        flow._C.slice_update(flow.tensor(ref), flow.tensor(value), start, stop, step)


def test_slices_of_good_attributes():
    x = flow.tensor(M)
    np.testing.assert_array_equal(flow._C.slice(x, [0, 1], [3, 4], [2, 2]).numpy(), M[0:3:2, 1:4:2])
    np.testing.assert_array_equal(flow._C.slice(x, [1, 0], [1, 4], [1, 1]).numpy(), M[1:1, :])  # empty
    ref = flow.tensor(M)
    out = flow._C.slice_update(ref, flow.zeros(3, 2), [0, 0], [3, 4], [1, 2])
    want = M.copy()
    want[:, 0:4:2] = 0
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(ref.numpy(), M)  # not in place
    # a value of another dtype is cast to ref's (SliceUpdateFunctor's TensorProcessor): no error
    ints = flow.tensor([1, 2, 3], dtype=flow.int64)
    got = flow._C.slice_update(ints, flow.tensor([7.9], dtype=flow.float32), [1], [2], [1], inplace=True)
    assert got is ints and got.dtype == flow.int64
    np.testing.assert_array_equal(ints.numpy(), [1, 7, 3])
