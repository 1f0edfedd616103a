"""Convolution and pooling kernels: forward against direct numpy definitions and
PyTorch (when installed), backward against float64 finite differences and PyTorch."""
import itertools
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import nn as K

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, xp  # noqa: E402,F401  (xp: fixture)


def numeric_grad(loss, x, eps=1e-6):
    """Central differences of the scalar `loss()` w.r.t. every element of x (in place)."""
    grad = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        saved = x[index]
        x[index] = saved + eps
        up = loss()
        x[index] = saved - eps
        down = loss()
        x[index] = saved
        grad[index] = (up - down) / (2 * eps)
    return grad


def to_nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


def to_nchw(a):
    return np.ascontiguousarray(a.transpose(0, 3, 1, 2))


# --- geometry ----------------------------------------------------------------------

def test_same_pads_lower_and_upper_differ_on_odd_need():
    # in 5, k 4, stride 1: out 5, need 3 -> LOWER puts 2 before, UPPER 1 before
    assert K.same_pads((5, 5), (4, 4), 1, 1, lower=True) == ((2, 1), (2, 1))
    assert K.same_pads((5, 5), (4, 4), 1, 1, lower=False) == ((1, 2), (1, 2))
    # in 7, k 3, stride 2: out 4, need (4-1)*2+3-7 = 2 -> symmetric
    assert K.same_pads((7, 6), (3, 3), 2, 1) == ((1, 1), (1, 0))
    # dilation 2, k 3 -> effective 5; in 6 stride 1: need 4
    assert K.same_pads((6, 6), (3, 3), 1, 2) == ((2, 2), (2, 2))
    # LeNet: 28, 5x5, stride 1
    assert K.same_pads((28, 28), (5, 5), 1, 1) == ((2, 2), (2, 2))
    # window smaller than stride: no padding needed
    assert K.same_pads((8, 8), (2, 2), 2, 1) == ((0, 0), (0, 0))


def test_conv_out_hw_floor_and_ceil():
    assert K.conv_out_hw((28, 28), (5, 5), 1, ((2, 2), (2, 2)), 1) == (28, 28)
    assert K.conv_out_hw((7, 8), (3, 3), 2, ((0, 0), (0, 0)), 1) == (3, 3)
    assert K.conv_out_hw((7, 8), (3, 3), 2, ((0, 0), (0, 0)), 1, ceil_mode=True) == (3, 4)
    # ceil would add a window starting in the bottom padding: dropped
    assert K.conv_out_hw((5, 5), (2, 2), 2, ((1, 1), (1, 1)), 1, ceil_mode=True) == (3, 3)
    with pytest.raises(ValueError):
        K.conv_out_hw((2, 2), (5, 5), 1, ((0, 0), (0, 0)), 1)


# --- convolution -------------------------------------------------------------------

@pytest.fixture(params=["numpy", "jit", "numpy-pixel-major", "jit-pixel-major"])
def conv_layout(request, monkeypatch):
    """Run a conv test on each of the kernels' paths: numpy (the reference, here with the whole batch in one
    chunk) and the compiled loops of nn_jit (one sample per chunk; skipped without numba), each with the patches
    in the layout the shape chooses (channel-major for these few channels) and in the pixel-major layout (every
    case with groups == 1)."""
    if request.param.startswith("jit"):
        if not K.nn_jit.AVAILABLE:
            pytest.skip("numba is not installed")
        monkeypatch.setattr(K, "_CHUNK_BYTES", 1)
    else:
        monkeypatch.setattr(K.nn_jit, "AVAILABLE", False)
        monkeypatch.setattr(K, "_CHUNK_BYTES_NUMPY", 10 ** 12)
    if request.param.endswith("pixel-major"):
        monkeypatch.setattr(K, "_PIXEL_MAJOR_RUN", 1)
    return request.param


