"""The rules written once and used everywhere: the balanced split (`backend/balanced_split.py`) and the seed of a
named consumer of a seed (`kernels/random.derived_seed`)."""
import zlib

import pytest

from oneflow_compat.backend import balanced_split
from oneflow_compat.backend.balanced_split import balanced_ranges, balanced_sizes
from oneflow_compat.kernels import random as random_k


def test_balanced_rule_first_parts_get_one_more():
    assert balanced_sizes(10, 4) == [3, 3, 2, 2]
    assert balanced_ranges(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert balanced_sizes(2, 4) == [1, 1, 0, 0]
    assert balanced_ranges(9, 3) == [(0, 3), (3, 6), (6, 9)]
    for n in range(0, 30):
        for k in range(1, 7):
            sizes = balanced_sizes(n, k)
            assert sizes == [n // k + 1] * (n % k) + [n // k] * (k - n % k)
            ranges = balanced_ranges(n, k)
            assert [b - a for a, b in ranges] == sizes and ranges[0][0] == 0 and ranges[-1][1] == n
    for bad in ((3, 0), (-1, 2)):
        with pytest.raises(ValueError):
            balanced_sizes(*bad)


def test_every_layer_uses_the_one_balanced_rule():
    from oneflow_compat.comm import process_comm
    from oneflow_compat.ir import sbp

    assert sbp.balanced_ranges is balanced_split.balanced_ranges
    assert process_comm.balanced_sizes is balanced_split.balanced_sizes
    assert sbp.local_shape((10, 3), sbp.S(0), 2, 4) == (2, 3)
    assert process_comm.balanced_offsets(10, 4) == [0, 3, 6, 8, 10]


def test_derived_seed_is_pinned():
    # variables' default seeds and random ops' seeds: checkpoints and ONEFLOW_COMPAT_SEED runs depend on these values
    assert random_k.derived_seed(0, "w") == zlib.crc32(b"w")
    assert random_k.derived_seed(12345, "dense1-weight") == (12345 * 1000003 + zlib.crc32(b"dense1-weight")) % 2 ** 63
    assert random_k.derived_seed(2 ** 62, "x") < 2 ** 63
    assert random_k.derived_seed(1, "a") != random_k.derived_seed(1, "b") != random_k.derived_seed(2, "b")


def test_variables_and_random_ops_derive_seeds_with_the_one_rule():
    from types import SimpleNamespace

    from oneflow_compat.ops import nn_ops
    from oneflow_compat.ops import variable_ops

    assert variable_ops.default_seed(7, "layer/weight") == random_k.derived_seed(7, "layer/weight")
    op = SimpleNamespace(attrs={"seed": None}, name="dropout_1", job=SimpleNamespace(name="train"))
    assert nn_ops.dropout_seed(op, SimpleNamespace(root_seed=7)) == random_k.derived_seed(7, "train/dropout_1")
    op.attrs["seed"] = 5
    assert nn_ops.dropout_seed(op, None) == 5
