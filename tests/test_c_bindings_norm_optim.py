"""oneflow._C's SyncBatchNorm pieces and multi-tensor optimizer updates (functional_api.yaml v0.9.0) with the yaml's
keyword names, against numpy (the formulas of OneFlow's kernels) and torch's batch norm; two simulated ranks
gathering their statistics; bad input."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.RandomState(21)
X = RNG.randn(4, 3, 5).astype(np.float32)


def test_stats_and_elementwise_forward():
    mean, invstd = _C.batch_norm_stats(input=flow.tensor(X), axis=1, eps=1e-5)
    np.testing.assert_allclose(mean.numpy(), X.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(X.var((0, 2)) + 1e-5), rtol=1e-5)
    w, b = RNG.rand(3).astype(np.float32), RNG.randn(3).astype(np.float32)
    y = _C.batch_norm_elemt(input=flow.tensor(X), weight=flow.tensor(w), bias=flow.tensor(b), mean=mean,
                            invstd=invstd, axis=1, eps=1e-5)
    ch = lambda v: v[None, :, None]  # noqa: E731
    want = (X - ch(X.mean((0, 2)))) / np.sqrt(ch(X.var((0, 2))) + 1e-5) * ch(w) + ch(b)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)


def test_gather_stats_merges_ranks_by_their_counts():
    parts = [X[:1], X[1:]]  # two "ranks" with 1 and 3 samples
    means, invstds, counts = [], [], []
    for p in parts:
        m, s = _C.batch_norm_stats(flow.tensor(p), 1, 1e-5)
        means.append(m.numpy())
        invstds.append(s.numpy())
        counts.append(p.size // 3)
    rm, rv = flow.zeros(3), flow.ones(3)
    mean, invstd = _C.batch_norm_gather_stats_with_counts(
        input=flow.tensor(X), mean=flow.tensor(np.stack(means)), invstd=flow.tensor(np.stack(invstds)),
        running_mean=rm, running_var=rv, momentum=0.1, eps=1e-5, counts=flow.tensor(np.array(counts, np.float32)))
    np.testing.assert_allclose(mean.numpy(), X.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(X.var((0, 2)) + 1e-5), rtol=1e-4)
    n = X.size // 3
    np.testing.assert_allclose(rm.numpy(), 0.1 * X.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * X.var((0, 2)) * n / (n - 1), rtol=1e-4)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_backward_pieces_give_batch_norms_gradients():
    w, b = RNG.rand(3).astype(np.float32) + 0.5, RNG.randn(3).astype(np.float32)
    dy = RNG.randn(*X.shape).astype(np.float32)
    tx = torch.tensor(X, requires_grad=True)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.nn.functional.batch_norm(tx, None, None, tw, tb, training=True, eps=1e-5).backward(torch.tensor(dy))
    mean, invstd = _C.batch_norm_stats(flow.tensor(X), 1, 1e-5)
    sum_dy, sum_dy_xmu, gw, gb = _C.batch_norm_backward_reduce(grad_out=flow.tensor(dy), input=flow.tensor(X),
                                                               mean=mean, invstd=invstd, axis=1)
    np.testing.assert_allclose(gw.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gb.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-5)
    gx = _C.batch_norm_backward_elemt(grad_out=flow.tensor(dy), input=flow.tensor(X), mean=mean, invstd=invstd,
                                      weight=flow.tensor(w), sum_dy=sum_dy, sum_dy_xmu=sum_dy_xmu,
                                      count=flow.tensor(np.array([X.size // 3], np.int32)), axis=1)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_multi_tensor_updates_in_place():
    w0 = [RNG.randn(3).astype(np.float32), RNG.randn(2, 2).astype(np.float32)]
    g0 = [RNG.randn(3).astype(np.float32), RNG.randn(2, 2).astype(np.float32)]
    ws = [flow.tensor(w) for w in w0]
    assert _C.multi_tensor_sgd_update(model=ws, model_diff=[flow.tensor(g) for g in g0], scale=2.0,
                                      weight_decay=0.1, learning_rate_val=0.5) is None
    for w, a, g in zip(ws, w0, g0):
        np.testing.assert_allclose(w.numpy(), a - 0.5 * (2 * g + 0.1 * a), rtol=1e-5)

    ws, bufs = [flow.tensor(w) for w in w0], [flow.ones(3), flow.ones(2, 2)]
    _C.multi_tensor_momentum_update(model=ws, model_diff=[flow.tensor(g) for g in g0], momentum_buf=bufs, scale=1.0,
                                    weight_decay=0.0, learning_rate_val=0.1, momentum=0.9, dampening=0.0,
                                    nesterov=True, maximize=False)
    for w, buf, a, g in zip(ws, bufs, w0, g0):
        nb = 0.9 + g
        np.testing.assert_allclose(buf.numpy(), nb, rtol=1e-5)
        np.testing.assert_allclose(w.numpy(), a - 0.1 * (g + 0.9 * nb), rtol=1e-5)

    ws, ms, vs = [flow.tensor(w) for w in w0], [flow.zeros(3), flow.zeros(2, 2)], [flow.zeros(3), flow.zeros(2, 2)]
    _C.multi_tensor_adam_update(model=ws, model_diff=[flow.tensor(g) for g in g0], m=ms, v=vs,
                                learning_rate_val=0.01, l2=0.0, beta1=0.9, beta2=0.999, bias_correction1_val=0.1,
                                bias_correction2_val=0.001, do_bias_correction=True, scale=1.0, weight_decay=0.01,
                                epsilon=1e-8)
    for w, m, v, a, g in zip(ws, ms, vs, w0, g0):
        mm, vv = 0.1 * g, 0.001 * g * g
        np.testing.assert_allclose(m.numpy(), mm, rtol=1e-5)
        np.testing.assert_allclose(v.numpy(), vv, rtol=1e-5)
        want = a - 0.01 / 0.1 * mm / (np.sqrt(vv) / np.sqrt(0.001) + 1e-8) - 0.01 * 0.01 * a
        np.testing.assert_allclose(w.numpy(), want, rtol=1e-5)

    ws, us = [flow.tensor(w) for w in w0], [flow.tensor(g) for g in g0]
    _C.multi_tensor_yolov5_weight_update(model=ws, model_update=us, d=0.75)
    for w, a, g in zip(ws, w0, g0):
        np.testing.assert_allclose(w.numpy(), 0.75 * a + 0.25 * g, rtol=1e-6)


def test_two_ranks_gather_their_statistics_as_sync_batch_norm():
    def body():
        rank = flow.env.get_rank()
        local = flow.tensor(X[:1] if rank == 0 else X[1:])
        mean, invstd = _C.batch_norm_stats(local, 1, 1e-5)
        count = flow.tensor([float(local.shape[0] * local.shape[2])])
        p = flow.placement("cpu", [0, 1])
        glob = lambda t: t.reshape(1, -1).to_global(placement=p, sbp=flow.sbp.split(0)).to_global(  # noqa: E731
            sbp=flow.sbp.broadcast).to_local()
        gm, gi = _C.batch_norm_gather_stats_with_counts(local, glob(mean), glob(invstd), None, None, 0.1, 1e-5,
                                                        glob(count).reshape(-1))
        return gm.numpy(), gi.numpy()

    for got in on_ranks(2, body):
        np.testing.assert_allclose(got[0], X.mean((0, 2)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], 1 / np.sqrt(X.var((0, 2)) + 1e-5), rtol=1e-4)


def test_bad_input_is_named():
    with pytest.raises(RuntimeError, match=r"^multi_tensor_sgd_update: the tensor lists must be as long, got "
                                           r"model 2, model_diff 1$"):
        _C.multi_tensor_sgd_update([flow.zeros(1)] * 2, [flow.zeros(1)], 1.0, 0.0, 0.1)
    with pytest.raises(TypeError, match=r"^batch_norm_stats\(\): argument 'input' must be Tensor, not list$"):
        _C.batch_norm_stats([1.0], 1, 1e-5)


def test_updates_write_into_parameters_that_require_grad():
    lin = flow.nn.Linear(2, 2)
    w0 = lin.weight.numpy().copy()
    lin(flow.ones(1, 2)).sum().backward()
    _C.multi_tensor_sgd_update([lin.weight], [lin.weight.grad], 1.0, 0.0, 0.5)
    np.testing.assert_allclose(lin.weight.numpy(), w0 - 0.5, rtol=1e-6)
    assert lin.weight.is_leaf and lin.weight.requires_grad