def conv_reference(x, w, strides, pads, dilations, groups):
    """Direct definition (NCHW): y[n,f,p,q] = sum_{c,i,j} xpad[n, group(f)c, p*s+i*d, q*s+j*d] w[f,c,i,j]."""
    (top, bottom), (left, right) = pads
    xp_ = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    f, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    oh = (xp_.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp_.shape[3] - (kw - 1) * dw - 1) // sw + 1
    fg = f // groups
    y = np.zeros((x.shape[0], f, oh, ow), dtype=x.dtype)
    for g in range(groups):
        xg = xp_[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xg[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                y[:, g * fg:(g + 1) * fg] += np.einsum("ncpq,fc->nfpq", patch, w[g * fg:(g + 1) * fg, :, i, j])
    return y


# (input NCHW shape, filters, kernel, strides, pads, dilations, groups)
CONV_CASES = [
    ((2, 3, 7, 6), 4, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 3, 9, 8), 4, (3, 2), (2, 2), ((1, 0), (0, 1)), (1, 1), 1),           # stride 2, uneven pads
    ((1, 2, 9, 9), 3, (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), 1),           # dilation 2
    ((2, 4, 6, 7), 6, (3, 3), (1, 2), ((1, 1), (0, 1)), (1, 1), 2),           # groups 2
    ((1, 2, 5, 5), 3, (4, 4), (1, 1), K.same_pads((5, 5), (4, 4), 1, 1), (1, 1), 1),  # odd SAME_LOWER
    ((1, 4, 8, 7), 4, (2, 3), (2, 1), ((0, 0), (0, 0)), (2, 1), 4),           # depthwise-like, VALID
]
CONV_IDS = ["basic", "stride2", "dilation2", "groups2", "same_lower_odd", "groups4_valid"]


def make_conv_case(case, dtype=np.float64, seed=0):
    x_shape, filters, kernel, strides, pads, dilations, groups = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((filters, x_shape[1] // groups) + kernel).astype(dtype)
    attrs = dict(strides=strides, pads=pads, dilations=dilations, groups=groups)
    return x, w, attrs


@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_conv2d_forward_matches_direct_definition(case, data_format, conv_layout):
    x, w, attrs = make_conv_case(case)
    expected = conv_reference(x, w, attrs["strides"], attrs["pads"], attrs["dilations"], attrs["groups"])
    if data_format == "NCHW":
        y = K.conv2d(np, x, w, data_format="NCHW", **attrs)
    else:
        y = to_nchw(K.conv2d(np, to_nhwc(x), to_nhwc(w), data_format="NHWC", **attrs))
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)


def test_same_lower_differs_from_upper_in_result():
    x, w, attrs = make_conv_case(CONV_CASES[4])
    lower = K.conv2d(np, x, w, **attrs)
    upper = K.conv2d(np, x, w, **dict(attrs, pads=K.same_pads((5, 5), (4, 4), 1, 1, lower=False)))
    assert lower.shape == upper.shape == (1, 3, 5, 5)
    # SAME_LOWER shifts the window one cell up/left relative to SAME_UPPER
    np.testing.assert_allclose(lower[..., 1:, 1:], upper[..., :-1, :-1], rtol=1e-12)
    assert not np.allclose(lower, upper)


@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_conv2d_grads_match_finite_differences(case, data_format, conv_layout):
    x, w, attrs = make_conv_case(case, seed=1)
    if data_format == "NHWC":
        x, w = to_nhwc(x), to_nhwc(w)
    y = K.conv2d(np, x, w, data_format=data_format, **attrs)
    dy = np.random.default_rng(2).standard_normal(y.shape)

    def loss():
        return float(np.sum(K.conv2d(np, x, w, data_format=data_format, **attrs) * dy))

    dx = K.conv2d_grad_input(np, dy, w, input_shape=x.shape, data_format=data_format, **attrs)
    dw = K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, data_format=data_format, **attrs)
    assert dx.shape == x.shape and dw.shape == w.shape
    np.testing.assert_allclose(dx, numeric_grad(loss, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dw, numeric_grad(loss, w), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
def test_conv2d_float32_matches_torch(case, conv_layout):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, attrs = make_conv_case(case, dtype=np.float32, seed=3)
    (top, bottom), (left, right) = attrs["pads"]
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    yt = F.conv2d(F.pad(xt, (left, right, top, bottom)), wt, stride=attrs["strides"],
                  dilation=attrs["dilations"], groups=attrs["groups"])
    dy = np.random.default_rng(4).standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(dy))
    y = K.conv2d(np, x, w, **attrs)
    dx = K.conv2d_grad_input(np, dy, w, input_shape=x.shape, **attrs)
    dw = K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, **attrs)
    for ours, ref in ((y, yt), (dx, xt.grad), (dw, wt.grad)):
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours, ref.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_rejects_bad_groups():
    x = np.zeros((1, 3, 5, 5))
    with pytest.raises(ValueError, match="groups"):
        K.conv2d(np, x, np.zeros((4, 1, 3, 3)), strides=1, pads=0, dilations=1, groups=2)


# --- pooling -----------------------------------------------------------------------

# (input NCHW shape, ksize, strides, pads, ceil_mode)
POOL_CASES = [
    ((2, 3, 6, 6), (2, 2), (2, 2), ((0, 0), (0, 0)), False),
    ((2, 2, 7, 5), (3, 2), (2, 2), ((0, 0), (0, 0)), False),     # uneven: leftover rows/cols
    ((2, 2, 7, 5), (3, 2), (2, 2), ((0, 0), (0, 0)), True),      # ceil_mode adds partial windows
    ((1, 2, 7, 8), (3, 3), (2, 3), ((1, 1), (1, 1)), True),
    ((1, 3, 6, 7), (3, 3), (1, 2), ((1, 0), (0, 1)), False),     # asymmetric (SAME_LOWER-like) pads
    ((1, 2, 5, 5), (2, 2), (2, 2), ((1, 1), (1, 1)), True),      # ceil window in padding dropped
]
POOL_IDS = ["2x2", "uneven", "uneven_ceil", "pads_ceil", "asym_pads", "ceil_drop"]


def pool_reference(x, ksize, strides, pads, ceil_mode, kind):
    """Per output cell: max or mean over the window cells that lie inside x."""
    n, c, h, w = x.shape
    oh, ow = K.conv_out_hw((h, w), ksize, strides, pads, 1, ceil_mode)
    (top, _), (left, _) = pads
    y = np.zeros((n, c, oh, ow), dtype=x.dtype)
    for p, q in itertools.product(range(oh), range(ow)):
        r0, c0 = p * strides[0] - top, q * strides[1] - left
        cells = x[:, :, max(r0, 0):min(r0 + ksize[0], h), max(c0, 0):min(c0 + ksize[1], w)]
        y[:, :, p, q] = cells.max(axis=(2, 3)) if kind == "max" else cells.mean(axis=(2, 3))
    return y


def distinct_input(shape, seed):
    """Values far apart relative to the finite-difference step, so arg-maxes are stable."""
    rng = np.random.default_rng(seed)
    return rng.permutation(np.prod(shape)).reshape(shape) * 0.1 + rng.uniform(-0.01, 0.01, shape)


@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_forward_matches_definition(case, data_format, kind):
    shape, ksize, strides, pads, ceil_mode = case
    x = np.random.default_rng(5).standard_normal(shape) - 3.0  # all-negative-ish: padding must not win
    attrs = dict(ksize=ksize, strides=strides, pads=pads, ceil_mode=ceil_mode)
    pool = K.max_pool2d if kind == "max" else K.avg_pool2d
    if data_format == "NCHW":
        y = pool(np, x, data_format="NCHW", **attrs)
    else:
        y = to_nchw(pool(np, to_nhwc(x), data_format="NHWC", **attrs))
    np.testing.assert_allclose(y, pool_reference(x, ksize, strides, pads, ceil_mode, kind), rtol=1e-12)


@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_pool_grads_match_finite_differences(case, data_format):
    shape, ksize, strides, pads, ceil_mode = case
    x = distinct_input(shape, seed=6)
    if data_format == "NHWC":
        x = to_nhwc(x)
    attrs = dict(ksize=ksize, strides=strides, pads=pads, ceil_mode=ceil_mode, data_format=data_format)
    y_max = K.max_pool2d(np, x, **attrs)
    y_avg = K.avg_pool2d(np, x, **attrs)
    dy = np.random.default_rng(7).standard_normal(y_max.shape)
    d_max = K.max_pool2d_grad(np, dy, x, y_max, **attrs)
    d_avg = K.avg_pool2d_grad(np, dy, input_shape=x.shape, **attrs)
    np.testing.assert_allclose(
        d_max, numeric_grad(lambda: float(np.sum(K.max_pool2d(np, x, **attrs) * dy)), x), atol=1e-7)
    np.testing.assert_allclose(
        d_avg, numeric_grad(lambda: float(np.sum(K.avg_pool2d(np, x, **attrs) * dy)), x), atol=1e-7)


def test_max_pool_grad_ties_go_to_first_cell_in_window_order():
    x = np.array([[[[1.0, 5.0, 5.0],
                    [5.0, 5.0, 2.0],
                    [0.0, 0.0, 0.0]]]])
    attrs = dict(ksize=(2, 2), strides=(1, 1), pads=((0, 0), (0, 0)))
    y = K.max_pool2d(np, x, **attrs)
    np.testing.assert_array_equal(y[0, 0], [[5.0, 5.0], [5.0, 5.0]])
    dy = np.array([[[[1.0, 10.0], [100.0, 1000.0]]]])
    dx = K.max_pool2d_grad(np, dy, x, y, **attrs)
    # window (0,0): cells 1,5 / 5,5 -> first 5 at (0,1); window (0,1): (0,1);
    # window (1,0): (1,0); window (1,1): first 5 in row-major order is (1,1)
    expected = np.zeros_like(x)
    expected[0, 0, 0, 1] = 1.0 + 10.0
    expected[0, 0, 1, 0] = 100.0
    expected[0, 0, 1, 1] = 1000.0
    np.testing.assert_array_equal(dx, expected)


def test_max_pool_padding_never_wins_even_for_minus_inf():
    x = np.full((1, 1, 2, 2), -np.inf)
    x[0, 0, 1, 1] = -1.0
    attrs = dict(ksize=(2, 2), strides=(2, 2), pads=((1, 1), (1, 1)))
    y = K.max_pool2d(np, x, **attrs)
    np.testing.assert_array_equal(y[0, 0], [[-np.inf, -np.inf], [-np.inf, -1.0]])
    dx = K.max_pool2d_grad(np, np.ones_like(y), x, y, **attrs)
    # every window's gradient lands on a real cell, none is lost in the padding
    assert dx.sum() == 4.0
    np.testing.assert_array_equal(dx[0, 0], [[1.0, 1.0], [1.0, 1.0]])


def test_avg_pool_divides_by_valid_cells_only():
    x = np.ones((1, 1, 3, 3))
    y = K.avg_pool2d(np, x, ksize=(3, 3), strides=(2, 2), pads=((1, 1), (1, 1)))
    np.testing.assert_array_equal(y, np.ones((1, 1, 2, 2)))  # padding zeros are not averaged in


def test_pool_rejects_bad_ksize_length():
    with pytest.raises(ValueError, match="ksize should be of length 1 or 2 but was 3"):
        K.max_pool2d(np, np.zeros((1, 1, 4, 4)), ksize=(2, 2, 2), strides=2)


@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[3][0][0] == c[3][0][1] and c[3][1][0] == c[3][1][1]],
                         ids=lambda c: str(c[0]) + ("_ceil" if c[4] else ""))
