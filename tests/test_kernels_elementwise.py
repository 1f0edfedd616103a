"""kernels/elementwise.py: every kernel against the plain float64 / integer numpy expression it stands for, with
broadcasting, the dtype rules for scalar attributes (a float32 tensor stays float32) and int8 comparisons."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import elementwise as E

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, rng, xp  # noqa: E402,F401  (xp: fixture)

A = rng(1).uniform(0.5, 2.0, (3, 4)) * rng(2).choice([-1.0, 1.0], (3, 4))
B = rng(3).uniform(0.5, 2.0, (1, 4))  # broadcast along axis 0
A[0, 0] = B[0, 0]  # one tie for the comparisons

BINARY = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "maximum": np.fmax,
    "minimum": np.fmin,
    "power": lambda a, b: np.abs(a) ** b,
    "floor_mod": lambda a, b: a - np.floor(a / b) * b,
    "equal": lambda a, b: (a == b).astype(np.int8),
    "not_equal": lambda a, b: (a != b).astype(np.int8),
    "less": lambda a, b: (a < b).astype(np.int8),
    "less_equal": lambda a, b: (a <= b).astype(np.int8),
    "greater": lambda a, b: (a > b).astype(np.int8),
    "greater_equal": lambda a, b: (a >= b).astype(np.int8),
    "logical_and": lambda a, b: np.logical_and(a != 0, b != 0).astype(np.int8),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(xp, name):
    a = np.abs(A) if name == "power" else A
    b = np.where(np.arange(4) == 1, 0.0, B) if name == "logical_and" else B
    out = getattr(E, name)(xp, xp.asarray(a), xp.asarray(b))
    np.testing.assert_allclose(host(out), BINARY[name](a, b), rtol=1e-13)
    assert out.shape == (3, 4)
    if BINARY[name](a, b).dtype == np.int8:
        assert out.dtype == np.int8


SCALAR = {
    "scalar_add": lambda x, v: x + v,
    "scalar_mul": lambda x, v: x * v,
    "scalar_pow": lambda x, v: np.abs(x) ** v,
    "scalar_rsub": lambda x, v: v - x,
    "scalar_rdiv": lambda x, v: v / x,
    "scalar_mod": lambda x, v: x - np.floor(x / v) * v,
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_attribute(xp, name):
    x = np.abs(A) if name == "scalar_pow" else A
    out = getattr(E, name)(xp, xp.asarray(x), value=1.5)
    np.testing.assert_allclose(host(out), SCALAR[name](x, 1.5), rtol=1e-13)
    out32 = getattr(E, name)(xp, xp.asarray(x, dtype=np.float32), value=1.1)
    assert out32.dtype == np.float32  # the scalar takes the tensor's dtype
    np.testing.assert_allclose(host(out32), SCALAR[name](x.astype(np.float32), np.float32(1.1)), rtol=1e-6)


def test_scalar_attribute_on_an_integer_tensor_is_cast_to_it(xp):
    out = E.scalar_add(xp, xp.asarray([1, 2], dtype=np.int32), value=2.7)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(host(out), [3, 4])


UNARY = {
    "negative": lambda x: -x,
    "exp": np.exp,
    "log": lambda x: np.log(np.abs(x)),
    "log1p": lambda x: np.log(1 + np.abs(x)),
    "expm1": lambda x: np.exp(x) - 1,
    "sqrt": lambda x: np.abs(x) ** 0.5,
    "rsqrt": lambda x: np.abs(x) ** -0.5,
    "square": lambda x: x ** 2,
    "reciprocal": lambda x: x ** -1.0,
    "absolute": lambda x: np.where(x < 0, -x, x),
    "sign": lambda x: (x > 0).astype(float) - (x < 0),
    "floor": lambda x: x - np.mod(x, 1.0),
    "ceil": lambda x: -((-x) - np.mod(-x, 1.0)),
    "rint": lambda x: np.array([float(round(v)) for v in x.ravel()]).reshape(x.shape),  # half to even
    "sin": np.sin,
    "cos": np.cos,
    "logical_not": lambda x: (x == 0).astype(np.int8),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(xp, name):
    x = A * 2.3
    if name in ("log", "log1p", "sqrt", "rsqrt"):
        x = np.abs(x)
    if name == "rint":
        x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6])
    if name == "logical_not":
        x = np.array([0.0, 1.0, -2.0, 0.0])
    out = getattr(E, name)(xp, xp.asarray(x))
    np.testing.assert_allclose(host(out), UNARY[name](x), rtol=1e-13, atol=1e-15)
    if name != "logical_not":
        assert getattr(E, name)(xp, xp.asarray(x, dtype=np.float32)).dtype == np.float32


def test_cast(xp):
    out = E.cast(xp, xp.asarray([1.7, -1.7, 3.0]), dtype=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(host(out), [1, -1, 3])  # truncation toward zero


def test_add_n_and_scalar_tensor_ops(xp):
    xs = [rng(i).standard_normal((2, 3)) for i in range(4)]
    np.testing.assert_allclose(host(E.add_n(xp, *[xp.asarray(x) for x in xs])), sum(xs), rtol=1e-13)
    np.testing.assert_allclose(host(E.add_n(xp, xp.asarray(xs[0]), xp.asarray(xs[1]))), xs[0] + xs[1])
    s = np.array([2.5])
    np.testing.assert_allclose(host(E.mul_by_scalar_tensor(xp, xp.asarray(xs[0]), xp.asarray(s))), xs[0] * 2.5)
    np.testing.assert_allclose(host(E.div_by_scalar_tensor(xp, xp.asarray(xs[0]), xp.asarray(s))), xs[0] / 2.5)


@pytest.mark.parametrize("axis", [0, 1, 3, -1])
def test_bias_add(xp, axis):
    x = rng(5).standard_normal((2, 3, 4, 5))
    b = rng(6).standard_normal(x.shape[axis])
    expected = np.moveaxis(np.moveaxis(x, axis, -1) + b, -1, axis)
    np.testing.assert_allclose(host(E.bias_add(xp, xp.asarray(x), xp.asarray(b), axis=axis)), expected)


def test_where_broadcasts_condition_and_branches(xp):
    cond = np.array([[1], [0], [3]], dtype=np.int8)
    x, y = rng(7).standard_normal((3, 4)), rng(8).standard_normal((1, 4))
    expected = np.array([[x[i, j] if cond[i, 0] else y[0, j] for j in range(4)] for i in range(3)])
    np.testing.assert_array_equal(host(E.where(xp, xp.asarray(cond), xp.asarray(x), xp.asarray(y))), expected)


@pytest.mark.parametrize("low, high", [(-0.5, 0.7), (None, 0.7), (-0.5, None), (None, None)])
def test_clip_by_value_and_grad(xp, low, high):
    x = np.array([-1.0, -0.5, 0.0, 0.7, 2.0], dtype=np.float32)
    dy = np.arange(1.0, 6.0, dtype=np.float32)
    out = E.clip_by_value(xp, xp.asarray(x), min_value=low, max_value=high)
    lo = -np.inf if low is None else low
    hi = np.inf if high is None else high
    np.testing.assert_allclose(host(out), [min(max(v, lo), hi) for v in x], rtol=1e-7)
    assert out.dtype == np.float32
    grad = E.clip_by_value_grad(xp, xp.asarray(dy), xp.asarray(x), min_value=low, max_value=high)
    np.testing.assert_array_equal(host(grad), [d if np.float32(lo) <= v <= np.float32(hi) else 0.0
                                               for d, v in zip(dy, x)])  # bounds included
