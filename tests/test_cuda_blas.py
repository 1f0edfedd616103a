"""The device GEMMs of kernels/cuda_blas.py (a cuBLAS handle of the project's own, called through ctypes, because
CuPy's cuBLAS wrappers refuse a capturing stream) against numpy, for every operand layout: on the strict fake
device, whose fake cuBLAS reads memory by address, operation, leading dimension and batch stride exactly as cuBLAS
does (tests/strict_device.py), and on a real GPU with CuPy where one is usable (the suite under
ONEFLOW_COMPAT_DEVICE=gpu), eager and inside a stream capture replayed after its operands changed."""
import numpy as np
import pytest

import strict_device
from kernel_testing import CUPY
from oneflow_compat.kernels import cuda_blas

MODULES = [pytest.param("fake", id="fake"),
           pytest.param("cupy", id="cupy", marks=pytest.mark.skipif(CUPY is None, reason="CuPy with a usable GPU "
                                                                                          "is not available"))]


@pytest.fixture(params=MODULES)
def xp(request):
    return strict_device.module(gpus=1) if request.param == "fake" else CUPY


def _r(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# (id, a maker, b maker): makers take (xp, host array) -> the device operand of that layout
def _up(xp, a):
    return xp.asarray(a)


def _t(xp, a):  # the last two axes swapped back from a C-ordered array holding them swapped: columns contiguous
    return xp.swapaxes(xp.asarray(np.ascontiguousarray(np.swapaxes(a, -1, -2))), -1, -2)


def _f(xp, a):
    return xp.asfortranarray(xp.asarray(a))


def _every_other_column(xp, a):  # neither rows nor columns contiguous: copied first
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return xp.asarray(wide)[..., ::2]


def _row_slice(xp, a):  # rows contiguous with a leading dimension larger than the row
    wide = np.zeros(a.shape[:-1] + (a.shape[-1] + 3,), a.dtype)
    wide[..., :a.shape[-1]] = a
    return xp.asarray(wide)[..., :a.shape[-1]]


CASES = [
    ("2d", (7, 5), (5, 3), _up, _up),
    ("a_transposed", (7, 5), (5, 3), _t, _up),
    ("b_transposed", (7, 5), (5, 3), _up, _t),
    ("both_transposed", (7, 5), (5, 3), _t, _t),
    ("fortran", (7, 5), (5, 3), _f, _f),
    ("leading_dimension", (7, 5), (5, 3), _row_slice, _row_slice),
    ("strided_copied", (7, 5), (5, 3), _every_other_column, _up),
    ("row_vector", (1, 5), (5, 3), _up, _up),
    ("column_result", (7, 5), (5, 1), _up, _t),
    ("dense_layer", (100, 784), (784, 512), _up, _up),
    ("dense_weight_grad", (100, 512), (100, 10), _up, _up),  # a.T @ b: see the test
    ("batched", (4, 7, 5), (4, 5, 3), _up, _up),
    ("batched_transposed_b", (4, 7, 5), (4, 5, 3), _up, _t),
    ("batched_broadcast_a", (1, 7, 5), (6, 1, 5, 3), _up, _up),  # the convolution's weight times its patches
    ("batched_broadcast_b", (6, 2, 7, 5), (5, 3), _up, _up),
    ("batched_partly_broadcast", (6, 1, 7, 5), (1, 4, 5, 3), _up, _up),  # flattens to no single stride: copied
    ("batched_transposed_a", (3, 1, 7, 5), (3, 1, 5, 3), _t, _up),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_equal_numpy(xp, case, dtype):
    name, sa, sb, make_a, make_b = case
    a, b = _r(sa, dtype, 1), _r(sb, dtype, 2)
    if name == "dense_weight_grad":
        a = np.ascontiguousarray(a.T)  # a (512, 100) read through its transpose, as the weight gradient reads it
        da, db = xp.asarray(np.ascontiguousarray(a.T)).T, make_b(xp, b)
    else:
        da, db = make_a(xp, a), make_b(xp, b)
    got = cuda_blas.matmul(xp, da, db)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == want.shape and got.dtype == dtype
    k = a.shape[-1]  # (float32 sums of k products of unit normals: absolute errors grow with k)
    tolerances = dict(rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6 * k if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(got.get(), want, **tolerances)
    # the same layouts again: the call planned by the first (kernels/cuda_blas.py's _Plan), on these operands
    da *= -2  # (in place: the same layouts, new values)
    again = cuda_blas.matmul(xp, da, db)
    assert again.shape == want.shape and again is not got
    np.testing.assert_allclose(again.get(), -2 * want, **tolerances)


def test_float_products_go_through_the_handle_and_other_dtypes_through_the_module(monkeypatch):
    xp = strict_device.install(monkeypatch, "gpu", allow_syncs=True, gpus=1)
    L = strict_device.Launches
    a, b = _r((4, 3)), _r((3, 2))
    cuda_blas.matmul(xp, xp.asarray(a), xp.asarray(b))
    cuda_blas.matmul(xp, xp.asarray(a[None].repeat(2, 0)), xp.asarray(b))
    cuda_blas.matmul(xp, xp.asarray(a.astype(np.float64)), xp.asarray(b.astype(np.float64)))
    assert L.by_name == {"cublas:cublasSgemm_v2": 1, "cublas:cublasSgemmStridedBatched": 1,
                         "cublas:cublasDgemm_v2": 1}
    ints = cuda_blas.matmul(xp, xp.asarray(np.arange(6).reshape(2, 3)), xp.asarray(np.arange(3).reshape(3, 1)))
    mixed = cuda_blas.matmul(xp, xp.asarray(a), xp.asarray(b.astype(np.float64)))
    np.testing.assert_array_equal(ints.get(), np.arange(6).reshape(2, 3) @ np.arange(3).reshape(3, 1))
    assert mixed.dtype == np.float64
    np.testing.assert_allclose(mixed.get(), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-6)
    assert L.by_name["strict_device.matmul"] == 2  # CuPy's own products: its integer kernels, a promotion


def test_alpha_zero_sizes_and_out(xp):
    a, b = _r((6, 4)), _r((4, 5))
    np.testing.assert_allclose(cuda_blas.matmul(xp, xp.asarray(a), xp.asarray(b), alpha=0.5).get(),
                               0.5 * (a @ b), rtol=1e-5, atol=1e-6)
    k0 = cuda_blas.matmul(xp, xp.asarray(np.ones((3, 0), np.float32)), xp.asarray(np.ones((0, 2), np.float32)))
    np.testing.assert_array_equal(k0.get(), np.zeros((3, 2), np.float32))
    assert cuda_blas.matmul(xp, xp.asarray(np.ones((0, 4), np.float32)), xp.asarray(b)).shape == (0, 5)
    out = xp.asarray(np.full((6, 5), 7, np.float32))
    assert cuda_blas.matmul(xp, xp.asarray(a), xp.asarray(b), out=out) is out
    np.testing.assert_allclose(out.get(), a @ b, rtol=1e-5, atol=1e-6)
    wide = xp.asarray(np.full((6, 8), 7, np.float32))
    cuda_blas.matmul(xp, xp.asarray(a), xp.asarray(b), out=wide[:, :5])  # a strided out: written through a copy
    np.testing.assert_allclose(wide.get()[:, :5], a @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(wide.get()[:, 5:], np.full((6, 3), 7, np.float32))


def test_mismatched_operands_get_the_modules_own_error(xp):
    with pytest.raises(ValueError):
        cuda_blas.matmul(xp, xp.asarray(_r((3, 4))), xp.asarray(_r((5, 2))))


def test_the_fake_cublas_refuses_what_cublas_would_misread():
    xp = strict_device.module(gpus=1)
    lib = cuda_blas.library(xp)
    handle = lib.handle()
    one, zero = lib.scalar(cuda_blas.ctypes.c_float, 1), lib.scalar(cuda_blas.ctypes.c_float, 0)
    m = xp.asarray(np.ones((2, 3), np.float32))
    c = xp.empty((2, 2), np.float32)
    # a leading dimension below the rows cuBLAS reads: CUBLAS_STATUS_INVALID_VALUE
    with pytest.raises(cuda_blas.CublasError, match=r"cublasSgemm_v2 failed: cuBLAS status 7"):
        lib.call("cublasSgemm_v2", handle, 0, 0, 2, 2, 3, one, m.data.ptr, 1, m.data.ptr, 3, zero, c.data.ptr, 2)
    # reading past the operand's memory (a batch stride too large)
    with pytest.raises(ValueError, match="cuBLAS cublasSgemmStridedBatched A: .* leave the 24-byte array"):
        lib.call("cublasSgemmStridedBatched", handle, 0, 0, 2, 2, 3, one, m.data.ptr, 2, 6, m.data.ptr, 3, 0,
                 zero, c.data.ptr, 2, 0, 2)


def test_a_product_captured_with_the_handle_replays_on_new_operands(xp):
    """Inside a stream capture (where CuPy's own products raise), the handle's products are captured; the graph,
    launched after the operands changed in place, computes them on the new values."""
    a, b = _r((8, 6)), _r((4, 6, 5))
    da, db = xp.asarray(a), xp.asarray(b)
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        cuda_blas.prepare(xp)  # the handle bound to the stream (and its workspace set) before the capture
        stream.begin_capture(xp.cuda.runtime.streamCaptureModeRelaxed)  # (allocations inside: relaxed mode)
        plain = cuda_blas.matmul(xp, da, db[0])
        batched = cuda_blas.matmul(xp, da[None], db)
        transposed = cuda_blas.matmul(xp, db.transpose(0, 2, 1), da.T[None])
        graph = stream.end_capture()
        da *= 2
        db += 1
        graph.launch()
        graph.launch()  # (the fake's first launch after its capture replays nothing: its capture ran the steps)
        stream.synchronize()
    a2, b2 = 2 * a.astype(np.float64), b.astype(np.float64) + 1
    np.testing.assert_allclose(plain.get(), a2 @ b2[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(batched.get(), a2[None] @ b2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(transposed.get(), b2.transpose(0, 2, 1) @ a2.T[None], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layouts", [("c", "c"), ("t", "c"), ("c", "t")], ids=["plain", "a.T", "b.T"])
def test_an_update_gemm_reads_alpha_and_beta_from_the_device_when_it_runs(xp, dtype, layouts):
    """gemm_update: c ← alpha·(a @ b) + beta·c with alpha and beta in device memory (cuBLAS's device pointer
    mode): the fused SGD step of a dense weight, -lr·g added by the gradient's own GEMM. Captured, each replay reads
    the values the device scalars hold then (the learning rate of each call)."""
    a, b, c = _r((7, 5), dtype, 1), _r((5, 3), dtype, 2), _r((7, 3), dtype, 3)
    make = {"c": _up, "t": _t}
    da, db, dc = make[layouts[0]](xp, a), make[layouts[1]](xp, b), xp.asarray(c)
    alpha, beta = xp.asarray(np.array(-0.25, dtype)), xp.asarray(np.array(1.0, dtype))
    assert cuda_blas.gemm_update(xp, da, db, dc, alpha, beta)
    want = c.astype(np.float64) - 0.25 * (a.astype(np.float64) @ b)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(dc.get(), want, rtol=rtol, atol=rtol)
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        cuda_blas.prepare(xp)
        stream.begin_capture(xp.cuda.runtime.streamCaptureModeRelaxed)
        assert cuda_blas.gemm_update(xp, da, db, dc, alpha, beta)
        graph = stream.end_capture()
        graph.launch()  # (the fake's first launch replays nothing: its capture ran the GEMM)
        alpha[...] = -0.5  # a new rate, written on the device (as the step scalars' copy up does)
        graph.launch()
        stream.synchronize()
    want = want - 0.25 * (a.astype(np.float64) @ b) - 0.5 * (a.astype(np.float64) @ b)
    np.testing.assert_allclose(dc.get(), want, rtol=rtol, atol=rtol)


def test_an_update_gemm_declines_what_it_does_not_take(xp):
    a, b = xp.asarray(_r((4, 3))), xp.asarray(_r((3, 2)))
    one = xp.asarray(np.array(1.0, np.float32))
    c = xp.asarray(_r((4, 2)))
    before = c.get()
    assert not cuda_blas.gemm_update(xp, a, b, xp.asarray(_r((2, 4))).T, one, one)  # c not C-contiguous
    assert not cuda_blas.gemm_update(xp, a, b, xp.asarray(_r((4, 2), np.float64)), one, one)  # dtypes differ
    assert not cuda_blas.gemm_update(xp, a, xp.asarray(_r((3, 5))), c, one, one)  # c's shape is not the product's
    assert not cuda_blas.gemm_update(xp, a[None], b[None], c[None], one, one)  # batched
    square = xp.asarray(_r((3, 3)))
    assert not cuda_blas.gemm_update(xp, square, xp.asarray(_r((3, 3))), square, one, one)  # c is an operand
    assert not cuda_blas.gemm_update(xp, xp.asarray(_r((3, 3))), square.T, square, one, one)  # or a view of one
    np.testing.assert_array_equal(c.get(), before)


def test_the_fake_cublas_reads_alpha_where_the_pointer_mode_says():
    xp = strict_device.module(gpus=1)
    lib = cuda_blas.library(xp)
    handle = lib.handle()
    m = xp.asarray(np.ones((2, 2), np.float32))
    c = xp.empty((2, 2), np.float32)
    device_one = xp.asarray(np.ones(1, np.float32))
    host_one = lib.scalar(cuda_blas.ctypes.c_float, 1)
    # a device address read as a host one (host pointer mode, the default): cuBLAS would read host memory there
    with pytest.raises(ValueError, match="cublasSgemm_v2: alpha is a device address in host pointer mode"):
        lib.call("cublasSgemm_v2", handle, 0, 0, 2, 2, 2, device_one.data.ptr, m.data.ptr, 2, m.data.ptr, 2,
                 host_one, c.data.ptr, 2)
    lib.call("cublasSetPointerMode_v2", handle, cuda_blas.POINTER_DEVICE)
    try:  # and a host address in device pointer mode
        with pytest.raises(ValueError, match="cuBLAS cublasSgemm_v2 beta: no device array holds address"):
            lib.call("cublasSgemm_v2", handle, 0, 0, 2, 2, 2, device_one.data.ptr, m.data.ptr, 2, m.data.ptr, 2,
                     host_one, c.data.ptr, 2)
    finally:
        lib.call("cublasSetPointerMode_v2", handle, cuda_blas.POINTER_HOST)
