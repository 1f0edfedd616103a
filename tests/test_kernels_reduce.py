"""kernels/reduce.py: reductions against float64 / Python references with the legacy (1,) rule and dtype kept,
argmax's first-maximum rule, the row count, and the broadcast / sum-back pair."""
import itertools
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import reduce as R

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, rng, xp  # noqa: E402,F401  (xp: fixture)

REFERENCES = {
    "reduce_sum": np.sum,
    "reduce_mean": np.mean,
    "reduce_max": np.max,
    "reduce_min": np.min,
    "reduce_prod": np.prod,
    "reduce_any": lambda a, axis, keepdims: np.any(a != 0, axis=axis, keepdims=keepdims),
    "reduce_all": lambda a, axis, keepdims: np.all(a != 0, axis=axis, keepdims=keepdims),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_reductions_values_shapes_and_dtype(xp, name):
    x = rng(30).uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    if name in ("reduce_any", "reduce_all"):
        x[0] = 0
        x[1, 2] = 0
    fn, ref = getattr(R, name), REFERENCES[name]
    x64 = x.astype(np.float64)
    for axis, keepdims in [(None, False), (None, True), ((0, 2), False), ((-1,), True), ((1,), False)]:
        out = fn(xp, xp.asarray(x), axis=axis, keepdims=keepdims)
        expected = np.asarray(ref(x64, axis=axis, keepdims=keepdims), dtype=np.float64)
        if axis is None and not keepdims:
            expected = expected.reshape(1)  # the legacy framework's full reduction has shape (1,)
        assert out.shape == expected.shape and out.dtype == np.float32, (axis, keepdims)
        np.testing.assert_allclose(host(out), expected, rtol=1e-5)
    np.testing.assert_array_equal(host(fn(xp, xp.asarray(x), axis=(), keepdims=False)),
                                  x if name not in ("reduce_any", "reduce_all") else (x != 0))


def test_integer_sum_keeps_the_dtype(xp):
    out = R.reduce_sum(xp, xp.asarray([[100, 100], [27, 1]], dtype=np.int8), axis=(0,))
    assert out.dtype == np.int8
    np.testing.assert_array_equal(host(out), [127, 101])


def test_argmax_first_maximum_and_legacy_shape(xp):
    x = xp.asarray([[1, 5, 5], [7, 0, 7]], dtype=np.float32)
    out = R.argmax(xp, x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(host(out), [1, 0])
    np.testing.assert_array_equal(host(R.argmax(xp, xp.asarray([3.0, 9.0, 1.0]))), [1])  # 1-d input: (1,)
    x3 = rng(1).standard_normal((2, 3, 4))
    np.testing.assert_array_equal(host(R.argmax(xp, xp.asarray(x3))),
                                  [[max(range(4), key=lambda k: x3[i, j, k]) for j in range(3)] for i in range(2)])


def test_axis0_count(xp):
    out = R.axis0_count(xp, xp.zeros((7, 3), dtype=np.float64))
    assert out.dtype == np.float64 and host(out).tolist() == [7.0]
    out = R.axis0_count(xp, xp.zeros((5,), dtype=np.int32))
    assert out.dtype == np.float32 and host(out).tolist() == [5.0]


@pytest.mark.parametrize("shape", [(3, 1), (1, 4), (4,), (1,), (2, 3, 4), (1, 3, 1)])
def test_reduce_to_shape_undoes_broadcasting(xp, shape):
    g = rng(33).standard_normal((2, 3, 4))
    out = R.reduce_to_shape(xp, xp.asarray(g), shape=shape)
    expected = np.zeros(shape)
    # every element of g adds into the operand element it was broadcast from
    full = (1,) * (3 - len(shape)) + tuple(shape)
    for index in itertools.product(*(range(n) for n in g.shape)):
        source = tuple(0 if n == 1 else i for i, n in zip(index, full))
        expected.reshape(full)[source] += g[index]
    assert out.shape == tuple(shape)
    np.testing.assert_allclose(host(out), expected, rtol=1e-12)


def test_broadcast_like(xp):
    x = np.array([[1.0], [2.0]])
    out = R.broadcast_like(xp, xp.asarray(x), xp.zeros((2, 3)))
    np.testing.assert_array_equal(host(out), [[1.0] * 3, [2.0] * 3])
