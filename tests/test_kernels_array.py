"""kernels/array.py: constants and fills in the requested dtype, the identity (no copy), object arrays that keep
nested arrays whole."""
import os
import sys

import numpy as np

from oneflow_compat.kernels import array as K

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, xp  # noqa: E402,F401  (xp: fixture)


def test_full_and_fills(xp):
    out = K.full(xp, shape=(2, 3), value=1.5, dtype=np.float32)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(host(out), np.full((2, 3), 1.5))
    like = xp.zeros((3, 2), dtype=np.int32)
    filled = K.fill_like(xp, like, value=7)
    assert filled.dtype == np.int32 and host(filled).tolist() == [[7, 7]] * 3
    from_tensor = K.fill_like_tensor(xp, xp.zeros((2, 2), dtype=np.float32), xp.asarray([1024.0]))
    assert from_tensor.dtype == np.float32 and host(from_tensor).tolist() == [[1024.0] * 2] * 2


def test_identity_is_the_input_itself(xp):
    x = xp.arange(3)
    assert K.identity(xp, x) is x


def test_object_array_keeps_items_whole():
    items = [np.zeros((2, 2)), np.ones((3, 1)), b"raw"]
    out = K.object_array(items)
    assert out.shape == (3,) and out.dtype == object
    assert all(a is b for a, b in zip(out, items))
    assert K.object_array([]).shape == (0,)