def test_pools_float32_match_torch(case):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    shape, ksize, strides, pads, ceil_mode = case
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    padding = (pads[0][0], pads[1][0])
    attrs = dict(ksize=ksize, strides=strides, pads=pads, ceil_mode=ceil_mode)
    for kind in ("max", "avg"):
        xt = torch.tensor(x, requires_grad=True)
        if kind == "max":
            yt = F.max_pool2d(xt, ksize, strides, padding=padding, ceil_mode=ceil_mode)
        else:
            yt = F.avg_pool2d(xt, ksize, strides, padding=padding, ceil_mode=ceil_mode, count_include_pad=False)
        dy = np.random.default_rng(9).standard_normal(tuple(yt.shape)).astype(np.float32)
        yt.backward(torch.tensor(dy))
        if kind == "max":
            y = K.max_pool2d(np, x, **attrs)
            dx = K.max_pool2d_grad(np, dy, x, y, **attrs)
        else:
            y = K.avg_pool2d(np, x, **attrs)
            dx = K.avg_pool2d_grad(np, dy, input_shape=x.shape, **attrs)
        assert y.dtype == dx.dtype == np.float32
        np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-6)


# --- every array module, and empty pieces --------------------------------------------------------------------

@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_kernels_on_each_array_module_match_numpy(xp, data_format, conv_layout):
    x, w, attrs = make_conv_case(CONV_CASES[-1], dtype=np.float32, seed=10)
    if data_format == "NHWC":
        x, w = to_nhwc(x), to_nhwc(w)
    attrs = dict(attrs, data_format=data_format)
    y = K.conv2d(np, x, w, **attrs)
    dy = np.random.default_rng(11).standard_normal(y.shape).astype(np.float32)
    pool = dict(ksize=(3, 2), strides=(2, 2), pads=((1, 0), (0, 1)), ceil_mode=True, data_format=data_format)
    y_max, y_avg = K.max_pool2d(np, x, **pool), K.avg_pool2d(np, x, **pool)
    dp = np.random.default_rng(12).standard_normal(y_max.shape).astype(np.float32)
    pairs = [
        (K.conv2d(xp, xp.asarray(x), xp.asarray(w), **attrs), y),
        (K.conv2d_grad_input(xp, xp.asarray(dy), xp.asarray(w), input_shape=x.shape, **attrs),
         K.conv2d_grad_input(np, dy, w, input_shape=x.shape, **attrs)),
        (K.conv2d_grad_weight(xp, xp.asarray(dy), xp.asarray(x), weight_shape=w.shape, **attrs),
         K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, **attrs)),
        (K.max_pool2d(xp, xp.asarray(x), **pool), y_max),
        (K.avg_pool2d(xp, xp.asarray(x), **pool), y_avg),
        (K.max_pool2d_grad(xp, xp.asarray(dp), xp.asarray(x), xp.asarray(y_max), **pool),
         K.max_pool2d_grad(np, dp, x, y_max, **pool)),
        (K.avg_pool2d_grad(xp, xp.asarray(dp), input_shape=x.shape, **pool),
         K.avg_pool2d_grad(np, dp, input_shape=x.shape, **pool)),
    ]
    for ours, reference in pairs:
        assert ours.dtype == np.float32 and ours.shape == reference.shape
        np.testing.assert_allclose(host(ours), reference, rtol=1e-5, atol=1e-5)


