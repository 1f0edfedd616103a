"""The compiled paths of kernels/nn.py (numba loops of kernels/nn_jit.py, chunked per sample) against the numpy
path, which is the reference and the fallback without numba: the same values on every convolution and pooling
case of test_kernels_nn.py, float32 and float64, NCHW and NHWC, ties included; and the fused kernels against the
ops they replace."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import activation as A
from oneflow_compat.kernels import elementwise as E
from oneflow_compat.kernels import nn as K

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kernels_nn import CONV_CASES, CONV_IDS, POOL_CASES, POOL_IDS, make_conv_case, to_nhwc  # noqa: E402

needs_jit = pytest.mark.skipif(not K.nn_jit.AVAILABLE, reason="numba is not installed")


def both_paths(monkeypatch, fn):
    """fn() on the numpy path (whole batch per chunk), then on the compiled path (one sample per chunk)."""
    with monkeypatch.context() as m:
        m.setattr(K.nn_jit, "AVAILABLE", False)
        m.setattr(K, "_CHUNK_BYTES_NUMPY", 10 ** 12)
        reference = fn()
    with monkeypatch.context() as m:
        m.setattr(K, "_CHUNK_BYTES", 1)
        compiled = fn()
    return reference, compiled


def set_implicit(monkeypatch, lanes):
    monkeypatch.setattr(K.vector_gemm, "FAST", True)
    monkeypatch.setattr(K, "_VECTOR_LANES", lanes)


def _layout(a, data_format):
    return a if data_format == "NCHW" else to_nhwc(a)


@needs_jit
@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["by-shape", "pixel-major"])
def test_conv_paths_agree(monkeypatch, case, data_format, dtype, layout):
    if layout == "pixel-major":
        monkeypatch.setattr(K, "_PIXEL_MAJOR_RUN", 1)
    _conv_paths_agree(monkeypatch, case, data_format, dtype)


@pytest.mark.skipif(not K.vector_gemm.AVAILABLE, reason="numba's llvmlite is not installed")
@pytest.mark.parametrize("case", [c for c in CONV_CASES if c[-1] == 1],
                         ids=[i for c, i in zip(CONV_CASES, CONV_IDS) if c[-1] == 1])
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_implicit_conv_agrees_with_numpy(monkeypatch, case, data_format):
    """The table-addressed products (float32, groups == 1) at 1-lane vectors, so that any channel count fits."""
    set_implicit(monkeypatch, lanes=1)
    _conv_paths_agree(monkeypatch, case, data_format, np.float32)


def _conv_paths_agree(monkeypatch, case, data_format, dtype):
    x, w, attrs = make_conv_case(case, dtype=dtype, seed=4)
    x, w = _layout(x, data_format), _layout(w, data_format)
    attrs["data_format"] = data_format
    y = K.conv2d(np, x, w, **attrs)
    dy = np.random.default_rng(5).standard_normal(y.shape).astype(dtype)

    def run():
        return (K.conv2d(np, x, w, **attrs),
                K.conv2d_grad_input(np, dy, w, input_shape=x.shape, **attrs),
                K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, **attrs))

    tol = 1e-5 if dtype == np.float32 else 1e-12
    for ref, got in zip(*both_paths(monkeypatch, run)):
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CONV_CASES[:4], ids=CONV_IDS[:4])
@pytest.mark.parametrize("activation", [None, "relu"])
@pytest.mark.parametrize("layout", ["by-shape", "pixel-major"])
def test_conv_bias_act_is_conv_then_bias_add_then_relu(monkeypatch, case, activation, layout):
    if layout == "pixel-major":
        monkeypatch.setattr(K, "_PIXEL_MAJOR_RUN", 1)
    x, w, attrs = make_conv_case(case, dtype=np.float32, seed=6)
    b = np.random.default_rng(7).standard_normal(w.shape[0]).astype(np.float32)
    expected = E.bias_add(np, K.conv2d(np, x, w, **attrs), b, axis=1)
    if activation == "relu":
        expected = A.relu(np, expected)
    for got in both_paths(monkeypatch, lambda: K.conv2d_bias_act(np, x, w, b, activation=activation, **attrs)):
        np.testing.assert_array_equal(got, expected)  # the same additions in the same order


@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_paths_agree_and_fused_relu_grad(monkeypatch, case, data_format, dtype):
    shape, ksize, strides, pads, ceil_mode = case
    r = np.random.default_rng(8)
    # rounded values: ties inside windows (the first maximal cell takes dy), zeros and negatives for relu
    x = _layout(np.round(r.standard_normal(shape) * 2).astype(dtype), data_format)
    attrs = dict(ksize=ksize, strides=strides, pads=pads, ceil_mode=ceil_mode, data_format=data_format)
    y = K.max_pool2d(np, x, **attrs)
    dy = r.standard_normal(y.shape).astype(dtype)

    def run():
        return (K.max_pool2d(np, x, **attrs), K.max_pool2d_grad(np, dy, x, y, **attrs),
                K.max_pool2d_relu_grad(np, dy, x, y, **attrs))

    reference, compiled = both_paths(monkeypatch, run) if K.nn_jit.AVAILABLE else (run(), run())
    np.testing.assert_array_equal(compiled[0], reference[0])
    # overlapping windows add into a cell in another order: equal up to rounding
    tol = 1e-6 if dtype == np.float32 else 1e-14
    for ref, got in zip(reference[1:], compiled[1:]):
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    # the fused kernel is relu_grad after max_pool2d_grad (x is the relu's output)
    np.testing.assert_array_equal(reference[2], A.relu_grad(np, reference[1], x))


def test_max_pool_nan_and_signed_zero_as_numpy_maximum(monkeypatch):
    # numpy's maximum: a NaN anywhere in the window wins, and of -0.0 / 0.0 the first in window order stays
    x = np.array([[[[1.0, np.nan, 2.0, 3.0],
                    [0.5, 0.0, -0.0, 1.0],
                    [-0.0, 0.0, -1.0, -2.0],
                    [-5.0, -0.0, np.nan, -3.0]]]], dtype=np.float32)
    for attrs in (dict(ksize=2, strides=2), dict(ksize=3, strides=1, pads=((1, 1), (1, 1)))):
        reference, compiled = both_paths(monkeypatch, lambda: K.max_pool2d(np, x, **attrs))
        np.testing.assert_array_equal(compiled, reference)
        np.testing.assert_array_equal(np.signbit(compiled), np.signbit(reference))
    assert np.isnan(reference).any()  # the case above reaches the NaN rule


@needs_jit
@pytest.mark.parametrize("shape", [(3, 4, 8, 6), (2, 3, 28, 28)], ids=["small", "lenet_plane"])
def test_max_pool_2x2_kernels_match_numpy_on_ties(monkeypatch, shape):
    """The 2x2 / 2 kernels (straight-line maximum, first maximum found without branches) against numpy."""
    r = np.random.default_rng(11)
    # few distinct values: most windows hold ties, and the first maximal cell in window order must take dy
    x = np.round(r.standard_normal(shape) * 1.5).astype(np.float32)
    attrs = dict(ksize=2, strides=2)
    y = K.max_pool2d(np, x, **attrs)
    dy = r.standard_normal(y.shape).astype(np.float32)

    def run():
        return (K.max_pool2d(np, x, **attrs), K.max_pool2d_grad(np, dy, x, y, **attrs),
                K.max_pool2d_relu_grad(np, dy, x, y, **attrs))

    for ref, got in zip(*both_paths(monkeypatch, run)):
        np.testing.assert_array_equal(got, ref)
