"""kernels/half_products.py: float16 products on the CPU go through float32 BLAS once and round once — counted, not
timed — and are at least as close to a float64 reference as numpy's float16 loop was; bfloat16 products (float32
storage) round once after the float32 product; torch's CPU float16 matmul (float32 accumulation too) agrees."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.kernels import bfloat16 as bf16_k
from oneflow_compat.kernels import blas, conv_nd, half_products, linalg, nn

F16, F32 = np.float16, np.float32


def _rng(seed):
    return np.random.default_rng(seed)


def _half(shape, seed):
    return _rng(seed).standard_normal(shape).astype(F16)


def _order(x):
    """float16 values as integers in their order (adjacent float16 numbers differ by 1): ulp distances."""
    i = x.astype(F16).view(np.int16).astype(np.int64)
    return np.where(i < 0, -32768 - i, i)


def _ulps(y, reference):
    return np.abs(_order(y) - _order(reference))


def _count_gemm(monkeypatch):
    calls = []
    real = blas.gemm

    def counting(a, b, out, *args, **kwargs):
        calls.append((a.dtype, b.dtype, out.dtype))
        return real(a, b, out, *args, **kwargs)

    monkeypatch.setattr(blas, "gemm", counting)
    return calls


def test_float16_matmul_calls_the_float32_gemm_once(monkeypatch):
    calls = _count_gemm(monkeypatch)
    a, b = _half((128, 256), 1), _half((256, 96), 2)
    y = linalg.matmul(np, a, b)
    assert calls == [(np.dtype(F32),) * 3]
    assert y.dtype == F16
    np.testing.assert_array_equal(y, (a.astype(F32) @ b.astype(F32)).astype(F16))


def test_small_float16_matmul_takes_the_float32_dot(monkeypatch):
    seen = []
    real = linalg._DOT
    monkeypatch.setattr(linalg, "_DOT", lambda p, q: seen.append((p.dtype, q.dtype)) or real(p, q))
    a, b = _half((8, 8), 3), _half((8, 8), 4)
    y = linalg.matmul(np, a, b, transpose_b=True)
    assert seen == [(np.dtype(F32), np.dtype(F32))] and y.dtype == F16
    np.testing.assert_array_equal(y, (a.astype(F32) @ b.astype(F32).T).astype(F16))


def test_float16_conv2d_and_its_gradients_use_float32_products(monkeypatch):
    rounded = []
    real_narrow = half_products.narrow
    monkeypatch.setattr(half_products, "narrow", lambda r: rounded.append(r.dtype) or real_narrow(r))
    x, w = _half((2, 3, 12, 12), 5), _half((4, 3, 3, 3), 6)
    attrs = dict(strides=1, pads=((1, 1), (1, 1)))
    for kernel, args, kw in ((nn.conv2d, (x, w), {}),
                             (nn.conv2d_grad_input, (_half((2, 4, 12, 12), 7), w), {"input_shape": x.shape}),
                             (nn.conv2d_grad_weight, (_half((2, 4, 12, 12), 7), x), {"weight_shape": w.shape})):
        y = kernel(np, *args, **kw, **attrs)
        expected = kernel(np, *[a.astype(F32) for a in args], **kw, **attrs).astype(F16)
        assert y.dtype == F16
        np.testing.assert_array_equal(y, expected)
    # each kernel computed in float32 and rounded once (the expected values' float32 calls do not round)
    assert rounded == [np.dtype(F32)] * 3


def test_float16_conv3d_rounds_the_float32_result_once():
    x, w = _half((1, 2, 5, 5, 5), 8), _half((3, 2, 2, 2, 2), 9)
    attrs = dict(strides=(1, 1, 1), pads=((0, 0),) * 3, dilations=(1, 1, 1), data_format="NCDHW")
    y = conv_nd.conv_nd(np, x, w, **attrs)
    assert y.dtype == F16
    np.testing.assert_array_equal(y, conv_nd.conv_nd(np, x.astype(F32), w.astype(F32), **attrs).astype(F16))


def test_numpy_float16_matmul_was_a_sequential_float32_sum():
    """What the kernel returned before (numpy's float16 matmul loop): the float32 sum over k in order, rounded once
    (bit for bit, numpy 2.x) — float32 accumulation already, at loop speed. The new values differ from it only by
    the order of the float32 sums."""
    a, b = _half((30, 700), 30), _half((700, 20), 31)
    in_order = (a.astype(F32)[:, :, None] * b.astype(F32)[None]).cumsum(axis=1, dtype=F32)[:, -1]
    np.testing.assert_array_equal(np.matmul(a, b), in_order.astype(F16))


@pytest.mark.parametrize("m,k,n", [(64, 1024, 96), (48, 300, 40), (7, 3000, 5)])
def test_float16_matmul_as_close_to_float64_as_numpy_float16_loop(m, k, n):
    a, b = _half((m, k), m), _half((k, n), n)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    new = linalg.matmul(np, a, b)
    old = np.matmul(a, b)
    # each within the float32 summation bound (k·eps32·Σ|a||b|) plus half a float16 ulp of the float64 product
    bound = k * np.finfo(F32).eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + \
        np.spacing(np.abs(exact).astype(F16)).astype(np.float64) / 2
    for y in (new, old):
        assert np.all(np.abs(y.astype(np.float64) - exact) <= bound)
    # and almost everywhere the same float16 numbers (both round a float32 sum)
    few = max(2, new.size // 100)
    assert (new != old).sum() <= few
    reference = exact.astype(F16)
    assert (new != reference).sum() <= few and (old != reference).sum() <= few


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("m,k,n", [(64, 1024, 96), (33, 257, 65)])
def test_float16_matmul_agrees_with_torch_cpu(m, k, n):
    torch = _torch()
    a, b = _half((m, k), 10 + m), _half((k, n), 11 + n)
    y = flow.matmul(flow.tensor(a), flow.tensor(b)).numpy()
    t = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    assert y.dtype == F16 and t.dtype == F16
    # both accumulate in float32 in different orders: equal but where the float32 sums round to different float16
    # numbers, which their float32 summation error bounds (k·eps32·Σ|a||b|) plus one float16 ulp cover
    assert (y == t).mean() >= 0.99
    bound = k * np.finfo(F32).eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    ulp = np.spacing(np.maximum(np.abs(y), np.abs(t)).astype(F16)).astype(np.float64)
    assert np.all(np.abs(y.astype(np.float64) - t.astype(np.float64)) <= bound + ulp)


def test_bfloat16_matmul_rounds_the_float32_product_once():
    a = bf16_k.round_to_bfloat16(np, _rng(12).standard_normal((40, 70)))
    b = bf16_k.round_to_bfloat16(np, _rng(13).standard_normal((70, 30)))
    y = flow.matmul(flow.tensor(a, dtype=flow.bfloat16), flow.tensor(b, dtype=flow.bfloat16))
    assert y.dtype is flow.bfloat16
    np.testing.assert_array_equal(y.numpy().astype(F32), bf16_k.round_to_bfloat16(np, a @ b))


def test_float16_matmul_bias_act_equals_the_unfused_ops():
    a, b, bias = _half((70, 300), 14), _half((300, 256), 15), _half((256,), 16)
    y = linalg.matmul_bias_act(np, a, b, bias, activation="relu")
    product = (a.astype(F32) @ b.astype(F32)).astype(F16)
    np.testing.assert_array_equal(y, np.maximum(product + bias, F16(0)))


def test_float16_conv2d_bias_act_equals_the_unfused_ops():
    x, w, bias = _half((2, 6, 6, 3), 17), _half((5, 3, 3, 3), 18), _half((5,), 19)
    attrs = dict(strides=1, pads=((0, 0), (0, 0)), data_format="NHWC")
    y = nn.conv2d_bias_act(np, x, w, bias, activation="relu", **attrs)
    np.testing.assert_array_equal(y, np.maximum(nn.conv2d(np, x, w, **attrs) + bias, F16(0)))


def test_float16_fused_glu_grouped_matmul_and_gradients():
    x, w, b = _half((16, 64), 20), _half((96, 64), 21), _half((96,), 22)
    y = flow._C.fused_glu(flow.tensor(x), flow.tensor(w), flow.tensor(b), activation="none").numpy()
    hidden = ((x.astype(F32) @ w.astype(F32).T).astype(F16) + b)
    np.testing.assert_array_equal(y, hidden[:, :48] * hidden[:, 48:])
    (g,) = flow._C.grouped_matmul_bias([flow.tensor(x)], [flow.tensor(w)], [flow.tensor(b)])
    np.testing.assert_array_equal(g.numpy(), hidden)
    xt, wt = flow.tensor(x, requires_grad=True), flow.tensor(w, requires_grad=True)
    dy = _half((16, 96), 23)
    flow.matmul(xt, wt, transpose_b=True).backward(flow.tensor(dy))
    assert xt.grad.dtype is flow.float16
    np.testing.assert_array_equal(xt.grad.numpy(), (dy.astype(F32) @ w.astype(F32)).astype(F16))
    np.testing.assert_array_equal(wt.grad.numpy(), (dy.astype(F32).T @ x.astype(F32)).astype(F16))


def test_float16_einsum_and_tensordot_go_through_the_float32_product():
    a, b = _half((3, 20, 30), 24), _half((3, 30, 10), 25)
    y = flow.einsum("bij,bjk->bik", flow.tensor(a), flow.tensor(b)).numpy()
    np.testing.assert_array_equal(y, np.matmul(a.astype(F32), b.astype(F32)).astype(F16))
    t = flow.tensordot(flow.tensor(a), flow.tensor(b), dims=([0, 2], [0, 1])).numpy()
    np.testing.assert_array_equal(t, np.tensordot(a.astype(F32), b.astype(F32), ([0, 2], [0, 1])).astype(F16))


def test_mixed_dtypes_and_other_floats_keep_their_kernel():
    a32, b16 = _rng(26).standard_normal((4, 5)).astype(F32), _half((5, 3), 27)
    assert not half_products.all_half(np, (a32, b16))
    assert half_products.all_half(np, (b16, None, np.arange(3)))
    y = linalg.matmul(np, a32, b16)
    assert y.dtype == F32
    np.testing.assert_array_equal(y, a32 @ b16)


def test_float16_matmul_sgd_update_takes_the_float32_product(monkeypatch):
    calls = _count_gemm(monkeypatch)
    from oneflow_compat.kernels import optim
    w0, m0 = _half((128, 160), 28), _half((128, 160), 29)
    pairs = [(_half((64, 128), 30), _half((64, 160), 31)), (_half((64, 128), 32), _half((64, 160), 33))]
    w, m = w0.copy(), m0.copy()
    optim.matmul_sgd_update(np, w, m, pairs, lr=0.1, momentum=0.9, transpose_a=True)
    assert calls == [(np.dtype(F32),) * 3] * 2
    # what blas.gemm did for float16 (the product rounded, scaled, added in float16), the product from float32
    c = F16(-float(F32(0.1) * F32(1.0)))
    expected_m = m0.copy()
    expected_m *= F16(float(F32(0.9)))
    for a, b in pairs:
        product = (a.astype(F32).T @ b.astype(F32)).astype(F16)
        product *= c
        expected_m += product
    np.testing.assert_array_equal(m, expected_m)
    np.testing.assert_array_equal(w, w0 + expected_m)
