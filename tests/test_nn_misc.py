"""The nn ops family's other ops on both surfaces: legacy `flow.math.l2_normalize`, `flow.nn.random_mask_like`,
`flow.nn.PixelShuffle(v2)`, `flow.layers.upsample_2d`, `flow.reflection_pad2d` / `replication_pad2d` /
`constant_pad2d` / `zero_pad2d` / `same_padding`, the float16 bias gradient and bias_add's default axis (jobs on 1
and 2 devices); OneFlow 0.9's `Embedding`, `PixelShuffle`, `Upsample` / `interpolate`, padding modules / `pad`,
`Dropout1d/2d/3d` eagerly and in `nn.Graph`; against PyTorch (or numpy written here)."""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _r(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_l2_normalize_matches_torch_on_one_and_two_devices(axis, dtype):
    x = _r((5, 4, 3), dtype)
    outs, grads, rs = ref.legacy(lambda x: flow.math.l2_normalize(x, axis=axis, epsilon=1e-12), [x])
    # OneFlow: x / sqrt(max(Σx², ε)); torch's normalize clamps the norm: the same with eps = sqrt(ε)
    t_outs, t_grads = ref.torch_ref(lambda t: TF.normalize(t, dim=axis, eps=1e-6), [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "l2_normalize")
    outs2, grads2, _ = ref.legacy(lambda x: flow.math.l2_normalize(x, axis=axis), [x], devices=2,
                                  splits=[1 if axis == 0 else 0])
    ref.assert_close(outs2 + grads2, outs + grads, dtype, "l2_normalize on 2 devices")


def _mask_job(devices, rate=0.3, seed=None, name=None):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((40, 50))) -> tp.Numpy:
        return flow.nn.random_mask_like(x, rate, seed=seed, name=name)

    x = np.zeros((40, 50), np.float32)
    return job(x), job(x)


def test_random_mask_like_keeps_one_minus_rate_anew_per_call_and_alike_on_two_devices():
    first, second = _mask_job(1, seed=5, name="mask")
    assert first.dtype == np.int8 and set(np.unique(first)) <= {0, 1}
    assert abs(first.mean() - 0.7) < 0.05 and not np.array_equal(first, second)
    two = _mask_job(2, seed=5, name="mask")
    np.testing.assert_array_equal(two[0], first)
    np.testing.assert_array_equal(two[1], second)
    with pytest.raises(AssertionError, match="requires a name"):
        _mask_job(1, seed=5)
    with pytest.raises(AssertionError, match=r"rate must be in \[0, 1\)"):
        _mask_job(1, rate=1.0)


@pytest.mark.parametrize("h,w", [(2, 2), (2, 3)])
def test_legacy_pixel_shuffle_matches_torch_and_numpy(h, w):
    x = _r((2, 12, 3, 4))

    def body(x):
        return flow.nn.PixelShuffle(x, 2) if h == w else flow.nn.PixelShufflev2(x, h, w)

    outs, grads, rs = ref.legacy(body, [x])
    n, c = 2, 12 // (h * w)
    want = x.reshape(n, c, h, w, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(n, c, 3 * h, 4 * w)
    np.testing.assert_array_equal(outs[0], want)
    if h == w:
        t_outs, t_grads = ref.torch_ref(lambda t: TF.pixel_shuffle(t, 2), [x], rs)
        ref.assert_close(outs + grads, t_outs + t_grads, np.float64, "PixelShuffle")
    outs2, grads2, _ = ref.legacy(body, [x], devices=2, splits=[0])
    ref.assert_close(outs2 + grads2, outs + grads, np.float64, "PixelShuffle on 2 devices")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("interpolation,align,fmt", [("nearest", False, "NCHW"), ("bilinear", False, "NCHW"),
                                                      ("bilinear", True, "NCHW"), ("nearest", False, "NHWC")])
def test_layers_upsample_2d_matches_torch(interpolation, align, fmt, dtype):
    x = _r((2, 3, 4, 5), dtype)

    def body(x):
        return flow.layers.upsample_2d(x, size=(2, 3), align_corners=align, data_format=fmt,
                                       interpolation=interpolation, name="up")

    xin = np.ascontiguousarray(np.moveaxis(x, 1, -1)) if fmt == "NHWC" else x
    outs, grads, rs = ref.legacy(body, [xin])
    if fmt == "NHWC":
        outs, grads, rs = [np.moveaxis(outs[0], -1, 1)], [np.moveaxis(grads[0], -1, 1)], [np.moveaxis(rs[0], -1, 1)]
    kw = dict(align_corners=align) if interpolation == "bilinear" else {}
    if align:
        tfn = lambda t: TF.interpolate(t, size=(8, 15), mode="bilinear", align_corners=True)  # noqa: E731
    else:
        tfn = lambda t: TF.interpolate(t, scale_factor=(2, 3), mode=interpolation, **kw)  # noqa: E731
    t_outs, t_grads = ref.torch_ref(tfn, [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "upsample_2d")
    outs2, grads2, _ = ref.legacy(body, [xin], devices=2, splits=[0])
    if fmt == "NHWC":
        outs2, grads2 = [np.moveaxis(outs2[0], -1, 1)], [np.moveaxis(grads2[0], -1, 1)]
    ref.assert_close(outs2 + grads2, outs + grads, dtype, "upsample_2d on 2 devices")
    with pytest.raises(ValueError, match='interpolation "nearest" does not support align_corners'):
        ref.predict(lambda x: flow.layers.upsample_2d(x, align_corners=True), [x])


@pytest.mark.parametrize("name,torch_mode", [("reflection_pad2d", "reflect"), ("replication_pad2d", "replicate"),
                                             ("constant_pad2d", "constant"), ("zero_pad2d", "constant")])
def test_legacy_pad2d_functions_match_torch(name, torch_mode):
    x = _r((2, 3, 5, 4))
    padding = [1, 3, 2, 0]  # left, right, top, bottom

    def body(x):
        if name == "constant_pad2d":
            return flow.constant_pad2d(x, padding, constant_value=1.5)
        return getattr(flow, name)(x, padding)

    outs, grads, rs = ref.legacy(body, [x])
    value = 1.5 if name == "constant_pad2d" else 0.0
    t_outs, t_grads = ref.torch_ref(lambda t: TF.pad(t, padding, mode=torch_mode, **(
        {"value": value} if torch_mode == "constant" else {})), [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float64, name)
    outs2, grads2, _ = ref.legacy(body, [x], devices=2, splits=[1])
    ref.assert_close(outs2 + grads2, outs + grads, np.float64, name + " on 2 devices")
    with pytest.raises(AssertionError, match="Padding size should be less than the corresponding input dimension"):
        ref.predict(lambda x: getattr(flow, name)(x, 5), [x])


def test_same_padding_pads_as_a_same_convolution():
    x = _r((2, 3, 5, 6))
    y = ref.predict(lambda x: flow.same_padding(x, "SAME_LOWER", "NCHW", [3, 4], [2, 1], [1, 1]), [x])[0]
    # H: out 3, need (3-1)*2+3-5 = 2 -> (1, 1); W: out 6, need 5+4-6 = 3 -> lower (2, 1)
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (0, 0), (1, 1), (2, 1))))
    y = ref.predict(lambda x: flow.same_padding(x, "same_upper", "NHWC", [3, 4], [2, 1], [1, 1]), [x])[0]
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (1, 1), (1, 2), (0, 0))))


