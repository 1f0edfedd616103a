"""The nn ops family's convolutions on both surfaces: legacy `flow.nn.conv1d`, `conv3d`, `conv2d_transpose`,
`torch_conv2d_transpose`, `flow.layers.conv1d` / `conv3d` in jobs on 1 and 2 devices (padding rules, formats,
groups, created variables), and OneFlow 0.9's `Conv1d/2d/3d`, `ConvTranspose1d/2d/3d` and functional forms eagerly
and in `nn.Graph`; each forward and backward against PyTorch in float64 and float32."""
import math
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _r(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _last(a):
    """channels first -> channels last"""
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def _tpad(x, pads):
    """torch: explicit (before, after) pads of the spatial axes."""
    return TF.pad(x, [q for pr in reversed(pads) for q in pr])


def _same_lower(sizes, ks, ss, ds):
    pads = []
    for n, k, s, d in zip(sizes, ks, ss, ds):
        need = max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n)
        pads.append((need - need // 2, need // 2))
    return pads


CONV1D = [
    # (x shape NCW, w shape, strides, padding, dilations, groups, torch pads)
    ((3, 4, 9), (6, 4, 3), 1, "SAME", 1, 1, [(1, 1)]),
    ((3, 4, 10), (6, 2, 4), 2, "SAME", 1, 2, _same_lower([10], [4], [2], [1])),
    ((2, 4, 11), (5, 4, 3), 1, [(0, 0), (0, 0), (2, 1)], 2, 1, [(2, 1)]),
    ((2, 4, 11), (5, 4, 3), 3, "VALID", 1, 1, [(0, 0)]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", range(len(CONV1D)))
def test_legacy_conv1d_matches_torch_on_one_and_two_devices(case, dtype):
    xs, ws, s, padding, d, g, tpads = CONV1D[case]
    x, w = _r(xs, dtype), _r(ws, dtype, 1)

    def body(x, w):
        return flow.nn.conv1d(x, w, s, padding, "NCW", d, g)

    outs, grads, rs = ref.legacy(body, [x, w])
    t_outs, t_grads = ref.torch_ref(lambda x, w: TF.conv1d(_tpad(x, tpads), w, stride=s, dilation=d, groups=g),
                                    [x, w], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "conv1d")
    for splits in ([0, None], [None, 0]) + (([1, 1],) if g == 1 else ()):
        outs2, grads2, _ = ref.legacy(body, [x, w], devices=2, splits=splits)
        ref.assert_close(outs2 + grads2, outs + grads, dtype, "conv1d on 2 devices %s" % (splits,))
    if g == 1:  # channels last: the same numbers, weight (F, k, C)
        outs_l, grads_l, _ = ref.legacy(lambda x, w: flow.nn.conv1d(x, w, s, padding if isinstance(padding, str)
                                                                    else [(0, 0), (2, 1), (0, 0)], "NWC", d, g),
                                        [_last(x), _last(w)])
        ref.assert_close([np.moveaxis(outs_l[0], -1, 1)], outs, dtype, "conv1d NWC")


def test_legacy_conv1d_errors_are_oneflows():
    x, w = _r((2, 4, 9)), _r((6, 2, 3))
    with pytest.raises(ValueError, match='data_format must be "NCW" or "NWC"'):
        ref.predict(lambda x, w: flow.nn.conv1d(x, w, 1, "SAME", "NCHW"), [x, w])
    with pytest.raises(ValueError, match="NWC not support groups > 1"):
        ref.predict(lambda x, w: flow.nn.conv1d(x, w, 1, "SAME", "NWC", groups=2), [_last(x), _r((6, 3, 2))])
    with pytest.raises(AssertionError, match="strides length must be 1"):
        ref.predict(lambda x, w: flow.nn.conv1d(x, w, [1, 1], "SAME"), [x, _r((6, 4, 3))])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fmt", ["NCDHW", "NDHWC"])
def test_legacy_conv3d_matches_torch(fmt, dtype):
    x, w = _r((2, 3, 5, 4, 6), dtype), _r((4, 3, 3, 2, 3), dtype, 1)
    pads = [(1, 1), (0, 1), (2, 0)]
    padding = [(0, 0), (0, 0)] + pads if fmt == "NCDHW" else [(0, 0)] + pads + [(0, 0)]

    def body(x, w):
        return flow.nn.conv3d(x, w, [1, 2, 1], padding, fmt, dilations=[2, 1, 1])

    xin, win = (x, w) if fmt == "NCDHW" else (_last(x), _last(w))
    outs, grads, rs = ref.legacy(body, [xin, win])
    if fmt == "NDHWC":
        outs, grads, rs = [np.moveaxis(outs[0], -1, 1)], [np.moveaxis(g, -1, 1) for g in grads], \
            [np.moveaxis(rs[0], -1, 1)]
    # NDHWC: OneFlow transposes to NCDHW and swaps padding entries 1 and 4 of the NDHWC list (N, D, H, W, C), so
    # the NCDHW pads read (D, H, W) = (H's, W's, D's)
    tpads = pads if fmt == "NCDHW" else [pads[1], pads[2], pads[0]]
    t_outs, t_grads = ref.torch_ref(lambda x, w: TF.conv3d(_tpad(x, tpads), w, stride=(1, 2, 1),
                                                           dilation=(2, 1, 1)), [x, w], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "conv3d " + fmt)
    if fmt == "NCDHW":
        outs2, grads2, _ = ref.legacy(body, [xin, win], devices=2, splits=[0, None])
        ref.assert_close(outs2 + grads2, outs + grads, dtype, "conv3d on 2 devices")


TRANSPOSE = [
    # (x NCHW, w (C_in, C_out, kh, kw), output_shape NCHW, strides, padding, torch's padding, output padding, crop)
    ((2, 3, 4, 5), (3, 2, 3, 3), (2, 2, 9, 11), 2, "VALID", (0, 0), (0, 0), None),
    # SAME with an odd padding need (1): OneFlow's padding_needed // 2 = 0 before, the extra cell cropped after
    ((2, 3, 4, 5), (3, 2, 3, 3), (2, 2, 8, 10), 2, "SAME", (0, 0), (0, 0), (8, 10)),
    ((2, 3, 4, 4), (3, 4, 4, 4), (2, 4, 8, 8), 2, "SAME", (1, 1), (0, 0), None),
    ((2, 3, 5, 5), (3, 2, 3, 3), (2, 2, 5, 5), 1, "SAME", (1, 1), (0, 0), None),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", range(len(TRANSPOSE)))
def test_legacy_conv2d_transpose_matches_torch(case, dtype):
    xs, ws, out, s, padding, tp, top, crop = TRANSPOSE[case]
    x, w = _r(xs, dtype), _r(ws, dtype, 1)

    def body(x, w):
        return flow.nn.conv2d_transpose(x, w, output_shape=out, strides=s, padding=padding)

    def torch_fn(x, w):
        y = TF.conv_transpose2d(x, w, stride=s, padding=tp, output_padding=top)
        return y if crop is None else y[:, :, :crop[0], :crop[1]]

    outs, grads, rs = ref.legacy(body, [x, w])
    t_outs, t_grads = ref.torch_ref(torch_fn, [x, w], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, "conv2d_transpose")
    outs2, grads2, _ = ref.legacy(body, [x, w], devices=2, splits=[0, None])
    ref.assert_close(outs2 + grads2, outs + grads, dtype, "conv2d_transpose on 2 devices")


def test_legacy_conv2d_transpose_odd_same_crops_as_oneflow_and_nhwc():
    # SAME with an odd padding need: OneFlow deconvolved without padding and cropped (left, right) = (0, 1)
    x, w = _r((2, 3, 4, 4)), _r((3, 2, 2, 2), seed=1)
    out = ref.predict(lambda x, w: flow.nn.conv2d_transpose(x, w, output_shape=(2, 2, 7, 7), strides=2,
                                                            padding="SAME"), [x, w])[0]
    full = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2).numpy()  # 8 x 8
    np.testing.assert_allclose(out, full[:, :, 0:7, 0:7], rtol=1e-12)
    nhwc = ref.predict(lambda x, w: flow.nn.conv2d_transpose(input=x, filters=w, output_shape=(2, 8, 8, 2),
                                                             strides=2, data_format="NHWC"),
                       [_last(x), np.ascontiguousarray(np.transpose(w, (0, 2, 3, 1)))])[0]
    np.testing.assert_allclose(np.moveaxis(nhwc, -1, 1), full, rtol=1e-12)
    torch_style = ref.predict(lambda x, w: flow.nn.torch_conv2d_transpose(x, w, output_padding=(1, 1), strides=2,
                                                                          padding_needed=(2, 2)), [x, w])[0]
    np.testing.assert_allclose(torch_style, TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), stride=2,
                                                                padding=1, output_padding=1).numpy(), rtol=1e-12)
    with pytest.raises(AssertionError, match="only one of `filter` and `filters`"):
        ref.predict(lambda x, w: flow.nn.conv2d_transpose(x, w, filters=w, output_shape=(2, 2, 8, 8), strides=2),
                    [x, w])


@pytest.mark.parametrize("layer,xs,kw,weight_shape", [
    ("conv1d", (2, 4, 9), dict(filters=6, kernel_size=3, padding="SAME"), (6, 4, 3)),
    ("conv1d", (2, 9, 4), dict(filters=6, kernel_size=3, data_format="NWC"), (6, 3, 4)),
    ("conv1d", (2, 4, 9), dict(filters=6, kernel_size=3, groups=2, dilation_rate=2), (6, 2, 3)),
    ("conv3d", (2, 3, 4, 5, 4), dict(filters=4, kernel_size=(2, 3, 2), strides=(1, 2, 1)), (4, 3, 2, 3, 2)),
    ("conv3d", (2, 4, 5, 4, 3), dict(filters=4, kernel_size=2, data_format="NDHWC"), (4, 3, 2, 2, 2)),
])
def test_layers_conv_creates_oneflows_variables_and_computes_the_convolution(layer, xs, kw, weight_shape):
    x = _r(xs)
    out = ref.predict(lambda x: getattr(flow.layers, layer)(x, name="c", activation=flow.nn.relu, **kw), [x])[0]
    variables = {k: v.numpy() for k, v in flow.get_all_variables().items()}
    assert {k: v.shape for k, v in variables.items()} == {"c-weight": weight_shape, "c-bias": (kw["filters"],)}
    w = variables["c-weight"]
    # xavier uniform: bound sqrt(3 / fan_avg), with OneFlow's fans (fan_in = prod(shape[1:]); fan_out =
    # shape[0] * prod(shape[1:-1]) whatever the data format: ops/initializer_util.py GenInitialFan compares the
    # format with "channel_first"), and not all equal
    assert np.all(variables["c-bias"] == 0) and np.std(w) > 0
    fmt_last = kw.get("data_format", "").endswith("C")
    fan_in, fan_out = np.prod(weight_shape[1:]), weight_shape[0] * np.prod(weight_shape[1:-1])
    assert np.abs(w).max() <= math.sqrt(3.0 / ((fan_in + fan_out) / 2)) + 1e-12
    tx, tw = torch.tensor(x), torch.tensor(w)
    if layer == "conv1d":
        if fmt_last:
            tx, tw = tx.permute(0, 2, 1), tw.permute(0, 2, 1)
        pad = [(1, 1)] if kw.get("padding") == "SAME" else [(0, 0)]
        y = TF.conv1d(_tpad(tx, pad), tw, groups=kw.get("groups", 1), dilation=kw.get("dilation_rate", 1))
    else:
        if fmt_last:
            tx = tx.permute(0, 4, 1, 2, 3)
        y = TF.conv3d(tx, tw, stride=kw.get("strides", 1))
    y = torch.relu(y)
    if fmt_last:
        y = torch.movedim(y, 1, -1)
    np.testing.assert_allclose(out, y.numpy(), rtol=1e-10, atol=1e-12)


# --- OneFlow 0.9's modules and functional forms ------------------------------------------------------------------
F = flow.nn.functional

FUNCTIONAL = [
    ("conv1d", (3, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    ("conv1d", (3, 4, 9), (6, 4, 4), dict(padding="same", dilation=1)),
    ("conv2d", (2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    ("conv2d", (2, 4, 6, 6), (6, 2, 3, 3), dict(padding="same", groups=2)),
    ("conv3d", (2, 3, 4, 5, 4), (4, 3, 2, 3, 2), dict(stride=(1, 2, 1), padding=1)),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 3, 3, 2), dict(stride=2, padding=(1, 0), dilation=(1, 2))),
    ("conv_transpose2d", (2, 4, 3, 4), (4, 2, 3, 3), dict(stride=1, groups=2)),
    ("conv_transpose3d", (2, 4, 2, 3, 2), (4, 2, 2, 2, 3), dict(stride=2, output_padding=(1, 0, 1))),
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel:UserWarning")  # torch's, on its copy
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", range(len(FUNCTIONAL)))
def test_functional_convolutions_match_torch(case, dtype):
    name, xs, ws, kw = FUNCTIONAL[case]
    transposed = name.startswith("conv_transpose")
    out_channels = ws[1] * kw.get("groups", 1) if transposed else ws[0]
    x, w, b = _r(xs, dtype), _r(ws, dtype, 1), _r((out_channels,), dtype, 2)
    outs, grads, rs = ref.eager(lambda x, w, b: getattr(F, name)(x, w, b, **kw), [x, w, b])
    t_outs, t_grads = ref.torch_ref(lambda x, w, b: getattr(TF, name)(x, w, b, **kw), [x, w, b], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, name)


MODULES = [
    (lambda: flow.nn.Conv2d(1, 6, 5), lambda: torch.nn.Conv2d(1, 6, 5), (2, 1, 9, 9),
     "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))"),
    (lambda: flow.nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, bias=False),
     lambda: torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, bias=False), (2, 4, 9, 8),
     "Conv2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), groups=2, bias=False)"),
    (lambda: flow.nn.Conv1d(3, 5, 4, padding="same"), lambda: torch.nn.Conv1d(3, 5, 4, padding="same"), (2, 3, 8),
     "Conv1d(3, 5, kernel_size=(4,), stride=(1,), padding=(1,))"),
    (lambda: flow.nn.Conv3d(2, 3, (2, 3, 1), stride=(1, 1, 2)), lambda: torch.nn.Conv3d(2, 3, (2, 3, 1),
                                                                                         stride=(1, 1, 2)),
     (2, 2, 4, 5, 6), "Conv3d(2, 3, kernel_size=(2, 3, 1), stride=(1, 1, 2))"),
    (lambda: flow.nn.ConvTranspose1d(3, 4, 3, stride=2), lambda: torch.nn.ConvTranspose1d(3, 4, 3, stride=2),
     (2, 3, 6), "ConvTranspose1d()"),
    (lambda: flow.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1),
     lambda: torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1), (2, 4, 3, 5),
     "ConvTranspose2d()"),
    (lambda: flow.nn.ConvTranspose3d(2, 4, 2, groups=2), lambda: torch.nn.ConvTranspose3d(2, 4, 2, groups=2),
     (2, 2, 3, 2, 3), "ConvTranspose3d()"),
]


@pytest.mark.parametrize("k", range(len(MODULES)))
def test_conv_modules_print_initialize_and_compute_as_torch(k):
    make, tmake, xs, text = MODULES[k]
    m, tm = make(), tmake()
    assert repr(m) == text
    fan_in = int(np.prod(m.weight.shape[1:]))
    bound = 1 / math.sqrt(fan_in)  # kaiming uniform with a = sqrt(5), and the bias's bound
    assert np.abs(m.weight.numpy()).max() <= bound + 1e-7 and np.std(m.weight.numpy()) > bound / 4
    if m.bias is not None:
        assert np.abs(m.bias.numpy()).max() <= bound + 1e-7
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(m.weight.numpy()))
        if m.bias is not None:
            tm.bias.copy_(torch.tensor(m.bias.numpy()))
    x = _r(xs, np.float32)
    outs, grads, rs = ref.eager(m, [x])
    t_outs, t_grads = ref.torch_ref(tm, [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float32, text)
    ref.assert_close([p.grad.numpy() for p in m.parameters()], [p.grad.numpy() for p in tm.parameters()],
                     np.float32, text + " parameter grads")


def test_conv_module_errors():
    with pytest.raises(AssertionError, match="padding_mode 'reflect' is not supported"):
        flow.nn.Conv2d(1, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        flow.nn.Conv2d(1, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="The input channels 2 should be equal to self.in_channels 1"):
        flow.nn.Conv2d(1, 2, 3)(flow.tensor(_r((1, 2, 5, 5), np.float32)))


def test_a_cnn_in_a_graph_equals_eager():
    def make():
        flow.manual_seed(5)
        return flow.nn.Sequential(flow.nn.Conv2d(2, 4, 3, padding=1), flow.nn.ReLU(),
                                  flow.nn.ConvTranspose2d(4, 3, 2, stride=2), flow.nn.Conv2d(3, 2, 1))

    eager_net, graph_net = make(), make()
    graph_net.load_state_dict(eager_net.state_dict())
    opt_e = flow.optim.SGD(eager_net.parameters(), lr=0.05)
    opt_g = flow.optim.SGD(graph_net.parameters(), lr=0.05)

    class Train(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = graph_net
            self.add_optimizer(opt_g)

        def build(self, x):
            loss = (self.net(x) ** 2).mean()
            loss.backward()
            return loss

    train = Train()
    for step in range(3):
        x = flow.tensor(_r((2, 2, 4, 4), np.float32, seed=step))
        loss = (eager_net(x) ** 2).mean()
        loss.backward()
        opt_e.step()
        opt_e.zero_grad()
        np.testing.assert_allclose(train(x).numpy(), loss.numpy(), rtol=1e-5)
    for (name, a), (_, b) in zip(eager_net.state_dict().items(), graph_net.state_dict().items()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
