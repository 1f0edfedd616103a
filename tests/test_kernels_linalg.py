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