def test_bias_add_defaults_to_axis_1_and_sums_float16_gradients_in_float32():
    x = _r((2, 3, 4, 4), np.float32)
    b = _r((3,), np.float32, 1)
    y = ref.predict(lambda x, b: flow.nn.bias_add(x, b), [x, b])[0]
    np.testing.assert_allclose(y, x + b[None, :, None, None], rtol=1e-6)
    # 4096 rows of dy = 1.25 in float16: summed in float16 they give 4096 (the steps of float16 above 2048 swallow
    # the addends); OneFlow's float32 accumulation gives 5120, exactly representable in float16
    flow.clear_default_session()
    fetched = {}

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4096, 2), dtype=flow.float16)) -> tp.Numpy:
        b = flow.get_variable("b", (2,), dtype=flow.float16, initializer=flow.zeros_initializer())
        flow.watch_diff(b, lambda g: fetched.setdefault("db", np.array(g)))
        out = flow.nn.bias_add(x, b)
        loss = flow.math.reduce_sum(flow.math.multiply(out, 1.25))
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(loss)
        return out

    train(np.zeros((4096, 2), np.float16))
    assert fetched["db"].dtype == np.float16
    np.testing.assert_array_equal(fetched["db"], [5120.0, 5120.0])


# --- OneFlow 0.9's modules and functional forms ------------------------------------------------------------------
F = flow.nn.functional


