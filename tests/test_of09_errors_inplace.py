"""OneFlow 0.9's checks of in-place binary ops (`add_`, `sub_`, `mul_`, `div_`, `+=`, ...): the tensor written
may not be a leaf requiring grad, and the other operand must broadcast to its shape, which the op keeps
(core/functional/impl/binary_functor.cpp, common.cpp CheckInplaceValid / CheckInplaceShapeCanExpandTo, v0.9.0):
error types, exact words, order; and what the ops do where the input is good."""
import re

import numpy as np
import pytest

import oneflow as flow


def _words(text):
    return "^" + re.escape(text) + "$"


@pytest.mark.parametrize("method", ["add_", "sub_", "mul_", "div_", "__iadd__", "__isub__", "__imul__",
                                    "__itruediv__"])
def test_other_must_broadcast_to_the_tensor(method):
    with pytest.raises(RuntimeError, match=_words("Tensor with shape (2,3) doesn't match the broadcast shape in an "
                                                  "inplace operation")):
        getattr(flow.ones(2, 3), method)(flow.ones(2, 4))
    x = flow.ones(3, 3)
    with pytest.raises(RuntimeError, match=_words("Can not expand origin shape (2,3,3) to (3,3) in an inplace "
                                                  "operation")):
        getattr(x, method)(flow.ones(2, 3, 3))
    assert x.shape == (3, 3)  # (the op never widened the tensor)
    np.testing.assert_array_equal(x.numpy(), np.ones((3, 3)))


def test_leaf_check_comes_first():
    x = flow.ones(4, 4, requires_grad=True)
    for method in ("add_", "mul_", "div_"):
        with pytest.raises(RuntimeError, match=_words("a leaf Tensor that requires grad is being used in an "
                                                      "in-place operation")):
            getattr(x, method)(flow.ones(2, 4))  # (its shape does not fit either: OneFlow reports the leaf)
    with flow.no_grad():
        x.add_(flow.ones(4))
    np.testing.assert_array_equal(x.numpy(), np.full((4, 4), 2.0))


def test_broadcasting_operands_that_fit():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = flow.tensor(a)
    x.add_(flow.tensor([1.0, 2.0, 3.0]))
    x.mul_(flow.tensor([[2.0], [3.0]]))
    x -= flow.tensor(1.0)
    x /= flow.tensor([[2.0, 2.0, 2.0]])
    want = ((a + [1.0, 2.0, 3.0]) * [[2.0], [3.0]] - 1.0) / 2.0
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    assert x.shape == (2, 3)


def test_inplace_on_a_non_leaf_records_its_gradient():
    w = flow.tensor([1.0, 2.0], requires_grad=True)
    y = w * 1.0
    y.mul_(flow.tensor([3.0, 4.0]))
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 4.0])


@pytest.mark.parametrize("x_dtype, method, y_dtype, y_shape, words", [
    # InplaceDivFunctor divides integers as float32; InplaceMulFunctor computes in the common dtype
    (flow.int64, "div_", flow.int64, (2,), "result type oneflow.float32 can't be cast to the desired output type "
                                           "oneflow.int64"),
    (flow.int32, "__itruediv__", flow.float32, (2,), "result type oneflow.float32 can't be cast to the desired "
                                                     "output type oneflow.int32"),
    (flow.int64, "mul_", flow.float32, (2,), "result type oneflow.float32 can't be cast to the desired output type "
                                             "oneflow.int64"),
    (flow.float32, "__imul__", flow.float64, (2,), "result type oneflow.float64 can't be cast to the desired output "
                                                   "type oneflow.float32"),
])
def test_the_computed_dtype_must_be_the_tensors(x_dtype, method, y_dtype, y_shape, words):
    x = flow.ones(2, dtype=x_dtype)
    with pytest.raises(RuntimeError, match=_words(words)):
        getattr(x, method)(flow.ones(*y_shape, dtype=y_dtype))
    assert x.dtype == x_dtype


def test_dtypes_that_stay_the_tensors():
    x = flow.tensor([2.0, 4.0])
    x.mul_(flow.tensor(3.0, dtype=flow.float64))  # a 0-d tensor takes the other's dtype (ComputeCommonDType)
    x.div_(flow.tensor([2, 4], dtype=flow.int64))  # float / int: float32
    assert x.dtype == flow.float32
    np.testing.assert_array_equal(x.numpy(), [3.0, 3.0])
    n = flow.tensor([2, 3], dtype=flow.int32)
    n.mul_(flow.tensor([4, 5], dtype=flow.int32))
    n.add_(flow.tensor([1.0, 1.0]))  # add_ casts the other operand to the tensor's dtype: no error
    assert n.dtype == flow.int32
    np.testing.assert_array_equal(n.numpy(), [9, 16])


def test_add_and_sub_cast_the_other_operand_first():
    # AddFunctor / SubFunctor in place: other (times alpha) is cast to the tensor's dtype, then added
    x = flow.tensor([-1, 1], dtype=flow.int64)
    x.add_(flow.tensor([0.5, 1.7]))
    np.testing.assert_array_equal(x.numpy(), [-1, 2])  # not trunc(-0.5) = 0 and trunc(2.7) = 2
    x.sub_(flow.tensor([0.5, 1.7]), alpha=2)  # 2 * other = [1.0, 3.4] -> [1, 3]
    np.testing.assert_array_equal(x.numpy(), [-2, -1])
    assert x.dtype == flow.int64
