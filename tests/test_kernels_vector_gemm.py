"""kernels/vector_gemm.py: the table-addressed products against float64 numpy on random tables (edges of the
6 x 4 blocks, several samples, accumulation onto coinciding entries), its refusals before touching memory, and
the implicit convolution of kernels/nn.py at LeNet's conv2 shape (16-lane vectors, the path the CPU takes)
against the direct definition."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import nn as K
from oneflow_compat.kernels import vector_gemm as V

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kernels_nn import conv_reference  # noqa: E402
from test_kernels_nn_jit import set_implicit  # noqa: E402

pytestmark = pytest.mark.skipif(not V.AVAILABLE, reason="numba (llvmlite) is not installed or ONEFLOW_COMPAT_JIT=0")


def reference(a, a_rows, a_k, b, b_k, b_cols, c, c_rows, c_cols, samples, strides, accumulate, lanes):
    """The docstring's definition, entry by entry, in float64 (np.add.at: coinciding entries all add up)."""
    out = c.astype(np.float64)
    lane = np.arange(lanes)
    for s in range(samples):
        a_s = a.astype(np.float64)[s * strides[0] + a_rows[:, None] + a_k[None, :]]          # (M, K)
        b_s = b.astype(np.float64)[s * strides[1] + b_k[:, None, None] + b_cols[None, :, None] + lane]  # (K, NV, L)
        prod = np.einsum("mk,kvl->mvl", a_s, b_s)
        where = s * strides[2] + c_rows[:, None, None] + c_cols[None, :, None] + lane
        if accumulate:
            np.add.at(out, where, prod)
        else:
            out[where] = prod
    return out


def random_case(rng, m, k, nv, lanes, samples):
    """Offsets drawn at random (rows, k and columns interleaved anywhere in their arrays), c entries distinct."""
    a = rng.standard_normal(samples * 64 + 500).astype(np.float32)
    b = rng.standard_normal(samples * 64 + 700 + lanes).astype(np.float32)
    a_rows, a_k = rng.integers(0, 250, m), rng.integers(0, 250, k)
    b_k, b_cols = rng.integers(0, 350, k), rng.integers(0, 350, nv)
    c_cols = np.arange(nv) * lanes
    c_rows = rng.permutation(m) * nv * lanes + 3
    c = rng.standard_normal(samples * m * nv * lanes + 3 + (samples - 1) * 7).astype(np.float32)
    tables = [t.astype(np.int64) for t in (a_rows, a_k, b_k, b_cols, c_rows, c_cols)]
    return a, b, c, tables


@pytest.mark.parametrize("lanes", [1, 16])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("m,k,nv,samples", [(1, 1, 1, 1), (6, 9, 4, 1), (13, 7, 5, 3), (5, 40, 11, 2),
                                             (25, 3, 2, 4)])
def test_products_match_the_definition(lanes, accumulate, m, k, nv, samples):
    rng = np.random.default_rng(m * 100 + k * 10 + nv + lanes)
    a, b, c, (a_rows, a_k, b_k, b_cols, c_rows, c_cols) = random_case(rng, m, k, nv, lanes, samples)
    c_stride = m * nv * lanes + 7 if samples > 1 else 0
    c = np.resize(c, max(c.size, (samples - 1) * c_stride + m * nv * lanes + 3)).astype(np.float32)
    strides = (64, 64, c_stride)
    expected = reference(a, a_rows, a_k, b, b_k, b_cols, c, c_rows, c_cols, samples, strides, accumulate, lanes)
    got = V.gemm(a, a_rows, a_k, b, b_k, b_cols, c, c_rows, c_cols, samples=samples, strides=strides,
                 accumulate=accumulate, lanes=lanes)
    assert got is c
    np.testing.assert_allclose(c, expected, rtol=2e-5, atol=2e-5 * np.sqrt(k))


@pytest.mark.parametrize("lanes", [1, 16])
def test_accumulation_adds_every_contribution_to_coinciding_entries(lanes):
    """The input gradient's scatter-add: rows (and samples, with c's stride 0) that address the same entries of c
    inside one block and across blocks all land."""
    rng = np.random.default_rng(3)
    m, k, nv, samples = 14, 6, 6, 3
    a = rng.standard_normal(samples * 100 + 200).astype(np.float32)
    b = rng.standard_normal(300 + nv * lanes).astype(np.float32)
    a_rows, a_k = rng.integers(0, 100, m).astype(np.int64), rng.integers(0, 100, k).astype(np.int64)
    b_k, b_cols = rng.integers(0, 200, k).astype(np.int64), (np.arange(nv) * lanes).astype(np.int64)
    c_rows = (rng.integers(0, 3, m) * lanes).astype(np.int64)   # 3 distinct row offsets for 14 rows
    c_cols = (rng.integers(0, 2, nv) * lanes).astype(np.int64)  # vectors coinciding too
    c = np.zeros(8 * lanes, np.float32)
    expected = reference(a, a_rows, a_k, b, b_k, b_cols, c, c_rows, c_cols, samples, (100, 0, 0), True, lanes)
    V.gemm(a, a_rows, a_k, b, b_k, b_cols, c, c_rows, c_cols, samples=samples, strides=(100, 0, 0),
           accumulate=True, lanes=lanes)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-4)
    assert np.count_nonzero(c) > 0


def _valid_args():
    a, b, c = np.ones(40, np.float32), np.ones(40, np.float32), np.zeros(40, np.float32)
    t = np.arange(2, dtype=np.int64)
    return [a, t, t, b, t, t, c, t * 16, t * 16]


