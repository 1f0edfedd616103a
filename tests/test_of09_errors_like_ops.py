"""OneFlow 0.9's error types and exact words for `flow._C`'s shape functionals: arg_sort, broadcast_like,
reshape_like, reduce_sum_like, split_like (the C++ checks of OneFlow v0.9.0, cited per test), and what the
forms do where the input is good."""
import re

import numpy as np
import pytest

import oneflow as flow

A = np.arange(24, dtype=np.float32).reshape(4, 3, 2)


def _words(text):
    return "^" + re.escape(text) + "$"


def test_arg_sort_direction():
    # core/functional/impl/array_functor.cpp ArgSortFunctor
    x = flow.tensor([5, 10, 7, 8, 9, 1])
    with pytest.raises(RuntimeError, match=_words('expected the input direction parameter value is "ASCENDING" or '
                                                  '"DESCENDING", but found the value is "NONE"')):
        flow._C.arg_sort(x, direction="NONE")
    np.testing.assert_array_equal(flow._C.arg_sort(x, "ASCENDING").numpy(), [5, 0, 2, 3, 4, 1])
    np.testing.assert_array_equal(flow._C.arg_sort(x, "DESCENDING").numpy(), [1, 4, 3, 2, 0, 5])


def test_broadcast_like_checks():
    # core/functional/impl/array_functor.cpp BroadcastLikeFunctor (Shape::ToString: "(2,2)")
    with pytest.raises(RuntimeError, match=_words("The number of sizes provided (2) must be greater or equal to the "
                                                  "number of dimensions in the tensor (3). Target sizes: (2,2). "
                                                  "Tensor sizes: (2,2,2)")):
        flow._C.broadcast_like(flow.ones(2, 2, 2), flow.ones(2, 2))
    with pytest.raises(RuntimeError, match=_words("The expanded size of the tensor (2) must match the existing size "
                                                  "(3) at non-singleton dimension 1. Target sizes: (2,2). Tensor "
                                                  "sizes: (3,)")):
        flow._C.broadcast_like(flow.ones(3), flow.ones(2, 2))
    row = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(flow._C.broadcast_like(flow.tensor(row), flow.ones(2, 3)).numpy(),
                                  np.broadcast_to(row, (2, 3)))


def test_reshape_like_element_number():
    # user/ops/reshape_like_op.cpp ReshapeLikeOp::InferLogicalTensorDesc
    with pytest.raises(RuntimeError, match=_words("The element number of the in tensor must be equal to the element "
                                                  "number of the like tensor, but got 2 and 6")):
        flow._C.reshape_like(flow.tensor([1, 1]), flow.tensor([[1, 1, 1], [1, 1, 1]]))
    np.testing.assert_array_equal(flow._C.reshape_like(flow.tensor(A), flow.zeros(6, 4)).numpy(), A.reshape(6, 4))


def test_reduce_sum_like_empty_axis():
    # user/ops/reduce_like_ops.cpp ReduceSumLikeOp::InferLogicalTensorDesc
    with pytest.raises(RuntimeError, match=_words("The shape of the x tensor must be consistent to the shape of the "
                                                  "like tensor when the input axis list is empty")):
        flow._C.reduce_sum_like(flow.tensor([1, 1]), flow.tensor([1, 1, 1]), [])
    same = flow._C.reduce_sum_like(flow.tensor(A), flow.zeros(4, 3, 2), [])
    np.testing.assert_array_equal(same.numpy(), A)
    np.testing.assert_allclose(flow._C.reduce_sum_like(flow.tensor(A), flow.zeros(4, 1, 2), [1]).numpy(),
                               A.sum(1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("like_shapes, axis, words", [
    # user/ops/split_like_op.cpp SplitLikeOp::InferLogicalTensorDesc, in its order
    ([(2, 4, 4), (2, 4, 4)], 0, "The dimension of like (3) should be less than or equal to input (2)"),
    ([(2, 4), (2, 4)], 3, "The axis (3) should be less than the dimension of like (2)"),
    ([(2, 4), (2,)], 0, "The dimension of like_i (1) must match the dimension of the first like (2)"),
    ([(2, 4), (2, 3)], 0, "The size of input (4) must match the size of like_i (3) at dimension 1"),
    ([(2, 4), (3, 4)], 0, "In non-dynamic shape situation, the total size of like (5) should be equal to the size "
                          "of input (4) at dimension 0"),
    # core/functional/impl/array_functor.cpp SplitLikeFunctor
    ([(4, 4)], 0, "like.size() must not less than 2, but got 1"),
])
def test_split_like_checks(like_shapes, axis, words):
    with pytest.raises(RuntimeError, match=_words(words)):
        flow._C.split_like(flow.randn(4, 4), tuple(flow.randn(*s) for s in like_shapes), axis)


def test_split_like_pieces():
    x = flow.tensor(A)
    a, b = flow._C.split_like(x, [flow.zeros(1, 3, 2), flow.zeros(3, 3, 2)], 0)
    np.testing.assert_array_equal(a.numpy(), A[:1])
    np.testing.assert_array_equal(b.numpy(), A[1:])
    # like with fewer axes than x: each piece is like's shape followed by x's trailing sizes (as OneFlow's op)
    a, b = flow._C.split_like(x, [flow.zeros(3, 3), flow.zeros(1, 3)], 0)
    assert a.shape == (3, 3, 2) and b.shape == (1, 3, 2)
    np.testing.assert_array_equal(b.numpy(), A[3:])
