"""kernels/indexing.py: gather and batch_gather against numpy indexing, pieces of a split params adding up to the
whole, gradients accumulating repeated indices (against central differences), top_k's order and ties."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import indexing as I

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, numeric_grad, rng, xp  # noqa: E402,F401  (xp: fixture)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_and_its_split_pieces(xp, axis):
    params = rng(1).standard_normal((5, 6, 7))
    indices = np.array([[0, 4], [4, 1], [2, 2]], dtype=np.int32)
    whole = I.gather(xp, xp.asarray(params), xp.asarray(indices), axis=axis)
    np.testing.assert_array_equal(host(whole), np.take(params, indices, axis=axis))
    # params split along the gathered axis: each piece reads its own rows, zeros elsewhere; the sum is the whole
    n = params.shape[axis]
    cut = 3
    pieces = [np.take(params, range(0, cut), axis=axis), np.take(params, range(cut, n), axis=axis)]
    total = sum(host(I.gather(xp, xp.asarray(p), xp.asarray(indices), axis=axis, offset=o))
                for p, o in zip(pieces, (0, cut)))
    np.testing.assert_array_equal(total, host(whole))
    # on the host the kernel raises; on a device it reads nothing back (no wait per op) and the error comes with
    # the next fetch, `host` here (kernels/checks.py)
    with pytest.raises(ValueError, match="^gather: negative index -1$"):
        host(I.gather(xp, xp.asarray(params), xp.asarray([0, -1]), axis=axis))
    np.testing.assert_array_equal(host(whole), np.take(params, indices, axis=axis))  # raised once, then forgotten


def test_gather_grad_accumulates_repeated_indices(xp):
    params = rng(2).standard_normal((4, 3))
    indices = np.array([1, 3, 1, 1], dtype=np.int64)
    dy = rng(3).standard_normal((4, 3))
    numeric = numeric_grad(lambda: float(np.sum(I.gather(np, params, indices, axis=0) * dy)), params)
    grad = I.gather_grad(xp, xp.asarray(dy), xp.asarray(indices), xp.asarray(params), axis=0)
    np.testing.assert_allclose(host(grad), numeric, rtol=1e-7, atol=1e-9)
    # the piece of rows [2, 4) only receives the gradient of its own rows
    piece = I.gather_grad(xp, xp.asarray(dy), xp.asarray(indices), xp.asarray(params[2:]), axis=0, offset=2)
    np.testing.assert_allclose(host(piece), numeric[2:], rtol=1e-7, atol=1e-9)


def test_batch_gather_and_grad(xp):
    params = rng(4).standard_normal((2, 5, 3))
    indices = np.array([[4, 0, 4], [1, 1, 2]], dtype=np.int32)
    out = I.batch_gather(xp, xp.asarray(params), xp.asarray(indices))
    np.testing.assert_array_equal(host(out), np.stack([params[b, indices[b]] for b in range(2)]))
    dy = rng(5).standard_normal(out.shape)
    numeric = numeric_grad(lambda: float(np.sum(I.batch_gather(np, params, indices) * dy)), params)
    np.testing.assert_allclose(host(I.batch_gather_grad(xp, xp.asarray(dy), xp.asarray(indices), xp.asarray(params))),
                               numeric, rtol=1e-7, atol=1e-9)
    # on the host the kernel raises; on a device it reads nothing back (no wait per op) and the error comes with
    # the next fetch, `host` here (kernels/checks.py)
    with pytest.raises(ValueError, match=r"^batch_gather: indices must lie in \[0, 5\)$"):
        host(I.batch_gather(xp, xp.asarray(params), xp.asarray([[5], [0]])))


def test_top_k_largest_first_ties_to_the_lower_index(xp):
    x = np.array([[3, 1, 3, 7, 0], [5, 5, 5, 1, 9]], dtype=np.float32)
    out = I.top_k(xp, xp.asarray(x), k=3)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(host(out), [[3, 0, 2], [4, 0, 1]])
    np.testing.assert_array_equal(host(I.top_k(xp, xp.asarray(x.astype(np.uint8)), k=1)), [[3], [4]])
