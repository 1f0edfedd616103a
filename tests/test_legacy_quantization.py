"""`flow.quantization` (OneFlow v0.3.4/v0.4.0): observers and fake quantization against numpy written here from
OneFlow's kernel formulas, in float32 and float64 on 1 and 2 devices; the straight-through gradient; the moving
averages kept in OneFlow's variable names, updated by train jobs only.
"""
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_legacy_math import _build_error, surface  # noqa: E402


def _ref_scale(x, bits, scheme, per_layer=True):
    rows = x.reshape(1, -1) if per_layer else x.reshape(x.shape[0], -1)
    lo, hi = rows.min(1).astype(np.float64), rows.max(1).astype(np.float64)
    if scheme == "symmetric":
        return np.maximum(abs(lo), abs(hi)) / (2 ** (bits - 1) - 1), np.zeros_like(lo)
    scale = (hi - lo) / (2 ** bits - 1)
    return scale, -lo / scale


def _ref_fake(x, scale, zero, bits, scheme):
    shape = (-1,) + (1,) * (x.ndim - 1) if scale.size > 1 else ()
    s, z = scale.reshape(shape), zero.reshape(shape)
    half_away = lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)  # noqa: E731 - C's round
    if scheme == "symmetric":
        top = 2 ** (bits - 1) - 1
        return np.clip(half_away(x / s), -top, top) * s
    return (np.clip(half_away(x / s + z), 0, 2 ** bits - 1) - z) * s


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scheme", ["symmetric", "affine"])
def test_min_max_observer_and_fake_quantization(dtype, scheme):
    x = np.random.default_rng(0).standard_normal((6, 5)).astype(dtype)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    for devices in (1, 2):
        for per_layer, bits in ((True, 8), (False, 4)):
            want_s, want_z = _ref_scale(x, bits, scheme, per_layer)
            s, _, _ = surface(lambda v: flow.quantization.min_max_observer(
                v, bits, scheme, per_layer_quantization=per_layer)[0], [x], devices, wrt=[])
            z, _, _ = surface(lambda v: flow.quantization.min_max_observer(
                v, bits, scheme, per_layer_quantization=per_layer)[1], [x], devices, wrt=[])
            assert s.dtype == dtype and s.shape == ((1,) if per_layer else (6,))
            np.testing.assert_allclose(s, want_s, rtol=tol)
            np.testing.assert_allclose(z, want_z, rtol=tol, atol=tol)
            y, (g,), r = surface(lambda v: flow.quantization.fake_quantization(
                v, *flow.quantization.min_max_observer(v, bits, scheme, per_layer_quantization=per_layer),
                quantization_bit=bits, quantization_scheme=scheme), [x], devices)
            np.testing.assert_allclose(y, _ref_fake(x.astype(np.float64), want_s, want_z, bits, scheme),
                                       rtol=tol * 10, atol=tol * 10)
            np.testing.assert_array_equal(g, r)  # straight through


def test_quantization_argument_errors():
    with pytest.raises(ValueError, match="quantization_bit must be in 2..8"):
        _build_error(lambda v: flow.quantization.min_max_observer(v, 9)[0], [np.ones((2, 2))])()
    with pytest.raises(ValueError, match="'symmetric' or 'affine'"):
        _build_error(lambda v: flow.quantization.min_max_observer(v, 8, "log")[0], [np.ones((2, 2))])()


@pytest.mark.parametrize("scheme", ["symmetric", "affine"])
def test_moving_average_min_max_observer(scheme):
    """The moving extremes start at the first batch's and move by momentum 0.95; predict jobs read them only."""
    flow.clear_default_session()
    batches = [np.random.default_rng(i).standard_normal((4, 3)).astype(np.float32) * (i + 1) for i in range(3)]

    def body(x):
        return flow.quantization.moving_average_min_max_observer(x, quantization_scheme=scheme, name="obs")

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        scale, _ = body(x)
        w = flow.get_variable("w", shape=(1,), initializer=flow.zeros_initializer())
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(w * 1.0)
        return scale

    @flow.global_function()
    def predict(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        return body(x)[0]

    hi = lo = None
    for x in batches:
        bmax, bmin = float(x.max()), float(x.min())
        if scheme == "symmetric":
            bmax = bmin = max(abs(bmax), abs(bmin))
        hi = bmax if hi is None else hi * 0.95 + bmax * 0.05
        lo = bmin if lo is None else lo * 0.95 + bmin * 0.05
        got = train(x)
        want = hi / 127 if scheme == "symmetric" else (hi - lo) / 255
        np.testing.assert_allclose(got, [want], rtol=1e-5)
    names = set(flow.get_all_variables())
    assert {"obs-moving_max", "obs-moving_min", "obs-current_train_step"} <= names
    before = flow.get_all_variables()["obs-moving_max"].numpy().copy()
    predict(batches[0] * 100)
    np.testing.assert_array_equal(flow.get_all_variables()["obs-moving_max"].numpy(), before)