def test_embedding_matches_torch_and_leaves_the_padding_row_without_gradient():
    m = flow.nn.Embedding(7, 4, padding_idx=2)
    assert repr(m) == "Embedding(7, 4, padding_idx=2)"
    assert np.all(m.weight.numpy()[2] == 0) and np.std(m.weight.numpy()) > 0.3
    tm = torch.nn.Embedding(7, 4, padding_idx=2)
    w = _r((7, 4), np.float32, 3)
    with flow.no_grad():
        m.weight.copy_(flow.tensor(w))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
    idx = np.array([[3, 2, 3], [6, 1, 2]], np.int64)
    outs, grads, rs = ref.eager(m, [idx])
    t_outs, _ = ref.torch_ref(tm, [idx], rs)
    ref.assert_close(outs, t_outs, np.float32, "Embedding")
    ref.assert_close([m.weight.grad.numpy()], [tm.weight.grad.numpy()], np.float32, "Embedding weight grad")
    assert np.all(m.weight.grad.numpy()[2] == 0)
    y = F.embedding(flow.tensor(idx), flow.tensor(w))
    np.testing.assert_array_equal(y.numpy(), w[idx])


def test_pixel_shuffle_module_and_functional():
    m = flow.nn.PixelShuffle(upscale_factor=2)
    assert repr(m) == "PixelShufflev2(w_upscale_factor=2, h_upscale_factor=2)"
    x = _r((2, 8, 3, 4), np.float32)
    outs, grads, rs = ref.eager(m, [x])
    t_outs, t_grads = ref.torch_ref(lambda t: TF.pixel_shuffle(t, 2), [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float32, "PixelShuffle")
    y = flow.nn.PixelShufflev2(h_upscale_factor=1, w_upscale_factor=2)(flow.tensor(x))
    assert tuple(y.shape) == (2, 4, 3, 8)


INTERPOLATE = [
    ((2, 3, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 3, 5), dict(size=8, mode="linear")),
    ((2, 3, 5), dict(size=3, mode="linear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=(2, 3), mode="nearest")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="nearest")),
    ((2, 3, 4, 5), dict(scale_factor=2, mode="bilinear")),
    ((2, 3, 4, 5), dict(size=(6, 9), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True)),
    ((2, 2, 3, 4, 3), dict(scale_factor=2, mode="nearest")),
    ((2, 2, 3, 4, 3), dict(size=(4, 5, 6), mode="trilinear")),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", range(len(INTERPOLATE)))
def test_interpolate_matches_torch(case, dtype):
    xs, kw = INTERPOLATE[case]
    x = _r(xs, dtype)
    outs, grads, rs = ref.eager(lambda t: F.interpolate(t, **kw), [x])
    t_outs, t_grads = ref.torch_ref(lambda t: TF.interpolate(t, **kw), [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, str(kw))


def test_upsample_modules_print_and_compute_as_torch():
    x = _r((2, 3, 4, 5), np.float32)
    for m, tm, text in [(flow.nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2),
                         "Upsample(scale_factor=2, mode=nearest)"),
                        (flow.nn.Upsample(size=(5, 7), mode="bilinear"), torch.nn.Upsample(size=(5, 7),
                                                                                           mode="bilinear"),
                         "Upsample(size=(5, 7), mode=bilinear)"),
                        (flow.nn.UpsamplingBilinear2d(scale_factor=2), torch.nn.UpsamplingBilinear2d(scale_factor=2),
                         "UpsamplingBilinear2d(scale_factor=2, mode=bilinear)"),
                        (flow.nn.UpsamplingNearest2d(size=6), torch.nn.UpsamplingNearest2d(size=6),
                         "UpsamplingNearest2d(size=6, mode=nearest)")]:
        assert repr(m) == text
        outs, grads, rs = ref.eager(m, [x])
        t_outs, t_grads = ref.torch_ref(tm, [x], rs)
        ref.assert_close(outs + grads, t_outs + t_grads, np.float32, text)
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 4D\) for the "
                       r"modes: nearest \| linear \| bilinear \| bicubic \| trilinear \| area \(got linear\)"):
        F.interpolate(flow.tensor(x), scale_factor=2, mode="linear")


PADS = [
    ((2, 3, 5, 4), [1, 2, 3, 0], "reflect", 0.0),
    ((3, 5, 4), [1, 2, 3, 0], "reflect", 0.0),
    ((2, 3, 6), [2, 4], "reflect", 0.0),
    ((2, 3, 5, 4), [3, 0, 1, 2], "replicate", 0.0),
    ((2, 3, 6), [0, 5], "replicate", 0.0),
    ((2, 3, 5, 4), [1, 2, 0, 1], "constant", 2.5),
    ((2, 3, 2, 3, 2), [1, 0, 0, 2, 1, 1], "constant", 0.0),
]


@pytest.mark.parametrize("case", range(len(PADS)))
def test_functional_pad_matches_torch(case):
    xs, pad, mode, value = PADS[case]
    x = _r(xs)
    outs, grads, rs = ref.eager(lambda t: F.pad(t, pad, mode, value), [x])
    t_outs, t_grads = ref.torch_ref(lambda t: TF.pad(t, pad, mode, value) if mode == "constant"
                                    else TF.pad(t, pad, mode), [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float64, "%s %s" % (mode, pad))


def test_padding_modules_print_and_compute_as_torch():
    x = _r((2, 3, 5, 6), np.float32)
    for m, tm, text in [(flow.nn.ReflectionPad2d(2), torch.nn.ReflectionPad2d(2), "ReflectionPad2d([2, 2, 2, 2])"),
                        (flow.nn.ReplicationPad2d((1, 0, 2, 3)), torch.nn.ReplicationPad2d((1, 0, 2, 3)),
                         "ReplicationPad2d([1, 0, 2, 3])"),
                        (flow.nn.ZeroPad2d(1), torch.nn.ZeroPad2d(1), "ZeroPad2d()"),
                        (flow.nn.ConstantPad2d((1, 2, 0, 1), 3.0), torch.nn.ConstantPad2d((1, 2, 0, 1), 3.0),
                         "ConstantPad2d()")]:
        assert repr(m) == text
        outs, grads, rs = ref.eager(m, [x])
        t_outs, t_grads = ref.torch_ref(tm, [x], rs)
        ref.assert_close(outs + grads, t_outs + t_grads, np.float32, text)
    x1 = _r((2, 3, 6), np.float32)
    for m, tm in [(flow.nn.ReflectionPad1d(2), torch.nn.ReflectionPad1d(2)),
                  (flow.nn.ReplicationPad1d((3, 1)), torch.nn.ReplicationPad1d((3, 1))),
                  (flow.nn.ConstantPad1d(2, -1.0), torch.nn.ConstantPad1d(2, -1.0))]:
        np.testing.assert_array_equal(m(flow.tensor(x1)).numpy(), tm(torch.tensor(x1)).numpy())
    x3 = _r((1, 2, 2, 3, 2), np.float32)
    np.testing.assert_array_equal(flow.nn.ConstantPad3d(1, 2.0)(flow.tensor(x3)).numpy(),
                                  torch.nn.ConstantPad3d(1, 2.0)(torch.tensor(x3)).numpy())


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_channel_dropout_zeroes_whole_channels_and_scales(nd):
    m = getattr(flow.nn, "Dropout%dd" % nd)(p=0.4)
    assert repr(m) == "Dropout%dd(p=0.4, inplace=False)" % nd
    shape = (20, 30) + (3,) * nd
    x = np.ones(shape, np.float32)
    y = m(flow.tensor(x)).numpy()
    per_channel = y.reshape(20, 30, -1)
    assert np.all(per_channel.min(axis=2) == per_channel.max(axis=2))  # a channel is kept or dropped whole
    assert set(np.unique(per_channel)) <= {0.0, np.float32(1 / 0.6)}
    assert abs((per_channel[:, :, 0] == 0).mean() - 0.4) < 0.08
    m.eval()
    np.testing.assert_array_equal(m(flow.tensor(x)).numpy(), x)


def test_misc_modules_in_a_graph():
    net = flow.nn.Sequential(flow.nn.ReflectionPad2d(1), flow.nn.Upsample(scale_factor=2, mode="bilinear"),
                             flow.nn.PixelShuffle(2), flow.nn.Dropout2d(0.5))

    class Forward(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = net

        def build(self, x):
            return self.net(x)

    net.eval()
    x = flow.tensor(_r((2, 4, 3, 3), np.float32))
    np.testing.assert_allclose(Forward()(x).numpy(), net(x).numpy(), rtol=1e-6)
    base = net(x).numpy()  # eval: no dropout
    net.train()
    y = Forward()(x).numpy()  # a graph built in training mode: Dropout2d drops whole channels, scales by 2
    for n in range(y.shape[0]):
        for c in range(y.shape[1]):
            assert np.allclose(y[n, c], 0) or np.allclose(y[n, c], 2 * base[n, c], rtol=1e-6), (n, c)
