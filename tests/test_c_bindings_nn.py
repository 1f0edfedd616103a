"""oneflow._C's neural-network names (functional_api.yaml v0.9.0) with the yaml's keyword names: convolutions,
pooling, upsampling, losses, normalizations, activations, against torch (skipping without it) or numpy;
gradients; two simulated ranks; bad input."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import _C
from simulated_ranks import on_ranks

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
RNG = np.random.RandomState(3)


def _t(a):
    return torch.tensor(a)


@needs_torch
def test_convolutions_both_layouts():
    x1, w1 = RNG.randn(2, 4, 9).astype(np.float32), RNG.randn(6, 2, 3).astype(np.float32)
    b = RNG.randn(6).astype(np.float32)
    want = TF.conv1d(_t(x1), _t(w1), _t(b), stride=2, padding=1, groups=2).numpy()
    got = _C.conv1d(input=flow.tensor(x1), weight=flow.tensor(w1), bias=flow.tensor(b), stride=[2], padding=[1],
                    dilation=[1], groups=2, channel_pos="channels_first")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    got = _C.conv1d(flow.tensor(x1.transpose(0, 2, 1).copy()), flow.tensor(w1.transpose(0, 2, 1).copy()),
                    flow.tensor(b), 2, 1, 1, 2, "channels_last")
    np.testing.assert_allclose(got.numpy(), want.transpose(0, 2, 1), rtol=1e-4, atol=1e-5)
    x3, w3 = RNG.randn(1, 2, 4, 5, 5).astype(np.float32), RNG.randn(3, 2, 2, 3, 3).astype(np.float32)
    np.testing.assert_allclose(_C.conv3d(input=flow.tensor(x3), weight=flow.tensor(w3), padding=1).numpy(),
                               TF.conv3d(_t(x3), _t(w3), padding=1).numpy(), rtol=1e-4, atol=1e-4)
    for nd, fn in ((1, TF.conv_transpose1d), (2, TF.conv_transpose2d), (3, TF.conv_transpose3d)):
        x = RNG.randn(*(1, 4) + (4,) * nd).astype(np.float32)
        w = RNG.randn(*(4, 3) + (3,) * nd).astype(np.float32)
        got = getattr(_C, "deconv%dd" % nd)(input=flow.tensor(x), weight=flow.tensor(w), bias=None, stride=2,
                                             padding=1, output_padding=1, groups=1, dilation=1,
                                             data_format="channels_first")
        np.testing.assert_allclose(got.numpy(), fn(_t(x), _t(w), stride=2, padding=1, output_padding=1).numpy(),
                                   rtol=1e-4, atol=1e-4)


@needs_torch
def test_pools_return_what_the_functors_do():
    x = RNG.randn(2, 3, 8, 8).astype(np.float32)
    y, idx = _C.max_pool2d(input=flow.tensor(x), kernel_size=[3, 3], stride=[2, 2], padding=[1, 1],
                           dilation=[1, 1], return_indices=True, ceil_mode=False, data_format="channels_first")
    ty, tidx = TF.max_pool2d(_t(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    y, _ = _C.max_pool2d(flow.tensor(x.transpose(0, 2, 3, 1).copy()), 3, 2, 1, data_format="channels_last")
    np.testing.assert_array_equal(y.numpy(), ty.numpy().transpose(0, 2, 3, 1))
    only = _C.max_pool2d(flow.tensor(x.transpose(0, 2, 3, 1).copy()), 3, 2, 1, return_indices=False,
                         data_format="channels_last")
    assert len(only) == 1  # OneFlow's channels-last path without indices returns y alone
    np.testing.assert_array_equal(only[0].numpy(), ty.numpy().transpose(0, 2, 3, 1))
    y, _ = _C.max_pool1d(input=flow.tensor(x[:, :, 0]), kernel_size=[2])
    np.testing.assert_array_equal(y.numpy(), TF.max_pool1d(_t(x[:, :, 0]), 2).numpy())
    x5 = RNG.randn(1, 2, 4, 4, 4).astype(np.float32)
    y, _ = _C.max_pool3d(input=flow.tensor(x5), kernel_size=[2, 2, 2], stride=None)
    np.testing.assert_array_equal(y.numpy(), TF.max_pool3d(_t(x5), 2).numpy())
    got = _C.avg_pool2d(input=flow.tensor(x), kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], ceil_mode=True,
                        count_include_pad=False, divisor_override=0, data_format="channels_first")
    want = TF.avg_pool2d(_t(x), 3, 2, 1, ceil_mode=True, count_include_pad=False)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    got = _C.avg_pool1d(flow.tensor(x[:, :, 0]), [2], divisor_override=3)
    np.testing.assert_allclose(got.numpy(), TF.avg_pool1d(_t(x[:, :, 0]), 2).numpy() * 2 / 3, rtol=1e-5)
    np.testing.assert_allclose(_C.avg_pool3d(flow.tensor(x5), [2, 2, 2]).numpy(),
                               TF.avg_pool3d(_t(x5), 2).numpy(), rtol=1e-5)
    for nd, shape, out in ((1, (1, 2, 7), [3]), (2, (1, 2, 7, 5), [3, 2]), (3, (1, 2, 5, 4, 3), [2, 2, 2])):
        a = RNG.randn(*shape).astype(np.float32)
        got = getattr(_C, "adaptive_avg_pool%dd" % nd)(x=flow.tensor(a), output_size=out)
        want = getattr(TF, "adaptive_avg_pool%dd" % nd)(_t(a), out)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_avg_pool2d_nhwc_same_padding_leaves_the_pads_out():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    got = _C.avg_pool2d_nhwc(x=flow.tensor(x), kernel_size=[2, 2], stride=[2, 2], padding="VALID",
                             padding_before=[0, 0], padding_after=[0, 0], data_format="channels_last")
    np.testing.assert_array_equal(got.numpy()[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])
    got = _C.avg_pool2d_nhwc(flow.tensor(x.transpose(0, 3, 1, 2).copy()), [3, 3], [2, 2], "customized", [1, 1],
                             [0, 0])
    # window at (0, 0) covers rows/cols -1..1: the valid elements 0, 1, 4, 5
    assert float(got.numpy()[0, 0, 0, 0]) == pytest.approx(2.5)


@needs_torch
def test_upsampling_forms():
    x = RNG.randn(1, 2, 3, 4).astype(np.float32)
    got = _C.upsample_nearest_2d(x=flow.tensor(x), height_scale=2.0, width_scale=2.0, output_size=None,
                                 data_format="channels_first")
    np.testing.assert_array_equal(got.numpy(), TF.interpolate(_t(x), scale_factor=2, mode="nearest").numpy())
    got = _C.upsample_bilinear_2d(x=flow.tensor(x), align_corners=True, output_size=[5, 7])
    want = TF.interpolate(_t(x), size=(5, 7), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    got = _C.upsample(x=flow.tensor(x), height_scale=2.0, width_scale=3.0, align_corners=False,
                      interpolation="bilinear", data_format="channels_first")
    want = TF.interpolate(_t(x), scale_factor=(2, 3), mode="bilinear", align_corners=False)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    x1 = x[:, :, 0]
    got = _C.upsample_linear_1d(x=flow.tensor(x1), scale_factor=2.0, align_corners=False)
    np.testing.assert_allclose(got.numpy(), TF.interpolate(_t(x1), scale_factor=2, mode="linear").numpy(),
                               rtol=1e-5, atol=1e-6)
    got = _C.upsample_nearest_1d(x=flow.tensor(x1), output_size=[9])
    np.testing.assert_array_equal(got.numpy(), TF.interpolate(_t(x1), size=9, mode="nearest").numpy())
    x3 = RNG.randn(1, 1, 2, 3, 2).astype(np.float32)
    got = _C.upsample_nearest_3d(x=flow.tensor(x3), depth_scale=2.0, height_scale=1.0, width_scale=2.0)
    want = TF.interpolate(_t(x3), scale_factor=(2, 1, 2), mode="nearest")
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = _C.upsample_trilinear_3d(x=flow.tensor(x3), align_corners=True, output_size=[3, 4, 3])
    want = TF.interpolate(_t(x3), size=(3, 4, 3), mode="trilinear", align_corners=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")  # torch's kl_div note
def test_losses():
    p = RNG.rand(4, 3).astype(np.float32) * 0.8 + 0.1
    t = RNG.rand(4, 3).astype(np.float32)
    np.testing.assert_allclose(_C.mse_loss(input=flow.tensor(p), target=flow.tensor(t), reduction="sum").numpy(),
                               TF.mse_loss(_t(p), _t(t), reduction="sum").numpy(), rtol=1e-5)
    lp = np.log(p)
    np.testing.assert_allclose(_C.kl_div_loss(input=flow.tensor(lp), target=flow.tensor(t), log_target=False,
                                              reduction="mean").numpy(),
                               TF.kl_div(_t(lp), _t(t), reduction="mean").numpy(), rtol=1e-5)
    lab = np.array([0, 2, 1, 2], np.int64)
    np.testing.assert_allclose(_C.nll_loss(input=flow.tensor(lp), target=flow.tensor(lab), weight=None,
                                           ignore_index=1, reduction="mean").numpy(),
                               TF.nll_loss(_t(lp), _t(lab), ignore_index=1).numpy(), rtol=1e-5)
    w = RNG.rand(4, 3).astype(np.float32)
    np.testing.assert_allclose(_C.binary_cross_entropy_loss(input=flow.tensor(p), target=flow.tensor(t),
                                                            weight=flow.tensor(w), reduction="none").numpy(),
                               TF.binary_cross_entropy(_t(p), _t(t), _t(w), reduction="none").numpy(), rtol=1e-5)
    x = RNG.randn(4, 3).astype(np.float32)
    pw = RNG.rand(3).astype(np.float32) + 0.5
    tx = _t(x).requires_grad_()
    TF.binary_cross_entropy_with_logits(tx, _t(t), _t(w), pos_weight=_t(pw), reduction="none").backward(_t(p))
    got = _C.binary_cross_entropy_with_logits_loss_grad(dy=flow.tensor(p), input=flow.tensor(x),
                                                        target=flow.tensor(t), weight=flow.tensor(w),
                                                        pos_weight=flow.tensor(pw))
    np.testing.assert_allclose(got.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    probs = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    want = -np.log(probs[np.arange(4), lab])
    for name in ("sparse_cross_entropy", "distributed_sparse_cross_entropy"):
        got = getattr(_C, name)(prediction=flow.tensor(probs), label=flow.tensor(lab.astype(np.int32)), depth=3)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    onehot = np.eye(3, dtype=np.float32)[lab]
    np.testing.assert_allclose(_C.softmax_cross_entropy(logits=flow.tensor(x), label=flow.tensor(onehot)).numpy(),
                               want, rtol=1e-5)
    dy = RNG.rand(4).astype(np.float32)
    got = _C.softmax_cross_entropy_grad(dy=flow.tensor(dy), label=flow.tensor(onehot), prob=flow.tensor(probs))
    np.testing.assert_allclose(got.numpy(), dy[:, None] * (probs - onehot), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_C.smooth_l1_loss(logits=flow.tensor(x), label=flow.tensor(t), beta=0.5,
                                                 reduction="mean").numpy(),
                               TF.smooth_l1_loss(_t(x), _t(t), beta=0.5).numpy(), rtol=1e-5)
    a, b, c = (RNG.randn(4, 5).astype(np.float32) for _ in range(3))
    np.testing.assert_allclose(_C.triplet_margin_loss(anchor=flow.tensor(a), positive=flow.tensor(b),
                                                      negative=flow.tensor(c), margin=1.0, p=2.0, eps=1e-6,
                                                      swap=True, reduction="sum").numpy(),
                               TF.triplet_margin_loss(_t(a), _t(b), _t(c), swap=True, reduction="sum").numpy(),
                               rtol=1e-5)
    y = np.array([1, -1, 1, -1], np.float32)
    np.testing.assert_allclose(_C.margin_ranking_loss(input_1=flow.tensor(a[:, 0]), input_2=flow.tensor(b[:, 0]),
                                                      target=flow.tensor(y), margin=0.2, reduction="mean").numpy(),
                               TF.margin_ranking_loss(_t(a[:, 0]), _t(b[:, 0]), _t(y), margin=0.2).numpy(), rtol=1e-5)


def test_combined_margin_loss_formula():
    x = (RNG.rand(3, 4).astype(np.float32) * 1.6 - 0.8)
    lab = np.array([1, 0, 3], np.int32)
    got = _C.combined_margin_loss(x=flow.tensor(x), label=flow.tensor(lab), m1=1.0, m2=0.3, m3=0.1).numpy()
    want = x.copy()
    rows = np.arange(3)
    want[rows, lab] = np.cos(np.arccos(x[rows, lab]) + 0.3) - 0.1
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@needs_torch
def test_normalizations():
    x = RNG.randn(4, 3, 5).astype(np.float32)
    g, b = RNG.rand(3).astype(np.float32) + 0.5, RNG.randn(3).astype(np.float32)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    frm, frv = flow.tensor(rm), flow.tensor(rv)
    got = _C.normalization(x=flow.tensor(x), moving_mean=frm, moving_variance=frv, gamma=flow.tensor(g),
                           beta=flow.tensor(b), axis=1, epsilon=1e-5, momentum=0.1, is_training=True)
    trm, trv = _t(rm), _t(rv)
    want = TF.batch_norm(_t(x), trm, trv, _t(g), _t(b), training=True, momentum=0.1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(frm.numpy(), trm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(frv.numpy(), trv.numpy(), rtol=1e-5)
    gamma, beta = RNG.rand(5).astype(np.float32), RNG.randn(5).astype(np.float32)
    got = _C.layer_norm_affine(x=flow.tensor(x), gamma=flow.tensor(gamma), beta=flow.tensor(beta),
                               begin_norm_axis=2, begin_params_axis=2, epsilon=1e-5)
    np.testing.assert_allclose(got.numpy(), TF.layer_norm(_t(x), (5,), _t(gamma), _t(beta)).numpy(), rtol=1e-4,
                               atol=1e-5)
    gamma2, beta2 = RNG.rand(5).astype(np.float32), RNG.randn(5).astype(np.float32)
    got = _C.layer_norm_affine(flow.tensor(x), flow.tensor(gamma2), flow.tensor(beta2), 1, 2, 1e-5)
    want = TF.layer_norm(_t(x), (3, 5)) * _t(gamma2) + _t(beta2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    x6 = RNG.randn(2, 6, 3).astype(np.float32)
    g6, b6 = RNG.rand(6).astype(np.float32), RNG.randn(6).astype(np.float32)
    got = _C.group_norm(x=flow.tensor(x6), gamma=flow.tensor(g6), beta=flow.tensor(b6), affine=True,
                        num_groups=3, epsilon=1e-5, data_format="channels_first", activation="silu")
    want = TF.silu(TF.group_norm(_t(x6), 3, _t(g6), _t(b6)))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    got = _C.group_norm(flow.tensor(x6), None, None, False, 2, 1e-5)
    np.testing.assert_allclose(got.numpy(), TF.group_norm(_t(x6), 2).numpy(), rtol=1e-4, atol=1e-5)


@needs_torch
def test_activations_and_dropouts():
    x = RNG.randn(2, 3, 4).astype(np.float32) * 3
    tx = _t(x)
    np.testing.assert_allclose(_C.hardtanh(x=flow.tensor(x), min_val=-1.5, max_val=2.0).numpy(),
                               TF.hardtanh(tx, -1.5, 2.0).numpy())
    np.testing.assert_allclose(_C.elu(x=flow.tensor(x), alpha=0.7).numpy(), TF.elu(tx, 0.7).numpy(), rtol=1e-5)
    np.testing.assert_allclose(_C.hardsigmoid(input=flow.tensor(x), inplace=False).numpy(),
                               TF.hardsigmoid(tx).numpy(), rtol=1e-5)
    np.testing.assert_allclose(_C.hardswish(x=flow.tensor(x)).numpy(), TF.hardswish(tx).numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(_C.leaky_relu(x=flow.tensor(x), alpha=0.2).numpy(), TF.leaky_relu(tx, 0.2).numpy(),
                               rtol=1e-6)
    z = flow.tensor(x)
    assert _C.leaky_relu(z, 0.2, inplace=True) is z
    np.testing.assert_allclose(z.numpy(), TF.leaky_relu(tx, 0.2).numpy(), rtol=1e-6)
    np.testing.assert_allclose(_C.logsigmoid(x=flow.tensor(x)).numpy(), TF.logsigmoid(tx).numpy(), rtol=1e-5,
                               atol=1e-6)
    a = RNG.rand(3).astype(np.float32)
    np.testing.assert_allclose(_C.prelu(x=flow.tensor(x), alpha=flow.tensor(a)).numpy(),
                               TF.prelu(tx, _t(a)).numpy(), rtol=1e-6)
    ps = RNG.randn(1, 8, 2, 3).astype(np.float32)
    np.testing.assert_array_equal(_C.pixel_shuffle(input=flow.tensor(ps), h_upscale_factor=2, w_upscale_factor=2)
                                  .numpy(), TF.pixel_shuffle(_t(ps), 2).numpy())
    for nd in (1, 2, 3):
        shape = (2, 6) + (3,) * nd
        ones = np.ones(shape, np.float32)
        y = getattr(_C, "dropout%dd" % nd)(input=flow.tensor(ones), p=0.5, training=True).numpy()
        per_channel = y.reshape(2, 6, -1)
        # whole channels are dropped or kept (scaled by 1 / (1 - p))
        assert set(np.unique(per_channel)) <= {0.0, 2.0}
        assert (per_channel.min(2) == per_channel.max(2)).all()
        np.testing.assert_array_equal(getattr(_C, "dropout%dd" % nd)(flow.tensor(ones), 0.5, False).numpy(), ones)


@needs_torch
def test_gradients_through_nn_bindings():
    x = RNG.randn(1, 2, 6).astype(np.float32)
    w = RNG.randn(3, 2, 3).astype(np.float32)
    fx, fw = flow.tensor(x, requires_grad=True), flow.tensor(w, requires_grad=True)
    y, _ = _C.max_pool1d(_C.conv1d(fx, fw, padding=[1]), [2])
    _C.mse_loss(_C.elu(y, 1.0), flow.zeros(*y.shape), "sum").backward()
    tx, tw = _t(x).requires_grad_(), _t(w).requires_grad_()
    ty = TF.max_pool1d(TF.conv1d(tx, tw, padding=1), 2)
    TF.mse_loss(TF.elu(ty), torch.zeros_like(ty), reduction="sum").backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_two_ranks_batch_split_gives_one_ranks_numbers():
    x = RNG.randn(4, 2, 6).astype(np.float32)
    w = RNG.randn(3, 2, 3).astype(np.float32)

    def body():
        p = flow.placement("cpu", [0, 1])
        gx = flow.tensor(x, placement=p, sbp=flow.sbp.split(0), requires_grad=True)
        gw = flow.tensor(w, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
        y, _ = _C.max_pool1d(_C.conv1d(gx, gw, padding=[1]), [2])
        loss = _C.mse_loss(_C.hardtanh(y, -1.0, 1.0), flow.zeros(*y.shape, placement=p, sbp=flow.sbp.split(0)),
                           "sum")
        loss.backward()
        return loss.numpy(), gw.grad.numpy()

    lx, lw = flow.tensor(x, requires_grad=True), flow.tensor(w, requires_grad=True)
    y, _ = _C.max_pool1d(_C.conv1d(lx, lw, padding=[1]), [2])
    loss = _C.mse_loss(_C.hardtanh(y, -1.0, 1.0), flow.zeros(*y.shape), "sum")
    loss.backward()
    for got in on_ranks(2, body):
        np.testing.assert_allclose(got[0], loss.numpy(), rtol=1e-5)
        np.testing.assert_allclose(got[1], lw.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_bad_input_is_named():
    x = flow.zeros(1, 2, 4)
    with pytest.raises(ValueError, match=r"^conv1d: data_format must be 'channels_first' or 'channels_last', "
                                         r"got 'NCL'$"):
        _C.conv1d(x, flow.zeros(2, 2, 1), channel_pos="NCL")
    with pytest.raises(ValueError, match=r"^upsample: interpolation must be 'nearest' or 'bilinear', got 'cubic'$"):
        _C.upsample(flow.zeros(1, 1, 2, 2), 2.0, 2.0, False, "cubic")
    with pytest.raises(RuntimeError, match=r"^upsample_nearest_2d: output_size or positive scale factors are "
                                           r"needed$"):
        _C.upsample_nearest_2d(flow.zeros(1, 1, 2, 2))
    with pytest.raises(ValueError, match=r"^group_norm: activation must be 'none' or 'silu', got 'relu'$"):
        _C.group_norm(flow.zeros(1, 2, 2), None, None, False, 1, 1e-5, activation="relu")