def test_empty_pieces_give_zeros_of_the_right_shape():
    # a split axis shorter than the device count leaves some device an empty piece: its share is zeros
    attrs = dict(strides=1, pads=((1, 1), (1, 1)), dilations=1, groups=1)
    x, w = np.ones((2, 0, 5, 5)), np.ones((4, 0, 3, 3))  # no input channels on this device
    y = K.conv2d(np, x, w, **attrs)
    assert y.shape == (2, 4, 5, 5) and not y.any()
    dy = np.ones((2, 4, 5, 5))
    assert K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, **attrs).shape == (4, 0, 3, 3)
    dx = K.conv2d_grad_input(np, np.ones((2, 0, 5, 5)), np.ones((0, 3, 3, 3)), input_shape=(2, 3, 5, 5), **attrs)
    assert dx.shape == (2, 3, 5, 5) and not dx.any()
    empty_batch = K.conv2d(np, np.ones((0, 3, 5, 5)), np.ones((4, 3, 3, 3)), **attrs)
    assert empty_batch.shape == (0, 4, 5, 5)


def test_gradient_kernels_take_the_batch_size_from_dy():
    # a dynamic (mirrored) batch may hold fewer rows than the static input shape
    attrs = dict(strides=1, pads=((0, 0), (0, 0)), dilations=1, groups=1)
    w = np.random.default_rng(13).standard_normal((2, 3, 3, 3))
    x = np.random.default_rng(14).standard_normal((3, 3, 6, 6))
    dy = np.random.default_rng(15).standard_normal((3, 2, 4, 4))
    dx = K.conv2d_grad_input(np, dy, w, input_shape=(8, 3, 6, 6), **attrs)
    np.testing.assert_array_equal(dx, K.conv2d_grad_input(np, dy, w, input_shape=x.shape, **attrs))
    pool = dict(ksize=2, strides=2)
    dp = np.ones((3, 3, 3, 3))
    assert K.avg_pool2d_grad(np, dp, input_shape=(8, 3, 6, 6), **pool).shape == (3, 3, 6, 6)
