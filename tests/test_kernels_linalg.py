"""kernels/linalg.py: matmul with transposes, alpha, batches and dtype, against an einsum in float64."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import linalg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, rng, xp  # noqa: E402,F401  (xp: fixture)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_transposes_alpha_and_dtype(xp, ta, tb):
    a = rng(1).standard_normal((4, 3)).astype(np.float32)
    b = rng(2).standard_normal((3, 5)).astype(np.float32)
    a_in = a.T.copy() if ta else a
    b_in = b.T.copy() if tb else b
    out = linalg.matmul(xp, xp.asarray(a_in), xp.asarray(b_in), transpose_a=ta, transpose_b=tb, alpha=2.5)
    assert out.dtype == np.float32
    expected = 2.5 * np.einsum("ik,kj->ij", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(host(out), expected, rtol=1e-5)


def test_matmul_batched_and_errors(xp):
    a = rng(3).standard_normal((2, 3, 4, 5))
    b = rng(4).standard_normal((2, 3, 6, 5))
    out = linalg.matmul(xp, xp.asarray(a), xp.asarray(b), transpose_b=True)
    np.testing.assert_allclose(host(out), np.einsum("xyik,xyjk->xyij", a, b), rtol=1e-12)
    with pytest.raises(ValueError, match="batch"):
        linalg.matmul(xp, xp.asarray(a), xp.asarray(b[:1]), transpose_b=True)
    with pytest.raises(ValueError, match="inner"):
        linalg.matmul(xp, xp.asarray(a), xp.asarray(b))
    with pytest.raises(ValueError, match="at least 2-D"):
        linalg.matmul(xp, xp.zeros(3), xp.zeros((3, 1)))


# --- the kernel a planned small product runs (`matmul.specialize`, asked by runtime/plan.device_fn) -----------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_a_small_planned_product_is_numpy_dot_with_the_bits_of_matmul(dtype, ta, tb):
    for m, k, n in [(8, 8, 8), (1, 5, 3), (3, 1, 1), (1, 1, 1), (2, 31, 17), (16, 16, 16)]:
        a = rng(5).standard_normal((k, m) if ta else (m, k)).astype(dtype)
        b = rng(6).standard_normal((n, k) if tb else (k, n)).astype(dtype)
        fn = linalg.matmul.specialize(np, [a.shape, b.shape], [a.dtype, b.dtype], transpose_a=ta, transpose_b=tb,
                                      alpha=1.0)
        assert fn is not None
        out = fn(a, b)
        assert out.dtype == dtype and out.shape == (m, n)
        # bit for bit what the kernel's own path gives, and numpy's matmul of the transposed views
        assert np.array_equal(out, linalg.matmul(np, a, b, transpose_a=ta, transpose_b=tb))
        assert np.array_equal(out, np.matmul(a.T if ta else a, b.T if tb else b))
    if not ta and not tb:
        assert fn is getattr(np.dot, "_implementation", np.dot)  # nothing between the plan and numpy's C dot


def test_products_the_small_path_does_not_take_keep_the_kernel():
    spec = linalg.matmul.specialize
    f32 = [np.dtype(np.float32)] * 2
    assert spec(np, [(8, 8), (8, 8)], f32, alpha=0.5) is None  # alpha: the kernel scales
    assert spec(np, [(8, 8), (8, 8)], [np.dtype(np.float16)] * 2) is None  # numpy.dot sums float16 in float32
    assert spec(np, [(8, 8), (8, 8)], [np.dtype(np.float32), np.dtype(np.float64)]) is None
    assert spec(np, [(2, 8, 8), (2, 8, 8)], f32) is None  # batched
    assert spec(np, [(64, 64), (64, 64)], f32) is None  # large: gemm on the kernels' threads
    assert spec(np, [(8, 4), (8, 4)], f32) is None  # shapes that do not fit: the kernel's error
    assert spec(object(), [(8, 8), (8, 8)], f32) is None  # another array module (CuPy)