@pytest.mark.parametrize("position,value,error,message", [
    (0, np.ones(40, np.float64), TypeError, "a must be a C-contiguous float32 numpy array"),
    (3, np.ones(80, np.float32)[::2], TypeError, "b must be a C-contiguous float32 numpy array"),
    (1, np.arange(2, dtype=np.int32), TypeError, "table a_rows must be a contiguous 1-D int64 array"),
    (4, np.arange(3, dtype=np.int64), ValueError, "table b_k has 3 entries, expected 2"),
    (7, np.arange(3, dtype=np.int64), ValueError, "table c_rows has 3 entries, expected 2"),
    (2, np.array([0, 39], dtype=np.int64), IndexError, "a is addressed at [0, 40] but holds 40 entries"),
    (5, np.array([0, 32], dtype=np.int64), IndexError, "b is addressed at [0, 40] but holds 40 entries"),
    (7, np.array([0, -1], dtype=np.int64), IndexError, "c is addressed at [-1, 23] but holds 40 entries"),
])
def test_refuses_before_touching_memory(position, value, error, message):
    args = _valid_args()
    args[position] = value
    before = args[6].copy()
    with pytest.raises(error) as info:
        V.gemm(*args, lanes=8)
    assert str(info.value) == "vector_gemm: " + message
    np.testing.assert_array_equal(args[6], before)


def test_refuses_an_output_overlapping_an_operand_and_a_sample_beyond_the_end():
    args = _valid_args()
    args[6] = args[0][:]
    with pytest.raises(ValueError, match="c overlaps an operand"):
        V.gemm(*args, lanes=8)
    args = _valid_args()
    with pytest.raises(IndexError, match=r"c is addressed at \[0, 47\] but holds 40 entries"):
        V.gemm(*args, samples=2, strides=(0, 0, 8), lanes=8)


def test_the_module_is_one_driver_over_every_block_shape():
    text = V.module_ir(16)
    assert text.count("define internal void @block_") == 24
    assert "define void @gemm(" in text and "alignstack(64)" in text


@pytest.mark.parametrize("lanes", [16, 1])
def test_implicit_convolution_at_lenet_conv2_matches_the_definition(monkeypatch, lanes):
    """Forward (with bias and relu), d weight and d input of LeNet's conv2 (C = 32, F = 64, 5 x 5, SAME) on the
    table-addressed products, against the direct definition in float64, on 2 threads' worth of samples."""
    set_implicit(monkeypatch, lanes)
    monkeypatch.setattr(K, "_CHUNK_BYTES", 100_000)  # several chunks of samples per thread
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 32, 14, 14)).astype(np.float32)
    w = (rng.standard_normal((64, 32, 5, 5)) * 0.1).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    dy = rng.standard_normal((5, 64, 14, 14)).astype(np.float32)
    pads = ((2, 2), (2, 2))
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    y = K.conv2d_bias_act(np, x, w, b, activation="relu", pads=pads)
    expected = np.maximum(conv_reference(x64, w64, (1, 1), pads, (1, 1), 1) + b.reshape(1, -1, 1, 1), 0)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
    # the adjoints: <dy, conv(x, w)> = <dx, x> = <dw, w> for every x and w (linearity), checked in float64
    dx = K.conv2d_grad_input(np, dy, w, input_shape=x.shape, pads=pads)
    dw = K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, pads=pads)
    dx_ref = K.conv2d_grad_input(np, dy64, w64, input_shape=x.shape, pads=pads)
    dw_ref = K.conv2d_grad_weight(np, dy64, x64, weight_shape=w.shape, pads=pads)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, dw_ref, rtol=1e-4, atol=2e-3)
    inner = np.vdot(dy64, conv_reference(x64, w64, (1, 1), pads, (1, 1), 1))
    assert np.isclose(np.vdot(dx_ref, x64), inner) and np.isclose(np.vdot(dw_ref, w64), inner)


@pytest.mark.skipif(not V.FAST, reason="the host has no AVX-512: the convolution keeps the BLAS path")
def test_the_convolution_takes_the_implicit_path_where_it_is_faster(monkeypatch):
    """As the CPU runtime calls it (no settings changed): float32 conv2's forward, d weight and d input each go
    through vector_gemm; float64, and float32 with a single input channel (conv1), keep the BLAS."""
    calls = []
    real = V.gemm

    def counted(*args, **kwargs):
        kind = "dW" if kwargs["strides"][2] == 0 else "dX" if kwargs.get("accumulate") else "forward"
        if kind not in calls:  # one call per range of samples
            calls.append(kind)
        return real(*args, **kwargs)
    monkeypatch.setattr(V, "gemm", counted)
    rng = np.random.default_rng(2)
    pads = ((2, 2), (2, 2))

    def all_three(x_shape, w_shape, dtype):
        x, w = rng.standard_normal(x_shape).astype(dtype), rng.standard_normal(w_shape).astype(dtype)
        dy = rng.standard_normal((x_shape[0], w_shape[0]) + x_shape[2:]).astype(dtype)
        K.conv2d(np, x, w, pads=pads)
        K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, pads=pads)
        K.conv2d_grad_input(np, dy, w, input_shape=x.shape, pads=pads)

    all_three((2, 32, 14, 14), (64, 32, 5, 5), np.float32)
    assert calls == ["forward", "dW", "dX"]
    calls.clear()
    all_three((2, 32, 14, 14), (64, 32, 5, 5), np.float64)
    all_three((2, 1, 28, 28), (32, 1, 5, 5), np.float32)
    assert calls == []
