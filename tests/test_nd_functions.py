"""OneFlow 0.9's forms of the tensor functions whose names the legacy API binds too (`_global/nd_functions.py`):
gather_nd, scatter_nd, tensor_scatter_nd_update, slice, slice_update, broadcast_like, diag, in_top_k — values
against numpy, gradients, a global tensor, the errors, and the legacy functions of those names still taking blobs.
The ops' SBP signatures on 1-4 simulated devices are `validate`'s and the gradient check's (ops/examples.py)."""
import numpy as np
import pytest

import oneflow_compat as flow


@pytest.fixture(params=["local", "global"])
def lay(request):
    if request.param == "local":
        return lambda a, **kw: flow.tensor(a, **kw)
    p = flow.placement("cpu", [0])
    return lambda a, **kw: flow.tensor(a, placement=p, sbp=flow.sbp.broadcast, **kw)


def test_gather_nd_and_its_gradient(lay):
    a = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    idx = np.array([[1, 2], [3, 0], [1, 2]])
    x = lay(a, requires_grad=True)
    out = flow.gather_nd(x, lay(idx))
    np.testing.assert_array_equal(out.numpy(), a[idx[:, 0], idx[:, 1]])
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    (out * lay(w)).sum().backward()
    expected = np.zeros_like(a)
    np.add.at(expected, (idx[:, 0], idx[:, 1]), w)  # the repeated row gets both weights
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    np.testing.assert_array_equal(flow.gather_nd(x, lay(np.array([[2], [0]]))).numpy(), a[[2, 0]])


def test_scatter_nd_and_tensor_scatter_nd_update(lay):
    out = flow.scatter_nd(lay(np.array([[1], [3], [1]])), lay(np.array([1.0, 2.0, 4.0], np.float32)), [5])
    np.testing.assert_array_equal(out.numpy(), [0, 5, 0, 2, 0])  # repeated rows add up
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    t = lay(a)
    with pytest.raises(RuntimeError, match="The dtype of tensor and updates must be same."):  # OneFlow 0.9
        flow.tensor_scatter_nd_update(t, lay(np.array([[2], [0]])), lay(np.full((2, 3), -1, np.int64)))
    out = flow.tensor_scatter_nd_update(t, lay(np.array([[2], [0]])), lay(np.full((2, 3), -1, np.float32)))
    expected = a.copy()
    expected[[2, 0]] = -1
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out.dtype is flow.float32
    np.testing.assert_array_equal(t.numpy(), a)  # a copy


def test_slice_reads_python_slices_with_oneflows_clamping(lay):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x = lay(a)
    cases = [([[None, None, None], [0, 3, 2], [0, 5, 3]], a[:, 0:3:2, 0:5:3]),
             ([[None, None, -1]], a[::-1]),
             ([[-1, None, -2], [10, -10, -1]], a[-1::-2, 3::-1]),  # start past the end reads the last entry
             ([[2, 1, 1]], a[2:1]),  # crossed: empty
             ([[0, 100, 1], [-100, 2, 1]], a[:, -4:2])]
    for tup, expected in cases:
        np.testing.assert_array_equal(flow.slice(x, slice_tup_list=tup).numpy(), expected)
    with pytest.raises(ValueError, match="^slice step can't be 0$"):
        flow.slice(x, [[0, 1, 0]])
    with pytest.raises(ValueError, match="^slice_tup_list must be a list or tuple with length less than or equal"):
        flow.slice(x, [[None] * 3] * 4)
    with pytest.raises(ValueError, match="^element of slice tuple must int or None$"):
        flow.slice(x, [[0.5, 1, 1]])


