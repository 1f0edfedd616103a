"""`x[:]`, `x[...]`, `x[:, :]`, `x[0:n]`: OneFlow 0.9's TensorGetItem returns x itself when every slice takes a whole
dim in order and no dim is added or removed (is_identity, core/functional/impl/array_functor.cpp
TensorGetItemFunctor @ v0.9.0; the Python object is the same: PyTensor_wrap returns the tensor's own object,
api/python/framework/tensor.cpp). Any other key is a view (or a gather) as before."""
import numpy as np
import pytest

import oneflow_compat as flow
from simulated_ranks import on_ranks


@pytest.mark.parametrize("key", [slice(None), Ellipsis, (slice(None), slice(None)), slice(0, 2), slice(-7, 99),
                                 (Ellipsis, slice(None)), (slice(None), Ellipsis), (slice(None), slice(0, 3, 1))],
                         ids=["all", "ellipsis", "two", "range", "clamped", "ellipsis_first", "ellipsis_last",
                              "step1"])
def test_whole_slices_return_the_tensor_itself(key):
    x = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    y = x[key]
    assert y is x and y.is_leaf


@pytest.mark.parametrize("key", [slice(1), (slice(None), slice(1, None)), 0, None, (None, Ellipsis),
                                 (slice(None), slice(None, None, 2))],
                         ids=["shorter", "later", "int", "new_axis", "new_axis_first", "step2"])
def test_other_keys_are_new_tensors(key):
    x = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = x[key]
    assert y is not x
    np.testing.assert_array_equal(y.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3)[key])


def test_a_0d_tensor_is_never_its_own_item():
    s = flow.tensor(3.0)
    assert s[...] is not s and s[...].item() == 3.0


def test_writing_through_x_colon_writes_x_and_gradients_flow():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x[:] * x[...]).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    z = flow.zeros(3)
    z[:].add_(1)  # the same tensor: written
    np.testing.assert_array_equal(z.numpy(), [1.0, 1.0, 1.0])


def test_global_tensors_on_two_ranks():
    def body():
        x = flow.ones(4, 2, placement=flow.placement("cpu", [0, 1]), sbp=flow.sbp.split(0))
        return x[:] is x, x[:, :] is x, x[1:] is x

    for got in on_ranks(2, body):
        assert got == (True, True, False)
