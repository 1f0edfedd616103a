"""The nn ops family's pooling on both surfaces: legacy `flow.nn.max_pool1d/3d`, `avg_pool1d/3d` (padding rules,
formats) in jobs on 1 and 2 devices, and OneFlow 0.9's `MaxPool1d/2d/3d`, `AvgPool1d/2d/3d` (dilation,
count_include_pad, divisor_override, ceil_mode), `AdaptiveAvgPool1d/2d/3d` and their functional forms eagerly
and in `nn.Graph`; forward and backward against PyTorch in float64 and float32."""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_reference as ref  # noqa: E402

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _distinct(shape, dtype=np.float64, seed=0):
    """Values 0.05 apart (no ties: the max pool's gradient is then unique)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n) * 0.05 - n * 0.025).reshape(shape).astype(dtype)


def _last(a):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def _tpad(x, pads, value):
    return TF.pad(x, [q for pr in reversed(pads) for q in pr], value=value)


LEGACY = [
    # (legacy pool, torch pool, x shape (channels first), ksize, strides, padding, torch pads)
    ("max_pool1d", TF.max_pool1d, (3, 4, 9), 3, 2, "SAME", [(1, 1)]),
    ("avg_pool1d", TF.avg_pool1d, (3, 4, 10), 2, 2, "VALID", [(0, 0)]),
    ("max_pool3d", TF.max_pool3d, (2, 3, 5, 4, 6), [2, 2, 3], [2, 1, 2], "SAME", [(1, 0), (1, 0), (1, 0)]),
    ("avg_pool3d", TF.avg_pool3d, (2, 3, 4, 5, 4), 2, 2, "VALID", [(0, 0)] * 3),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(LEGACY)))
@pytest.mark.parametrize("channels_last", [False, True])
def test_legacy_pools_match_torch_on_one_and_two_devices(k, channels_last, dtype):
    name, tfn, xs, ks, ss, padding, tpads = LEGACY[k]
    x = _distinct(xs, dtype)
    nd = len(xs) - 2
    fmt = {1: "NCW", 3: "NCDHW"}[nd] if not channels_last else {1: "NWC", 3: "NDHWC"}[nd]
    if name == "avg_pool1d" and padding != "VALID":
        pytest.skip("padded average: the legacy divisor counts input cells only")

    def body(x):
        return getattr(flow.nn, name)(x, ks, ss, padding, data_format=fmt)

    xin = _last(x) if channels_last else x
    outs, grads, rs = ref.legacy(body, [xin])
    if channels_last:
        outs, grads, rs = [np.moveaxis(outs[0], -1, 1)], [np.moveaxis(grads[0], -1, 1)], [np.moveaxis(rs[0], -1, 1)]
    fill = -np.inf if name.startswith("max") else 0.0
    t_outs, t_grads = ref.torch_ref(lambda t: tfn(_tpad(t, tpads, fill), ks, ss), [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, name)
    outs2, grads2, _ = ref.legacy(body, [xin], devices=2, splits=[0])
    if channels_last:
        outs2, grads2 = [np.moveaxis(outs2[0], -1, 1)], [np.moveaxis(grads2[0], -1, 1)]
    ref.assert_close(outs2 + grads2, outs + grads, dtype, name + " on 2 devices")


def test_legacy_pool_defaults_and_errors():
    x = _distinct((2, 9, 3), np.float32)  # max_pool1d's default format is NWC
    y = ref.predict(lambda x: flow.nn.max_pool1d(x, 3, 3, "VALID"), [x])[0]
    np.testing.assert_array_equal(y, x.reshape(2, 3, 3, 3).max(axis=2))
    with pytest.raises(AssertionError, match="data_format must be one of"):
        ref.predict(lambda x: flow.nn.max_pool3d(x, 2, 2, "VALID", data_format="NCHW"), [_distinct((1, 1, 2, 2, 2))])


FUNCTIONAL = [
    ("max_pool1d", (3, 4, 11), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)),
    ("max_pool2d", (2, 3, 7, 8), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1))),
    ("max_pool2d", (2, 3, 7, 8), dict(kernel_size=3, ceil_mode=True)),
    ("max_pool3d", (2, 2, 5, 6, 5), dict(kernel_size=2, stride=(1, 2, 2), padding=1)),
    ("avg_pool1d", (3, 4, 9), dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool1d", (3, 4, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True)),
    ("avg_pool2d", (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool2d", (2, 3, 7, 8), dict(kernel_size=(3, 2), stride=2, padding=(1, 0), ceil_mode=True,
                                      divisor_override=4)),
    ("avg_pool2d", (2, 3, 6, 6), dict(kernel_size=2)),
    ("avg_pool3d", (2, 2, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("adaptive_avg_pool1d", (2, 3, 10), dict(output_size=4)),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), dict(output_size=(3, 4))),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), dict(output_size=1)),
    ("adaptive_avg_pool3d", (2, 2, 5, 4, 6), dict(output_size=(2, 3, 4))),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", range(len(FUNCTIONAL)))
def test_functional_pools_match_torch(case, dtype):
    name, xs, kw = FUNCTIONAL[case]
    x = _distinct(xs, dtype)
    outs, grads, rs = ref.eager(lambda x: getattr(flow.nn.functional, name)(x, **kw), [x])
    t_outs, t_grads = ref.torch_ref(lambda x: getattr(TF, name)(x, **kw), [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, dtype, name)


MODULES = [
    (lambda: flow.nn.MaxPool2d(2), lambda: torch.nn.MaxPool2d(2), (2, 3, 6, 6),
     "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1))"),
    (lambda: flow.nn.MaxPool1d(3, 2, 1), lambda: torch.nn.MaxPool1d(3, 2, 1), (2, 3, 9),
     "MaxPool1d(kernel_size=(3,), stride=(2,), padding=(1,))"),
    (lambda: flow.nn.MaxPool3d(2, padding=1, dilation=2), lambda: torch.nn.MaxPool3d(2, padding=1, dilation=2),
     (2, 2, 5, 5, 5), "MaxPool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(1, 1, 1), dilation=(2, 2, 2))"),
    (lambda: flow.nn.AvgPool2d(3, 2, 1), lambda: torch.nn.AvgPool2d(3, 2, 1), (2, 3, 7, 7),
     "AvgPool2d(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=False)"),
    (lambda: flow.nn.AvgPool1d(2), lambda: torch.nn.AvgPool1d(2), (2, 3, 9),
     "AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,), ceil_mode=False)"),
    (lambda: flow.nn.AvgPool3d(2, ceil_mode=True), lambda: torch.nn.AvgPool3d(2, ceil_mode=True), (2, 2, 5, 4, 5),
     "AvgPool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0), ceil_mode=True)"),
    (lambda: flow.nn.AdaptiveAvgPool2d((1, 1)), lambda: torch.nn.AdaptiveAvgPool2d((1, 1)), (2, 3, 5, 4),
     "AdaptiveAvgPool2d()"),
    (lambda: flow.nn.AdaptiveAvgPool2d((None, 2)), lambda: torch.nn.AdaptiveAvgPool2d((None, 2)), (2, 3, 5, 4),
     "AdaptiveAvgPool2d()"),
    (lambda: flow.nn.AdaptiveAvgPool1d(3), lambda: torch.nn.AdaptiveAvgPool1d(3), (2, 3, 8), "AdaptiveAvgPool1d()"),
    (lambda: flow.nn.AdaptiveAvgPool3d(2), lambda: torch.nn.AdaptiveAvgPool3d(2), (2, 2, 5, 4, 3),
     "AdaptiveAvgPool3d()"),
]


@pytest.mark.parametrize("k", range(len(MODULES)))
def test_pool_modules_print_and_compute_as_torch(k):
    make, tmake, xs, text = MODULES[k]
    m, tm = make(), tmake()
    assert repr(m) == text
    x = _distinct(xs, np.float32)
    outs, grads, rs = ref.eager(m, [x])
    t_outs, t_grads = ref.torch_ref(tm, [x], rs)
    ref.assert_close(outs + grads, t_outs + t_grads, np.float32, text)


def test_pool_errors():
    with pytest.raises(ValueError, match="pad should be at most half of kernel size"):
        flow.nn.MaxPool1d(2, padding=2)(flow.tensor(_distinct((1, 1, 8), np.float32)))


def test_pools_in_a_graph_equal_eager():
    net = flow.nn.Sequential(flow.nn.MaxPool2d(3, 1, 1, dilation=1), flow.nn.AvgPool2d(2, padding=1),
                             flow.nn.AdaptiveAvgPool2d(2))

    class Forward(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.net = net

        def build(self, x):
            return self.net(x)

    x = flow.tensor(_distinct((2, 3, 7, 6), np.float32))
    np.testing.assert_allclose(Forward()(x).numpy(), net(x).numpy(), rtol=1e-6)
