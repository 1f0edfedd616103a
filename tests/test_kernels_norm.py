"""kernels/norm.py: the moving-statistics update of batch normalization, in place and in the statistic's dtype."""
import os
import sys

import numpy as np

from oneflow_compat.kernels import norm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, xp  # noqa: E402,F401  (xp: fixture)


def test_moving_average_update_in_place(xp):
    moving = xp.asarray([1.0, 2.0, 4.0], dtype=np.float32)
    stat = xp.asarray([3.0, 2.0, 0.0], dtype=np.float64)
    assert norm.moving_average_update(xp, moving, stat, momentum=0.99) is None
    assert moving.dtype == np.float32
    expected = np.float32(0.99) * np.float32([1, 2, 4]) + np.float32([3, 2, 0]) * np.float32(1 - 0.99)
    np.testing.assert_allclose(host(moving), expected, rtol=1e-7)
    np.testing.assert_allclose(host(moving), [0.99 + 0.03, 2.0, 3.96], rtol=1e-6)
