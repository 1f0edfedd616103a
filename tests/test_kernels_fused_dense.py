"""The dense network's fused kernels against float64 references: gemm into a given output (kernels/blas.py: every
operand layout, alpha and beta, the direct BLAS call and the matmul path), matmul_bias_act and matmul_relu_grad
(kernels/linalg.py, with the layouts they choose), SGD folded into a GEMM or a sum (kernels/optim.py), and the loss
with its gradient in one kernel (kernels/loss.py)."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import blas, linalg, loss, optim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, rng, xp  # noqa: E402,F401  (xp: fixture)


def _layout(a, kind):
    """a (2-D) stored row-major, column-major, or as every other row of a larger array."""
    if kind == "F":
        return np.asfortranarray(a)
    if kind == "rows":
        big = np.zeros((a.shape[0] * 2, a.shape[1] + 3), a.dtype)
        big[::2, :a.shape[1]] = a
        return big[::2, :a.shape[1]]
    return np.ascontiguousarray(a)


@pytest.mark.parametrize("size", [(3, 4, 5), (130, 70, 140)], ids=["small", "direct"])
@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("kind", ["C", "F", "rows"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_adds_the_product_into_any_layout(size, ta, tb, kind, dtype):
    m, k, n = size
    r = rng(1)
    a, b = r.standard_normal((m, k)), r.standard_normal((k, n))
    c0 = r.standard_normal((m, n))
    for alpha, beta in ((1.0, 0.0), (-0.5, 1.0), (2.0, 0.25)):
        out = _layout(c0.astype(dtype), kind)
        if beta == 0.0:
            out[0, 0] = np.nan  # not read
        got = blas.gemm(_layout((a.T if ta else a).astype(dtype), kind), _layout((b.T if tb else b).astype(dtype), kind),
                        out, alpha=alpha, beta=beta, trans_a=ta, trans_b=tb)
        assert got is out
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(out, alpha * (a @ b) + beta * c0, rtol=tol, atol=tol * k)


@pytest.mark.skipif(not blas.adds_in_place(200, 100), reason="numpy's BLAS is not an OpenBLAS this process can call")
def test_gemm_calls_blas_itself_where_it_pays(monkeypatch):
    def no_matmul(*args):
        raise AssertionError("the matmul path was taken")

    monkeypatch.setattr(blas, "_with_matmul", no_matmul)
    r = rng(2)
    a, b = r.standard_normal((200, 30)).astype(np.float32), r.standard_normal((30, 100)).astype(np.float32)
    out = np.ones((100, 200), np.float32).T  # column-major
    blas.gemm(a, b, out, alpha=3.0, beta=1.0)
    np.testing.assert_allclose(out, 3.0 * (a.astype(np.float64) @ b) + 1.0, rtol=1e-5, atol=1e-4)
    assert not blas.adds_in_place(10, 100)  # small outputs: matmul, then the addition


def test_gemm_other_cases_take_the_matmul_path():
    r = rng(3)
    a = r.integers(-3, 3, (150, 4))
    b = r.integers(-3, 3, (4, 150))
    out = np.ones((150, 150), np.int64)
    np.testing.assert_array_equal(blas.gemm(a, b, out, alpha=2, beta=1), 2 * (a @ b) + 1)  # integers
    x = r.standard_normal((150, 150))
    np.testing.assert_allclose(blas.gemm(x, x, x.copy(), beta=1.0), x @ x + x)  # an output that is an operand...
    y = x.copy()
    blas.gemm(y, x, y, alpha=1.0, beta=1.0)  # ...or overlaps one: the product is made before anything is written
    np.testing.assert_allclose(y, x @ x + x)
    out = np.full((150, 150), 7.0)
    blas.gemm(np.zeros((150, 0)), np.zeros((0, 150)), out, beta=0.5)  # an empty inner dimension
    np.testing.assert_array_equal(out, 3.5)
    with pytest.raises(ValueError, match=r"gemm: shapes \(150, 150\).T x \(150, 150\) do not give \(2, 2\)"):
        blas.gemm(x, x, np.zeros((2, 2)), trans_a=True)


@pytest.mark.parametrize("m, n", [(6, 9), (9, 6), (200, 300)])
@pytest.mark.parametrize("ta, tb", [(False, True), (True, False)])
def test_matmul_bias_act_values_and_layout(xp, m, n, ta, tb):
    r = rng(4)
    a, b, bias = r.standard_normal((m, 7)), r.standard_normal((7, n)), r.standard_normal(n)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        out = linalg.matmul_bias_act(xp, xp.asarray((a.T if ta else a).astype(dtype)),
                                     xp.asarray((b.T if tb else b).astype(dtype)), xp.asarray(bias.astype(dtype)),
                                     transpose_a=ta, transpose_b=tb, alpha=0.5, activation="relu")
        assert out.shape == (m, n) and out.dtype == dtype
        # on the CPU, the features outnumbering the batch rows, the product is computed batch-minor (column-major:
        # OpenBLAS's faster orientation); on a device the bias+relu kernel (kernels/cuda_nn.py) takes the product
        # C-ordered, whatever the shape
        batch_minor = n > m and xp is np
        assert out.flags.f_contiguous == batch_minor and out.flags.c_contiguous == (not batch_minor)
        np.testing.assert_allclose(host(out), np.maximum(0.5 * a @ b + bias, 0), rtol=tol, atol=tol)
    with pytest.raises(ValueError, match="activation must be None or 'relu', got 'tanh'"):
        linalg.matmul_bias_act(xp, xp.asarray(a), xp.asarray(b), xp.asarray(bias), activation="tanh")


@pytest.mark.parametrize("order", ["C", "F"])
def test_matmul_relu_grad_masks_the_product_laid_out_like_the_mask(xp, order):
    r = rng(5)
    dz, w = r.standard_normal((8, 3)), r.standard_normal((3, 11))
    y = np.maximum(r.standard_normal((8, 11)), 0)
    y_in = np.asfortranarray(y) if order == "F" else y
    out = linalg.matmul_relu_grad(xp, xp.asarray(dz), xp.asarray(w.T.copy()), xp.asarray(y_in), transpose_b=True,
                                  alpha=2.0)
    assert out.flags.f_contiguous == (order == "F")
    np.testing.assert_allclose(host(out), 2.0 * (dz @ w) * (y > 0), rtol=1e-12)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("size", [(5, 4, 3), (300, 100, 200)], ids=["small", "direct"])
def test_matmul_sgd_update_adds_every_partial_product(xp, momentum, size):
    k, m, n = size
    r = rng(6)
    w0, m0 = r.standard_normal((m, n)).astype(np.float32), r.standard_normal((m, n)).astype(np.float32)
    pairs = [(r.standard_normal((k, m)).astype(np.float32), r.standard_normal((k, n)).astype(np.float32))
             for _ in range(2)]
    w, mom = xp.asarray(w0.copy()), xp.asarray(m0.copy())  # (numpy's asarray would not copy)
    optim.matmul_sgd_update(xp, w, mom if momentum else None, [(xp.asarray(a), xp.asarray(b)) for a, b in pairs],
                            lr=0.1, scale=0.25, momentum=momentum, transpose_a=True, alpha=2.0)
    g = 0.25 * 2.0 * sum(a.T.astype(np.float64) @ b for a, b in pairs)
    if momentum:
        m_want = momentum * m0 - 0.1 * g
        np.testing.assert_allclose(host(mom), m_want, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(host(w), w0 + m_want, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_allclose(host(w), w0 - 0.1 * g, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("axis, shape", [([0], (7, 5)), ([0, 2, 3], (3, 5, 2, 2))])
@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_reduce_sum_sgd_update_adds_every_partial_sum(xp, axis, shape, momentum):
    r = rng(7)
    parts = [r.standard_normal(shape) for _ in range(3)]
    if len(shape) == 2:
        parts[1] = np.asfortranarray(parts[1])
    w0, m0 = r.standard_normal(5), r.standard_normal(5)
    w, mom = xp.asarray(w0.copy()), xp.asarray(m0.copy())  # (numpy's asarray would not copy)
    optim.reduce_sum_sgd_update(xp, w, mom if momentum else None, [xp.asarray(p) for p in parts], lr=0.2, scale=0.5,
                                axis=axis, momentum=momentum)
    c = float(np.float32(0.2) * np.float32(0.5))
    g = sum(p.sum(axis=tuple(axis)) for p in parts)
    if momentum:
        np.testing.assert_allclose(host(w), w0 + (np.float32(momentum) * m0 - c * g), rtol=1e-12)
    else:
        np.testing.assert_allclose(host(w), w0 - c * g, rtol=1e-12)


@pytest.mark.parametrize("seed", [1.0, 0.25])
def test_loss_and_grad_in_one_kernel_equal_the_two_kernels(xp, seed):
    logits = rng(8).standard_normal((2, 3, 5))
    labels = np.array([[0, 4, 2], [1, 1, 3]], dtype=np.int32)
    got_loss, got_grad = loss.sparse_softmax_cross_entropy_and_grad(xp, xp.asarray(logits), xp.asarray(labels),
                                                                    seed=seed)
    want_loss, prob = loss.sparse_softmax_cross_entropy(np, logits, labels)
    want_grad = loss.sparse_softmax_cross_entropy_grad(np, np.full(want_loss.shape, seed), prob, labels)
    assert got_loss.shape == (2, 3) and got_grad.shape == (2, 3, 5)
    np.testing.assert_allclose(host(got_loss), want_loss, rtol=1e-12)
    np.testing.assert_allclose(host(got_grad), want_grad, rtol=1e-12, atol=1e-15)
    f_logits = np.asfortranarray(logits[0].astype(np.float32))  # column-major logits (a dense layer's output)
    got_loss, got_grad = loss.sparse_softmax_cross_entropy_and_grad(xp, xp.asarray(f_logits), xp.asarray(labels[0]))
    want_loss, prob = loss.sparse_softmax_cross_entropy(np, f_logits, labels[0])
    np.testing.assert_allclose(host(got_loss), want_loss, rtol=1e-6)
    np.testing.assert_allclose(host(got_grad), loss.sparse_softmax_cross_entropy_grad(
        np, np.ones(3, np.float32), prob, labels[0]), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("bad", [5, -1, -7])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_labels_out_of_range_are_named(bad, dtype):
    labels = np.array([1, bad, 2], dtype=dtype)
    for kernel in (loss.sparse_softmax_cross_entropy, loss.sparse_softmax_cross_entropy_and_grad):
        with pytest.raises(ValueError, match=r"^sparse_softmax_cross_entropy: label %d is out of range \[0, 5\)$"
                           % bad):
            kernel(np, np.zeros((3, 5)), labels)


def test_gemm_runs_on_the_kernels_threads_only_while_they_are_in_use(monkeypatch):
    from oneflow_compat.kernels import cpu_threads

    spread_products = []
    real = cpu_threads.product_on_threads
    monkeypatch.setattr(cpu_threads, "product_on_threads", lambda *a, **k: spread_products.append(1) or real(*a, **k))
    r = rng(9)
    a, b = r.standard_normal((300, 40)).astype(np.float32), r.standard_normal((40, 200)).astype(np.float32)
    monkeypatch.setattr(cpu_threads, "_last_spread", [float("-inf")])
    out = blas.gemm(a, b, np.empty((300, 200), np.float32))  # dense work alone: OpenBLAS's own threading
    assert spread_products == []
    cpu_threads.spread(4, 2, lambda n0, n1: None)  # kernels spreading over their own threads (convolutions)...
    # the two paths sum the 40 products in different orders: float32 rounding bounded by the sum of the products'
    # magnitudes (a relative bound alone fails where the terms cancel: on the GPU machine's CPU, an element of
    # 7.7e-5 differed by 1.7e-6 between OpenBLAS and the kernels' threads)
    bound = 40 * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b))
    assert np.all(np.abs(blas.gemm(a, b, np.empty((300, 200), np.float32)) - out) <= bound)
    assert spread_products == [1]  # ...so products run there too, not on OpenBLAS threads woken against them
