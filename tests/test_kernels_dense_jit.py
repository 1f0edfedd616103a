"""kernels/dense_jit.py (numba) against the numpy paths it stands in for: the softmax cross-entropy with its
gradient (kernels/loss.py) and the relu mask of matmul_relu_grad (kernels/linalg.py), over dtypes, label dtypes,
layouts, seeds and out-of-range labels. Skipped without numba (the numpy paths are then the only ones)."""
import numpy as np
import pytest

from oneflow_compat.kernels import dense_jit, linalg, loss

pytestmark = pytest.mark.skipif(not dense_jit.AVAILABLE, reason="numba is not installed (or ONEFLOW_COMPAT_JIT=0)")


def _both(monkeypatch, fn):
    """fn() with the compiled loops (checking that one ran), then with numpy alone."""
    ran = []
    for name in ("softmax_xent_rows", "keep_where_positive"):
        compiled = getattr(dense_jit, name)
        monkeypatch.setattr(dense_jit, name, lambda *a, _c=compiled, _n=name: ran.append(_n) or _c(*a))
    jit = fn()
    assert ran, "no compiled loop ran"
    monkeypatch.setattr(dense_jit, "AVAILABLE", False)
    plain = fn()
    monkeypatch.setattr(dense_jit, "AVAILABLE", True)
    return jit, plain


@pytest.mark.parametrize("dtype, label_dtype, order, seed", [
    (np.float32, np.int32, "C", 1.0), (np.float64, np.int64, "C", 0.5), (np.float32, np.int64, "F", 1.0),
    (np.float64, np.int32, "F", 2.0)])
def test_softmax_xent_rows_equal_the_numpy_path(monkeypatch, dtype, label_dtype, order, seed):
    r = np.random.default_rng(0)
    logits = (r.standard_normal((37, 11)) * 4).astype(dtype)
    logits[3, 5] = 150.0  # a probability below the safe-log floor elsewhere in that row
    logits = np.asfortranarray(logits) if order == "F" else logits
    labels = r.integers(0, 11, 37).astype(label_dtype)
    labels[3] = 0
    (jl, jg), (pl, pg) = _both(monkeypatch, lambda: loss.sparse_softmax_cross_entropy_and_grad(
        np, logits, labels, seed=seed))
    assert jl.dtype == pl.dtype == dtype and jg.dtype == pg.dtype == dtype and jg.shape == (37, 11)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(jl, pl, rtol=tol)  # log: numpy's and libm's differ in the last bit
    if order == "C":  # the gradient is numpy's bit for bit: its exponentials, its order of summation
        np.testing.assert_array_equal(jg, pg)
    else:  # (numpy sums a column-major row in another order)
        np.testing.assert_allclose(jg, pg, rtol=tol, atol=tol)
    assert jl[3] == pytest.approx(-np.log(1e-20), rel=1e-6)


def test_softmax_xent_rows_on_three_dimensions_and_empty_batches(monkeypatch):
    r = np.random.default_rng(1)
    logits, labels = r.standard_normal((2, 3, 4)), r.integers(0, 4, (2, 3))
    (jl, jg), (pl, pg) = _both(monkeypatch, lambda: loss.sparse_softmax_cross_entropy_and_grad(np, logits, labels))
    assert jl.shape == (2, 3) and jg.shape == (2, 3, 4)
    np.testing.assert_allclose(jl, pl, rtol=1e-13)
    np.testing.assert_allclose(jg, pg, rtol=1e-13, atol=1e-16)
    (jl, jg), (pl, pg) = _both(monkeypatch, lambda: loss.sparse_softmax_cross_entropy_and_grad(
        np, np.zeros((0, 4), np.float32), np.zeros(0, np.int32)))
    assert jl.shape == pl.shape == (0,) and jg.shape == pg.shape == (0, 4)


@pytest.mark.parametrize("bad", [4, -1])
def test_out_of_range_labels_give_the_numpy_paths_error(monkeypatch, bad):
    labels = np.array([0, 3, bad, 1], np.int32)
    messages = []
    for available in (True, False):
        monkeypatch.setattr(dense_jit, "AVAILABLE", available)
        with pytest.raises(ValueError) as e:
            loss.sparse_softmax_cross_entropy_and_grad(np, np.zeros((4, 4), np.float32), labels)
        messages.append(str(e.value))
    assert messages == ["sparse_softmax_cross_entropy: label %d is out of range [0, 4)" % bad] * 2


@pytest.mark.parametrize("order", ["C", "F"])
def test_relu_mask_in_place_equals_the_numpy_path(monkeypatch, order):
    r = np.random.default_rng(2)
    dz, w = r.standard_normal((9, 4)).astype(np.float32), r.standard_normal((4, 13)).astype(np.float32)
    y = np.maximum(r.standard_normal((9, 13)), 0).astype(np.float32)
    y[0, :3] = [0.0, -0.0, np.nan]  # zeros of both signs and a NaN mask nothing through
    y = np.asfortranarray(y) if order == "F" else y
    jit, plain = _both(monkeypatch, lambda: linalg.matmul_relu_grad(np, dz, w, y))
    np.testing.assert_array_equal(jit, plain)
    assert jit.flags.f_contiguous == (order == "F")
    assert (jit[0, :3] == 0).all()
