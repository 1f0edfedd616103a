"""flow.bfloat16 (OneFlow 0.9 exposes it; numpy has none): float32 storage holding bfloat16 numbers, each tensor
made of it and each op output of it rounded to nearest even on the 16 bits kept (OneFlow's core/common/bfloat16.h),
and the CPU autocast dtype functions (get/set_autocast_cpu_dtype, bfloat16 by default)."""
import warnings

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.kernels import bfloat16 as bf16_k


def _numpy_bfloat16(x):
    """An independent reference: the nearest bfloat16 (ties to even) by exhaustive comparison of the two
    candidates bracketing each float32."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    low = (bits & 0xFFFF0000).astype(np.uint32).view(np.float32).astype(np.float64)
    high = ((bits & 0xFFFF0000) + 0x10000).astype(np.uint32).view(np.float32).astype(np.float64)
    v = x.astype(np.float64)
    d_low, d_high = np.abs(v - low), np.abs(high - v)
    low_even = ((bits >> 16) & 1) == 0
    pick_low = (d_low < d_high) | ((d_low == d_high) & low_even)
    return np.where(pick_low, low, high).astype(np.float32)


def test_rounding_is_nearest_even_and_nan_is_quiet():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20000).astype(np.float32) * 100,
                        np.array([1.00390625, 1.01171875, -1.00390625, 0.0, -0.0, 1e-40, 65504.0], np.float32)])
    np.testing.assert_array_equal(bf16_k.round_to_bfloat16(np, x), _numpy_bfloat16(x))
    # ties: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one (1); 1 + 3·2^-8 to 1 + 2^-6
    np.testing.assert_array_equal(bf16_k.round_to_bfloat16(np, np.array([1.00390625, 1.01171875], np.float32)),
                                  [1.0, 1.015625])
    out = bf16_k.round_to_bfloat16(np, np.array([np.nan, np.inf, -np.inf], np.float32))
    assert out.view(np.uint32)[0] == 0x7FC00000 and np.isposinf(out[1]) and np.isneginf(out[2])


def test_tensors_of_bfloat16_hold_bfloat16_numbers():
    a = np.array([1.00390625, 3.14159, -2.5e-3, 300.7], np.float32)
    x = flow.tensor(a, dtype=flow.bfloat16)
    assert x.dtype is flow.bfloat16 and repr(flow.bfloat16) == "oneflow.bfloat16"
    np.testing.assert_array_equal(x.numpy(), _numpy_bfloat16(a))
    np.testing.assert_array_equal(flow.tensor(a).bfloat16().numpy(), _numpy_bfloat16(a))
    np.testing.assert_array_equal(flow.tensor(a).to(flow.bfloat16).numpy(), _numpy_bfloat16(a))
    r = flow.randn(4, 5, dtype=flow.bfloat16).numpy()
    np.testing.assert_array_equal(r, _numpy_bfloat16(r))
    assert flow.ones(2, dtype=flow.bfloat16).dtype is flow.bfloat16
    back = x.to(flow.float32)
    assert back.dtype is flow.float32
    np.testing.assert_array_equal(back.numpy(), _numpy_bfloat16(a))
    g = flow.tensor(a, dtype=flow.bfloat16, placement=flow.placement("cpu", [0]), sbp=flow.sbp.broadcast)
    assert g.dtype is flow.bfloat16
    np.testing.assert_array_equal(g.numpy(), _numpy_bfloat16(a))


def test_every_op_output_is_rounded_and_promotion_is_oneflows():
    a, b = np.random.default_rng(1).standard_normal((2, 6)).astype(np.float32)
    x, y = flow.tensor(a, dtype=flow.bfloat16), flow.tensor(b, dtype=flow.bfloat16)
    xa, yb = _numpy_bfloat16(a), _numpy_bfloat16(b)
    np.testing.assert_array_equal((x + y).numpy(), _numpy_bfloat16(xa + yb))
    np.testing.assert_array_equal((x * y).numpy(), _numpy_bfloat16(xa * yb))
    np.testing.assert_array_equal(flow.exp(x).numpy(), _numpy_bfloat16(np.exp(xa)))
    np.testing.assert_array_equal(((x + y) * x).numpy(), _numpy_bfloat16(_numpy_bfloat16(xa + yb) * xa))
    assert (x + y).dtype is flow.bfloat16 and (x * 2.5).dtype is flow.bfloat16
    assert (x + flow.ones(6)).dtype is flow.float32  # with float32: float32
    assert (x + flow.ones(6, dtype=flow.float16)).dtype is flow.float32  # with float16: float32 (as torch)
    assert (x + flow.ones(6, dtype=flow.float64)).dtype is flow.float64
    assert (x + flow.ones(6, dtype=flow.int64)).dtype is flow.bfloat16


def test_against_torch_bfloat16():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    x, t = flow.tensor(a, dtype=flow.bfloat16), torch.tensor(a).bfloat16()
    for f in (lambda m, v: m.tanh(v) * v + 1.5, lambda m, v: m.sigmoid(v) / (v * v + 1), lambda m, v: v.sum(1)):
        np.testing.assert_array_equal(f(flow, x).numpy(), f(torch, t).float().numpy())
    w = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)
    got = flow.matmul(x, flow.tensor(w, dtype=flow.bfloat16)).numpy()
    want = (t @ torch.tensor(w).bfloat16()).float().numpy()
    np.testing.assert_allclose(got, want, rtol=2 ** -7)  # (one bfloat16 step: the summation order may differ)
    np.testing.assert_array_equal(got, _numpy_bfloat16(got))


def test_the_gradient_through_a_bfloat16_cast():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(4).standard_normal(5).astype(np.float32)
    x, t = flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ((x.bfloat16() * 3.3) ** 2).sum().backward()
    ((t.bfloat16() * 3.3) ** 2).sum().backward()
    assert x.grad.dtype is flow.float32
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_autocast_cpu_dtype_functions():
    assert flow.get_autocast_cpu_dtype() is flow.bfloat16  # OneFlow 0.9's default (core/framework/autocast.cpp)
    try:
        flow.set_autocast_cpu_dtype(flow.float16)
        assert flow.get_autocast_cpu_dtype() is flow.float16
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scope = flow.autocast("cpu")
        assert scope.fast_dtype is flow.float16 and scope.enabled is False  # 0.9 disables CPU autocast
        assert "CPU autocast is not supported currently" in str(caught[0].message)
    finally:
        flow.set_autocast_cpu_dtype(flow.bfloat16)
    with pytest.warns(UserWarning, match="CPU autocast is not supported currently"):
        assert flow.autocast("cpu", dtype=flow.bfloat16).fast_dtype is flow.bfloat16
