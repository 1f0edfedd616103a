"""Index keys read as OneFlow 0.9 reads them (api/python/functional/common.cpp PyUnpackTensorIndex,
api/python/functional/indexing.cpp PySliceUnpack / UnpackIndexItem, core/functional/tensor_index.cpp
PrepareSliceIndices, user/ops/nd_index_slice_ops.cpp, core/functional/impl/array_functor.cpp TensorSetItemFunctor,
v0.9.0), found by OneFlow 0.9's own test/tensor/test_tensor_indexing*.py. Expected values are numpy's, written here."""
import re

import numpy as np
import pytest

import oneflow as flow


def _words(text):
    return "^" + re.escape(text) + "$"


def _x(shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("shape", [(3, 4, 5), (3, 4, 5, 6)])
def test_a_list_holding_sequences_is_a_tuple_of_indices(shape):
    nx = _x(shape)
    x = flow.tensor(nx)
    # numpy < 1.23's rule, kept by OneFlow 0.9: x[[[0, 1], [1, 0]]] is x[[0, 1], [1, 0]]
    np.testing.assert_array_equal(x[[[0, 1], [0, 1], [1, 0]]].numpy(), nx[[0, 1], [0, 1], [1, 0]])
    np.testing.assert_array_equal(x[[[0], [1]]].numpy(), nx[[0], [1]])
    np.testing.assert_array_equal(x[[[[0], [1]], [[0], [1]], [0, 1]]].numpy(), nx[[[0], [1]], [[0], [1]], [0, 1]])
    np.testing.assert_array_equal(x[[slice(0, 2), None]].numpy(), nx[0:2, None])
    # a flat list of ints stays one index
    np.testing.assert_array_equal(x[[0, 2]].numpy(), nx[[0, 2]])
    # a tuple inside the key is a sequence index, as a list
    np.testing.assert_array_equal(x[(0, 2), ].numpy(), nx[[0, 2]])
    # and assignment reads keys the same way
    y = flow.tensor(nx)
    y[[[0, 1], [1, 0]]] = -1.0
    ny = nx.copy()
    ny[[0, 1], [1, 0]] = -1.0
    np.testing.assert_array_equal(y.numpy(), ny)


def test_python_bools_add_one_axis_where_the_first_stands():
    nx = _x((3, 4, 5))
    x = flow.tensor(nx)
    assert tuple(x[False, True, ...].shape) == (0, 3, 4, 5)
    assert tuple(x[True, ..., False, True].shape) == (0, 3, 4, 5)
    assert tuple(x[True, None, ..., False, True].shape) == (0, 1, 3, 4, 5)
    assert tuple(x[True, 1, ..., False, True].shape) == (0, 4, 5)
    np.testing.assert_array_equal(x[0:2, None, ..., True].numpy(), nx[0:2, None, ..., True])
    np.testing.assert_array_equal(x[True, ..., True].numpy(), nx[None])  # all True: one axis of size 1
    # a 0-d bool / uint8 tensor is a Python bool
    assert tuple(x[flow.tensor(False)].shape) == (0, 3, 4, 5)
    assert tuple(x[flow.tensor(1, dtype=flow.uint8)].shape) == (1, 3, 4, 5)
    # a bool names no dim of a 0-d tensor
    a = flow.tensor(1.0)
    a[True, ...] = 0.0
    assert a.numpy() == 0.0
    a[False, ...] = 5.0
    assert a.numpy() == 0.0


def test_uint8_and_int8_index_tensors_are_masks():
    v = flow.tensor([3.0, 4.0, 5.0])
    np.testing.assert_array_equal(v[flow.tensor([1, 0, 1], dtype=flow.uint8)].numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(v[flow.tensor([0, 2, 0], dtype=flow.int8)].numpy(), [4.0])
    np.testing.assert_array_equal(v[flow.tensor([2, 0], dtype=flow.int32)].numpy(), [5.0, 3.0])


def test_empty_list_indices_and_size_0_dims():
    x = flow.tensor(np.zeros((8, 0), np.float32))
    assert tuple(x[[1, 2]].shape) == (2, 0)
    assert tuple(x[[], []].shape) == (0,)
    assert tuple(x[[[]]].shape) == (0, 0)
    assert tuple(x[[[[]]]].shape) == (1, 0, 0)
    with pytest.raises(IndexError, match=_words("The index is out of bounds for dimension with size 0")):
        x[:, [0, 1]]
    with pytest.raises(IndexError, match=_words("index 9 is out of bounds for dimension 0 with size 8")):
        x[[9]]


def test_slice_and_index_words():
    x = flow.tensor(_x((8, 8)))
    with pytest.raises(RuntimeError, match=_words("slice step cannot be zero.")):
        x[1:9:0]
    with pytest.raises(RuntimeError, match=_words("Step must be greater than zero.")):
        x[1:9:-1]
    with pytest.raises(RuntimeError, match=_words("Invalid slice slice(0.0, 2.0, None)")):
        x[0.0:2.0]
    with pytest.raises(IndexError, match=_words("Invalid index float")):
        x[0.0]
    with pytest.raises(IndexError, match=_words("Too many indices for tensor of dimension 2")):
        x[1, 1, 1:1]


def test_a_one_element_value_fills_a_single_element():
    nx = np.random.RandomState(0).rand(2, 3)
    x = flow.tensor(nx)
    x[0, 0] = flow.ones(1).to(flow.float64)
    x[1, 2] = flow.tensor([[7.0]], dtype=flow.float64)
    nx[0, 0], nx[1, 2] = 1.0, 7.0
    np.testing.assert_array_equal(x.numpy(), nx)


def test_an_empty_view_is_contiguous():
    y = flow.randn(2, 3, 4, 5)[:, :, :, 1]
    z = y[:, 1:1, :]
    assert tuple(z.shape) == (2, 0, 4)
    assert z.stride() == (60, 20, 5)  # numpy's strides for the slice, as OneFlow
    assert z.is_contiguous()  # any size-0 dim: contiguous (core/common/tensor_meta.cpp IsContiguous)
    assert not y.is_contiguous()


def test_global_results_show_one_sbp_per_placement_dimension():
    p = flow.placement("cpu", ranks=[[0]])
    nx = _x((8, 8))
    x = flow.tensor(nx).to_global(p, [flow.sbp.broadcast, flow.sbp.broadcast])
    z = x.permute(1, 0).reshape(64)
    assert len(z.sbp) == 2
    got = x[[0, 1, 2], [0]]  # the index tensor is made on x's 2-d placement
    assert len(got.sbp) == 2
    np.testing.assert_array_equal(got.numpy(), nx[[0, 1, 2], [0]])
