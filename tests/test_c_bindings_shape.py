"""oneflow._C's shape, indexing, scatter/gather and product names (functional_api.yaml v0.9.0), called with the
yaml's keyword names against numpy; gradients; two simulated ranks; bad input."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

RNG = np.random.RandomState(5)
A = RNG.randn(2, 3, 4).astype(np.float32)
M = RNG.randn(3, 4).astype(np.float32)


def test_permutes_views_and_flattening():
    x = flow.tensor(A)
    np.testing.assert_array_equal(_C.permute(input=x, dims=[2, 0, 1]).numpy(), A.transpose(2, 0, 1))
    np.testing.assert_array_equal(_C.T(input=x).numpy(), A.transpose(2, 1, 0))
    np.testing.assert_array_equal(_C.t(input=flow.tensor(M)).numpy(), M.T)
    np.testing.assert_array_equal(_C.t(flow.tensor(M[0])).numpy(), M[0])
    np.testing.assert_array_equal(_C.flatten(x=x, start_dim=1, end_dim=-1).numpy(), A.reshape(2, 12))
    np.testing.assert_array_equal(_C.view(x=x, shape=[6, 4]).numpy(), A.reshape(6, 4))
    c = flow.tensor(A)
    assert _C.contiguous_(input=c) is c
    np.testing.assert_array_equal(_C.expand(x=flow.tensor(M[:1]), shape=[3, 4]).numpy(), np.repeat(M[:1], 3, 0))
    np.testing.assert_array_equal(_C.repeat(input=flow.tensor(M), repeat_shape=[2, 1]).numpy(), np.tile(M, (2, 1)))
    np.testing.assert_array_equal(_C.tile(input=flow.tensor(M), dims=[1, 2]).numpy(), np.tile(M, (1, 2)))
    assert _C.expand_dims(input=x, dim=1).shape == (2, 1, 3, 4)
    assert _C.unsqueeze(input=x, dim=-1).shape == (2, 3, 4, 1)
    s = flow.tensor(A[:, :1, None, :])
    assert _C.squeeze(x=s).shape == (2, 4)
    assert _C.squeeze(x=s, dim=[1, 2]).shape == (2, 4)
    assert _C.squeeze(x=s, dim=1).shape == (2, 1, 4)


def test_like_forms():
    x, like = flow.tensor(M[0]), flow.tensor(M)
    np.testing.assert_array_equal(_C.broadcast_like(x=x, like=like).numpy(), np.broadcast_to(M[0], (3, 4)))
    col = flow.tensor(M[:, 0])
    np.testing.assert_array_equal(_C.broadcast_like(x=col, like=like, broadcast_axes=[1]).numpy(),
                                  np.broadcast_to(M[:, :1], (3, 4)))
    np.testing.assert_array_equal(_C.reshape_like(input=flow.tensor(A), like=flow.zeros(6, 4)).numpy(),
                                  A.reshape(6, 4))
    np.testing.assert_allclose(_C.reduce_sum_like(input=flow.tensor(A), like=flow.zeros(2, 1, 4), axis=[1]).numpy(),
                               A.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(_C.reduce_sum_like(flow.tensor(A), flow.zeros(3, 4), [0]).numpy(), A.sum(0),
                               rtol=1e-6)
    a, b = _C.split_like(x=flow.tensor(M), like=[flow.zeros(3, 1), flow.zeros(3, 3)], axis=1)
    np.testing.assert_array_equal(a.numpy(), M[:, :1])
    np.testing.assert_array_equal(b.numpy(), M[:, 1:])


def test_gathers_and_scatters():
    x = flow.tensor(M)
    idx = np.array([[2, 0], [1, 1]], np.int64)
    np.testing.assert_array_equal(_C.gather(x=x, indices=flow.tensor(idx), axis=0).numpy(), M[idx])
    di = np.array([[0, 3], [1, 1], [2, 0]], np.int64)
    np.testing.assert_array_equal(_C.dim_gather(input=x, dim=1, index=flow.tensor(di)).numpy(),
                                  np.take_along_axis(M, di, 1))
    np.testing.assert_array_equal(_C.index_select(input=x, dim=1, index=flow.tensor([3, 0])).numpy(), M[:, [3, 0]])
    got = _C.arg_sort(input=x, direction="DESCENDING")
    assert got.dtype == flow.int32
    np.testing.assert_array_equal(got.numpy(), np.argsort(-M, 1))
    nd = np.array([[0, 1], [2, 3]], np.int64)
    np.testing.assert_array_equal(_C.gather_nd(params=x, indices=flow.tensor(nd)).numpy(), M[nd[:, 0], nd[:, 1]])
    upd = np.array([5.0, 6.0], np.float32)
    want = np.zeros((3, 4), np.float32)
    want[0, 1], want[2, 3] = upd
    np.testing.assert_array_equal(_C.scatternd(indices=flow.tensor(nd), updates=flow.tensor(upd), shape=[3, 4])
                                  .numpy(), want)
    np.testing.assert_array_equal(_C.scatterndlike(like=x, updates=flow.tensor(upd), indices=flow.tensor(nd))
                                  .numpy(), want)
    upd_m = M.copy()
    upd_m[0, 1], upd_m[2, 3] = upd
    t = flow.tensor(M)
    np.testing.assert_array_equal(_C.tensor_scatter_nd_update(tensor=t, indices=flow.tensor(nd),
                                                              updates=flow.tensor(upd)).numpy(), upd_m)
    np.testing.assert_array_equal(t.numpy(), M)
    assert _C.tensor_scatter_nd_update(t, flow.tensor(nd), flow.tensor(upd), inplace=True) is t
    np.testing.assert_array_equal(t.numpy(), upd_m)
    si = np.array([[0, 0, 1, 1]], np.int64)
    want = np.zeros((1, 4), np.float32)
    np.add.at(want, (np.zeros(4, int), si[0]), M[0])
    np.testing.assert_array_equal(_C.scatter_add(input=flow.zeros(1, 4), dim=1, index=flow.tensor(si),
                                                 src=flow.tensor(M[:1])).numpy(), want)
    np.testing.assert_array_equal(_C.scatter_add(flow.zeros(1, 4), 1, flow.tensor(si), 2.0).numpy(),
                                  [[4.0, 4.0, 0.0, 0.0]])
    seg = flow.tensor(np.array([1, 0, 1], np.int64))
    np.testing.assert_allclose(_C.unsorted_segment_sum(x=x, segment_ids=seg, axis=0, num_segments=3).numpy(),
                               np.stack([M[1], M[0] + M[2], np.zeros(4, np.float32)]), rtol=1e-6)
    s = flow.tensor(M)
    assert _C.tensor_setitem(x=s, index=(0, slice(1, 3)), value=flow.tensor([9.0, 9.0])) is None
    want = M.copy()
    want[0, 1:3] = 9.0
    np.testing.assert_array_equal(s.numpy(), want)


def test_slices():
    x = flow.tensor(M)
    np.testing.assert_array_equal(_C.narrow(input=x, dim=1, start=1, length=2).numpy(), M[:, 1:3])
    np.testing.assert_array_equal(_C.slice(x=x, start=[0, 1], stop=[3, 4], step=[2, 2]).numpy(), M[0:3:2, 1:4:2])
    np.testing.assert_array_equal(_C.slice_view_1d_contiguous(x=flow.tensor(M[0]), start=1, end=3).numpy(),
                                  M[0, 1:3])
    ref = flow.tensor(M)
    out = _C.slice_update(ref=ref, value=flow.zeros(3, 2), start=[0, 0], stop=[3, 4], step=[1, 2])
    want = M.copy()
    want[:, 0:4:2] = 0
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(ref.numpy(), M)  # a copy unless inplace
    assert _C.slice_update(ref, flow.zeros(3, 2), [0, 0], [3, 4], [1, 2], inplace=True) is ref
    np.testing.assert_array_equal(ref.numpy(), want)


def test_joins_splits_and_selections():
    x = flow.tensor(M)
    np.testing.assert_array_equal(_C.stack(inputs=[x, x], dim=1).numpy(), np.stack([M, M], 1))
    parts = _C.unbind(x=x, dim=1)
    assert isinstance(parts, tuple) and len(parts) == 4
    np.testing.assert_array_equal(parts[2].numpy(), M[:, 2])
    parts = _C.chunk(x=x, chunks=2, dim=1)
    np.testing.assert_array_equal(parts[1].numpy(), M[:, 2:])
    g = _C.meshgrid(tensors=[flow.tensor([1, 2]), flow.tensor([3, 4, 5])], indexing="xy")
    want = np.meshgrid([1, 2], [3, 4, 5], indexing="xy")
    np.testing.assert_array_equal(g[0].numpy(), want[0])
    np.testing.assert_array_equal(g[1].numpy(), want[1])
    assert _C.select_top_n(inputs=[x, x * 2, x * 3], n=2)[1].numpy()[0, 0] == M[0, 0] * 2
    z = np.array([[1.0, 0.0], [0.0, 2.0]], np.float32)
    res, size = _C.argwhere(x=flow.tensor(z), dtype=flow.int64)
    assert res.dtype == flow.int64
    np.testing.assert_array_equal(res.numpy()[:int(size.numpy()[0])], np.argwhere(z))
    (coords,) = _C.nonzero(x=flow.tensor(z), as_tuple=False)
    np.testing.assert_array_equal(coords.numpy(), np.argwhere(z))
    rows, cols = _C.nonzero(flow.tensor(z), as_tuple=True)
    np.testing.assert_array_equal(rows.numpy(), [0, 1])
    u = flow.tensor(np.array([3, 1, 3, 2], np.int64))
    np.testing.assert_array_equal(_C.unique(x=u, sorted=True).numpy(), [1, 2, 3])
    vals, inv, counts = _C.unique(x=u, sorted=True, return_inverse=True, return_counts=True, dtype=flow.int64)
    np.testing.assert_array_equal(inv.numpy(), [2, 0, 2, 1])
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 2])
    np.testing.assert_array_equal(_C.triu(x=x, diagonal=1).numpy(), np.triu(M, 1))
    tt = flow.tensor(M)
    assert _C.triu_(x=tt, diagonal=0) is tt
    np.testing.assert_array_equal(tt.numpy(), np.triu(M))
    np.testing.assert_array_equal(_C.one_hot(input=flow.tensor([0, 2]), num_classes=3, on_value=5, off_value=1)
                                  .numpy(), [[5, 1, 1], [1, 1, 5]])
    f = flow.zeros(2, 2)
    assert _C.fill_(f, 3.5) is f
    np.testing.assert_array_equal(f.numpy(), np.full((2, 2), 3.5))
    _C.fill_(f, flow.tensor(1.5))
    np.testing.assert_array_equal(f.numpy(), np.full((2, 2), 1.5))
    for name in ("identity", "amp_white_identity", "amp_black_identity"):
        np.testing.assert_array_equal(getattr(_C, name)(x).numpy(), M)


def test_products():
    x, y = flow.tensor(M), flow.tensor(M.T.copy())
    np.testing.assert_allclose(_C.mm(input=x, mat2=y).numpy(), M @ M.T, rtol=1e-5)
    a = RNG.randn(2, 3, 4).astype(np.float32)
    b = RNG.randn(2, 5, 4).astype(np.float32)
    np.testing.assert_allclose(_C.batch_matmul(a=flow.tensor(a), b=flow.tensor(b), transpose_a=False,
                                               transpose_b=True, alpha=2.0).numpy(),
                               2 * a @ b.transpose(0, 2, 1), rtol=1e-5)
    c = RNG.randn(2, 3, 5).astype(np.float32)
    np.testing.assert_allclose(_C.baddbmm(input=flow.tensor(c), batch1=flow.tensor(a),
                                          batch2=flow.tensor(b.transpose(0, 2, 1).copy()), beta=0.5, alpha=2.0)
                               .numpy(), 0.5 * c + 2 * a @ b.transpose(0, 2, 1), rtol=1e-5)
    np.testing.assert_allclose(_C.dot(input=flow.tensor(M[0]), other=flow.tensor(M[1])).numpy(), M[0] @ M[1],
                               rtol=1e-5)
    np.testing.assert_allclose(_C.einsum(equation="ij,kj->ik", operands=[x, x]).numpy(), M @ M.T, rtol=1e-5)


def test_gradients_through_shape_bindings():
    x = flow.tensor(M, requires_grad=True)
    y = _C.gather(_C.permute(x, [1, 0]), flow.tensor([0, 0]), axis=0)  # row 0 of x.T twice
    (y.sum() + _C.reduce_sum_like(x, flow.zeros(4), [0]).sum() + _C.narrow(x, 1, 1, 2).sum()).backward()
    want = np.ones_like(M)
    want[:, 0] += 2
    want[:, 1:3] += 1
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_two_ranks_split_inputs_give_one_ranks_numbers():
    def body():
        p = flow.placement("cpu", [0, 1])
        x = flow.tensor(A, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        y = _C.flatten(_C.permute(x, [0, 2, 1]), start_dim=1)
        y.sum().backward()
        vals, _ = _C.max(_C.narrow(x, 2, 1, 2), 2)
        return (y.numpy(), _C.slice(x, [0, 0, 0], [2, 3, 4], [1, 2, 1]).numpy(), vals.numpy(),
                _C.expand(_C.reduce_sum(x, dim=[2], keepdim=True), [2, 3, 4]).numpy(), x.grad.numpy())

    for got in on_ranks(2, body):
        np.testing.assert_array_equal(got[0], A.transpose(0, 2, 1).reshape(2, 12))
        np.testing.assert_array_equal(got[1], A[:, ::2])
        np.testing.assert_array_equal(got[2], A[:, :, 1:3].max(2))
        np.testing.assert_allclose(got[3], np.broadcast_to(A.sum(2, keepdims=True), A.shape), rtol=1e-5)
        np.testing.assert_array_equal(got[4], np.ones_like(A))


def test_bad_input_is_named():
    with pytest.raises(RuntimeError, match=r"^t\(\) expects a tensor with <= 2 dimensions, but self is 3D$"):
        _C.t(flow.tensor(A))
    # OneFlow 0.9's words (core/functional/impl/array_functor.cpp ArgSortFunctor)
    with pytest.raises(RuntimeError, match=r'^expected the input direction parameter value is "ASCENDING" or '
                                           r'"DESCENDING", but found the value is "up"$'):
        _C.arg_sort(flow.tensor(M), "up")
    # OneFlow 0.9's words (core/functional/impl/nn_functor.cpp MatMulNoBroadCastFunctor; modtests' matrix_checks)
    with pytest.raises(RuntimeError, match=r"^self must be a matrix$"):
        _C.mm(flow.tensor(A), flow.tensor(M))
    with pytest.raises(TypeError, match=r"^permute\(\): argument 'input' must be Tensor, not ndarray$"):
        _C.permute(A, [0, 1, 2])


def test_scatter_with_reduce_works_again():
    # `_C.scatter` (an earlier binding) read a deleted module alias; it scatters now
    x = flow.zeros(2, 3)
    got = _C.scatter(x, 1, flow.tensor([[0], [2]]), flow.ones(2, 1), reduce=None)
    np.testing.assert_array_equal(got.numpy(), [[1, 0, 0], [0, 0, 1]])
    got = _C.scatter(flow.ones(2, 3), 1, flow.tensor([[0], [2]]), flow.full((2, 1), 3.0), reduce="multiply")
    np.testing.assert_array_equal(got.numpy(), [[3, 1, 1], [1, 1, 3]])
