"""kernels/random.py: counter-based uniforms (Philox, split-invariant), dropout masks whose pieces are slices of the
whole mask, dropout scaling, and coin flips that do not depend on how the batch is split. (The seed rules,
`derived_seed` and `call_key`, are tested in test_balanced_split.py.)"""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.backend.balanced_split import balanced_ranges
from oneflow_compat.kernels import random as rnd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, xp  # noqa: E402,F401  (xp: fixture)


def test_uniform_slice_split_invariance_and_reference(xp):
    shape = (7, 9)
    whole = host(rnd.uniform_slice(xp, 1234, shape, 0, 63))
    assert whole.dtype == np.float64 and whole.shape == (63,)
    assert 0.0 <= whole.min() and whole.max() < 1.0
    # the mapping is Generator(Philox(seed)).random, element by element
    np.testing.assert_array_equal(whole, np.random.Generator(np.random.Philox(key=1234)).random(63))
    for parts in (2, 3, 5, 8):
        pieces = [host(rnd.uniform_slice(xp, 1234, shape, a, b)) for a, b in balanced_ranges(63, parts)]
        np.testing.assert_array_equal(np.concatenate(pieces), whole)
    np.testing.assert_array_equal(host(rnd.uniform_slice(xp, 1234, shape, 13, 13)), np.zeros(0))
    assert not np.array_equal(host(rnd.uniform_slice(xp, 1235, shape, 0, 63)), whole)
    with pytest.raises(ValueError):
        rnd.uniform_slice(xp, 1, shape, 60, 64)


def test_dropout_mask_pieces_equal_slices_of_the_whole_mask(xp):
    shape, rate, seed = (6, 5, 4), 0.3, 77
    whole = host(rnd.dropout_mask(xp, seed, shape, rate))
    assert whole.dtype == np.int8 and whole.shape == shape
    expected = (rnd.uniform_slice(np, seed, shape, 0, 120).reshape(shape) > rate).astype(np.int8)
    np.testing.assert_array_equal(whole, expected)
    assert 0.5 < whole.mean() < 0.9
    for index in [(slice(2, 4),), (slice(None), slice(1, 3)), (slice(1, 6, 2), slice(None), slice(3, 4)),
                  (slice(0, 0),)]:
        np.testing.assert_array_equal(host(rnd.dropout_mask(xp, seed, shape, rate, index)), whole[index])


def test_dropout_scales_kept_values(xp):
    x = np.arange(1, 9, dtype=np.float32).reshape(2, 4)
    mask = np.array([[1, 0, 1, 1], [0, 0, 1, 0]], dtype=np.int8)
    y = rnd.dropout(xp, xp.asarray(x), xp.asarray(mask), rate=0.5)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(host(y), x * mask * 2)
    np.testing.assert_array_equal(host(rnd.dropout_grad(xp, xp.asarray(x), xp.asarray(mask), rate=0.5)),
                                  x * mask * 2)


def test_coin_flips_are_pieces_of_one_seeded_batch(xp):
    whole = host(rnd.coin_flips(xp, 5, 0, 0, 1000, 0.3, 0, 1000))
    assert whole.dtype == np.int8 and set(np.unique(whole)) <= {0, 1}
    assert abs(whole.mean() - 0.3) < 0.05
    draws = np.random.default_rng([5, 0, 0]).random(1000)
    np.testing.assert_array_equal(whole, (draws < 0.3).astype(np.int8))
    pieces = [host(rnd.coin_flips(xp, 5, 0, 0, 1000, 0.3, a, b)) for a, b in balanced_ranges(1000, 3)]
    np.testing.assert_array_equal(np.concatenate(pieces), whole)
    assert not np.array_equal(host(rnd.coin_flips(xp, 5, 1, 0, 1000, 0.3, 0, 1000)), whole)  # next call