def test_slice_update_writes_in_place_and_passes_gradients():
    x = flow.tensor(np.ones(5, np.float32))
    out = flow.slice_update(x, flow.tensor(np.array([2, 3, 4])), slice_tup_list=[[1, 4, 1]])
    assert out is x and x.dtype is flow.float32
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3, 4, 1])  # OneFlow's docstring example

    base = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    upd = flow.tensor(np.array([[10.0, 20.0]], np.float32), requires_grad=True)
    y = base * 2
    flow.slice_update(y, upd, [[1, 2, 1], [0, 3, 2]])
    np.testing.assert_array_equal(y.numpy(), [[0, 2, 4], [10, 8, 20]])
    (y * flow.tensor(np.arange(1, 7, dtype=np.float32).reshape(2, 3))).sum().backward()
    np.testing.assert_array_equal(upd.grad.numpy(), [[4, 6]])
    np.testing.assert_array_equal(base.grad.numpy(), [[2, 4, 6], [0, 10, 0]])  # the overwritten entries get none

    leaf = flow.tensor(np.ones(3, np.float32), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Tensor that requires grad is being used in an in-place"):
        flow.slice_update(leaf, flow.tensor([5.0]), [[0, 1, 1]])


def test_broadcast_like(lay):
    a = np.arange(3, dtype=np.float32).reshape(3, 1)
    like = lay(np.zeros((2, 3, 4), np.float32))
    np.testing.assert_array_equal(flow.broadcast_like(lay(a), like).numpy(), np.broadcast_to(a, (2, 3, 4)))
    # OneFlow's docstring: explicit axes of like that x has as 1 or lacks
    x = lay(np.array([[1], [1], [1]], np.float32))
    out = flow.broadcast_like(x, lay(np.ones((3, 3, 4), np.float32)), broadcast_axes=[1, 2])
    assert tuple(out.shape) == (3, 3, 4) and out.numpy().sum() == 36
    out = flow.broadcast_like(lay(np.arange(4, dtype=np.float32)), like, broadcast_axes=[0, 1])
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(np.arange(4), (2, 3, 4)))
    same = lay(np.ones((2, 3, 4), np.float32))
    assert flow.broadcast_like(same, like) is same
    with pytest.raises(RuntimeError, match=r"^The expanded size of the tensor \(4\) must match the existing size "
                                           r"\(2\) at non-singleton dimension 2. Target sizes: \(2,3,4\). "
                                           r"Tensor sizes: \(3,2\)$"):
        flow.broadcast_like(lay(np.ones((3, 2), np.float32)), like)
    with pytest.raises(RuntimeError, match=r"^The number of sizes provided \(3\) must be greater or equal to the "
                                           r"number of dimensions in the tensor \(4\)"):
        flow.broadcast_like(lay(np.ones((1, 1, 1, 1), np.float32)), like)
    g = flow.tensor(a, requires_grad=True)
    flow.broadcast_like(g, flow.tensor(np.zeros((2, 3, 4), np.float32))).sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), np.full((3, 1), 8))


def test_diag_and_in_top_k(lay):
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    for k in (0, 1, -1):
        np.testing.assert_array_equal(flow.diag(lay(m), k).numpy(), np.diag(m, k))
    v = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(flow.diag(lay(v), diagonal=1).numpy(), np.diag(v, 1))
    with pytest.raises(RuntimeError, match="must be a 1-D or 2-D tensor, got 3 dims"):
        flow.diag(lay(np.zeros((2, 2, 2), np.float32)))

    targets = lay(np.array([3, 1]), dtype=flow.int32)
    predictions = lay(np.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]], np.float32))
    out = flow.in_top_k(targets, predictions, k=1)
    assert out.dtype is flow.bool
    np.testing.assert_array_equal(out.numpy(), [True, False])
    np.testing.assert_array_equal(flow.in_top_k(targets, predictions, k=2).numpy(), [True, True])
    with pytest.raises(TypeError, match="^in_top_k\\(\\): argument 'predictions' must be Tensor, not list$"):
        flow.in_top_k(targets, [[1.0]], 1)


def test_the_legacy_functions_of_those_names_still_take_blobs():
    import oneflow_compat.typing as tp

    @flow.global_function()
    def job(a: tp.Numpy.Placeholder((3, 4)), i: tp.Numpy.Placeholder((2, 1), dtype=flow.int32)) -> tp.Numpy:
        picked = flow.gather_nd(params=a, indices=i)
        diagonal = flow.reshape(flow.slice(flow.diag(a), begin=[0], size=[2]), (2, 1))
        return flow.slice(picked, begin=[None, 1], size=[None, 2]) + diagonal

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(job(a, np.array([[2], [0]], np.int32)),
                                  a[[2, 0]][:, 1:3] + np.diag(a)[:2].reshape(2, 1))


def test_broadcast_like_refuses_axes_that_do_not_fit():
    with pytest.raises(RuntimeError, match=r"^Invalid input parameter: like shape:\(3,3,4\), in shape:\(3,2\), "
                                           r"axis_vec size:2$"):
        flow.broadcast_like(flow.ones(3, 2), flow.ones(3, 3, 4), broadcast_axes=[1, 2])
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        flow.broadcast_like(flow.ones(3, 1, 1), flow.ones(3, 3, 4), broadcast_axes=[1, 3])
