"""kernels/shape.py: reshapes (views), slicing and its gradient, concat / split_like, transpose, pad, one-hot,
against numpy indexing and central differences."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import shape as S

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, numeric_grad, rng, xp  # noqa: E402,F401  (xp: fixture)


def test_reshape_family_gives_views_with_the_right_shapes(xp):
    x = xp.asarray(np.arange(24.0).reshape(2, 3, 4))
    cases = [
        (S.reshape(xp, x, shape=(4, 6)), (4, 6)),
        (S.reshape_like(xp, x, xp.zeros((6, 4))), (6, 4)),
        (S.expand_dims(xp, x, axis=1), (2, 1, 3, 4)),
        (S.flatten(xp, x, start_dim=1, end_dim=2), (2, 12)),
        (S.flatten(xp, x, start_dim=0, end_dim=-1), (24,)),
    ]
    for out, shape in cases:
        assert out.shape == shape
        np.testing.assert_array_equal(host(out).ravel(), np.arange(24.0))
    ones = xp.asarray(np.arange(6.0).reshape(1, 6, 1))
    assert S.squeeze(xp, ones, axes=(0, 2)).shape == (6,)
    assert S.squeeze(xp, xp.zeros((1, 1)), axes=(0, 1)).shape == (1,)  # all axes removed: (1,)
    assert S.squeezed_shape((1, 5, 1), (0,)) == (5, 1)
    assert S.flattened_shape((2, 3, 4, 5), 1, 2) == (2, 12, 5)


def test_slice_and_grad(xp):
    x = np.arange(60.0).reshape(3, 4, 5)
    tup = ((1, 3, None), slice(None, None, 2), (4, 0, -2))
    y = S.slice_nd(xp, xp.asarray(x), slice_tup=tup)
    np.testing.assert_array_equal(host(y), x[1:3, ::2, 4:0:-2])
    dy = rng(34).standard_normal(y.shape)
    numeric = numeric_grad(lambda: float(np.sum(S.slice_nd(np, x, slice_tup=tup) * dy)), x)
    np.testing.assert_allclose(host(S.slice_grad(xp, xp.asarray(dy), xp.asarray(x), slice_tup=tup)), numeric,
                               atol=1e-9)
    np.testing.assert_array_equal(host(S.slice_nd(xp, xp.asarray(x), slice_tup=[(None, 2, None)])), x[:2])
    assert S.normalize_slice_tup([None], 2) == (slice(None), slice(None))
    with pytest.raises(ValueError, match="3 slice entries for a 2-d array"):
        S.normalize_slice_tup([None, None, None], 2)


def test_concat_and_split_like(xp):
    a, b, c = np.ones((2, 3)), np.zeros((2, 1)), np.full((2, 2), 7.0)
    joined = S.concat(xp, xp.asarray(a), xp.asarray(b), xp.asarray(c), axis=1)
    np.testing.assert_array_equal(host(joined), np.hstack([a, b, c]))
    parts = S.split_like(xp, joined, xp.asarray(a), xp.asarray(b), xp.asarray(c), axis=-1)
    assert isinstance(parts, tuple) and len(parts) == 3
    for part, expected in zip(parts, (a, b, c)):
        np.testing.assert_array_equal(host(part), expected)
    single = S.split_like(xp, xp.asarray(a), xp.asarray(a), axis=0)
    np.testing.assert_array_equal(host(single), a)  # one piece: the array itself, not a tuple
    with pytest.raises(ValueError, match="do not add up"):
        S.split_like(xp, joined, xp.asarray(a), axis=1)


def test_transpose_and_inverse_perm(xp):
    x = rng(35).standard_normal((2, 3, 4))
    t = S.transpose(xp, xp.asarray(x), perm=(2, 0, 1))
    assert t.flags.c_contiguous
    np.testing.assert_array_equal(host(t), np.einsum("abc->cab", x))
    np.testing.assert_array_equal(host(S.transpose(xp, t, perm=S.inverse_perm((2, 0, 1)))), x)


def test_pad_and_grad(xp):
    x = rng(36).standard_normal((2, 3, 4))
    paddings = ((0, 1), (2, 0), (1, 1))
    p = S.pad(xp, xp.asarray(x), paddings=paddings, constant_value=-1.0)
    np.testing.assert_array_equal(host(p), np.pad(x, paddings, constant_values=-1.0))
    np.testing.assert_array_equal(host(S.pad_grad(xp, p, paddings=paddings)), x)
    with pytest.raises(ValueError, match="negative"):
        S.pad(xp, xp.asarray(x), paddings=((0, -1), (0, 0), (0, 0)))


def test_one_hot(xp):
    oh = S.one_hot(xp, xp.asarray([[2, 0], [1, 2]], dtype=np.int32), depth=3, dtype=np.float32)
    assert oh.dtype == np.float32 and oh.shape == (2, 2, 3)
    np.testing.assert_array_equal(host(oh), np.eye(3, dtype=np.float32)[[[2, 0], [1, 2]]])
    np.testing.assert_array_equal(
        host(S.one_hot(xp, xp.asarray([1]), depth=2, on_value=5, off_value=-1, dtype=np.int64, axis=0)), [[-1], [5]])
    # on the host the kernel raises; on a device it reads nothing back (no wait per op) and the error comes with
    # the next fetch, `host` here (kernels/checks.py)
    with pytest.raises(ValueError, match=r"^one_hot: index 3 out of range \[0, 3\)$"):
        host(S.one_hot(xp, xp.asarray([3]), depth=3))
