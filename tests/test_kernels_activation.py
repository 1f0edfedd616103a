"""kernels/activation.py: forward values against independent float64 formulas, gradients against central
differences, dtypes kept, sigmoid without overflow, and everything against PyTorch when installed."""
import math
import os
import sys
import warnings

import numpy as np
import pytest

from oneflow_compat.kernels import activation as A

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, numeric_grad, rng, xp  # noqa: E402,F401  (xp: fixture)

X = np.array([[-3.0, -0.7, -1e-3, 0.4, 2.2], [5.0, -8.0, 0.9, -0.2, 1.3]])

ELEMENTWISE = {
    # name: (forward(xp, x), grad(xp, dy, x, y), reference forward in float64)
    "relu": (A.relu, lambda xp, dy, x, y: A.relu_grad(xp, dy, y), lambda x: np.where(x > 0, x, 0.0)),
    "sigmoid": (A.sigmoid, lambda xp, dy, x, y: A.sigmoid_grad(xp, dy, y), lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (A.tanh, lambda xp, dy, x, y: A.tanh_grad(xp, dy, y), np.tanh),
    "leaky_relu": (lambda xp, x: A.leaky_relu(xp, x, alpha=0.1),
                   lambda xp, dy, x, y: A.leaky_relu_grad(xp, dy, x, alpha=0.1),
                   lambda x: np.where(x > 0, x, 0.1 * x)),
    "gelu": (A.gelu, lambda xp, dy, x, y: A.gelu_grad(xp, dy, x),
             lambda x: x * np.vectorize(lambda v: 0.5 * math.erfc(-v / math.sqrt(2)))(x)),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_forward_grad_and_dtype(xp, name):
    forward, grad, reference = ELEMENTWISE[name]
    x = X.copy()
    y = forward(xp, xp.asarray(x))
    np.testing.assert_allclose(host(y), reference(x), rtol=1e-13, atol=1e-15)
    dy = rng(5).standard_normal(x.shape)
    numeric = numeric_grad(lambda: float(np.sum(forward(np, x) * dy)), x)
    np.testing.assert_allclose(host(grad(xp, xp.asarray(dy), xp.asarray(x), y)), numeric, rtol=1e-6, atol=1e-8)
    x32, dy32 = xp.asarray(x, dtype=np.float32), xp.asarray(dy, dtype=np.float32)
    y32 = forward(xp, x32)
    assert y32.dtype == np.float32
    assert grad(xp, dy32, x32, y32).dtype == np.float32


def test_leaky_relu_default_alpha_is_the_legacy_0_2():
    np.testing.assert_array_equal(A.leaky_relu(np, np.array([-1.0, 2.0])), [-0.2, 2.0])


def test_sigmoid_saturates_without_overflow_or_warnings(xp):
    for dtype in (np.float16, np.float32, np.float64):
        x = xp.asarray([-1000.0, -800.0, -30.0, 0.0, 30.0, 800.0, 1000.0], dtype=dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = host(A.sigmoid(xp, x))
        assert y.dtype == dtype
        assert y[0] == 0 and y[-1] == 1 and y[3] == 0.5
        # far in the negative tail the result is exp(x), with full relative precision (no cancellation)
        if dtype != np.float16:
            np.testing.assert_allclose(y[2], np.exp(-30.0), rtol=1e-6)
    # half precision is computed in float32: the tail below exp(-11) still holds its subnormal values
    assert A.sigmoid(np, np.array([-13.0], np.float16))[0] > 0


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_grad(xp, axis):
    x = rng(6).standard_normal((3, 4)) * 3
    y = A.softmax(xp, xp.asarray(x), axis=axis)
    e = np.exp(x)
    np.testing.assert_allclose(host(y), e / e.sum(axis=axis, keepdims=True), rtol=1e-13)
    dy = rng(7).standard_normal(x.shape)
    np.testing.assert_allclose(
        host(A.softmax_grad(xp, xp.asarray(dy), y, axis=axis)),
        numeric_grad(lambda: float(np.sum(A.softmax(np, x, axis=axis) * dy)), x), rtol=1e-6, atol=1e-9)


def test_softmax_is_stable_for_huge_logits(xp):
    x = xp.asarray([[1000.0, 1000.0, -1000.0]], dtype=np.float32)
    np.testing.assert_allclose(host(A.softmax(xp, x)), [[0.5, 0.5, 0.0]])


def test_activations_match_torch():
    torch = pytest.importorskip("torch")
    x = rng(8).standard_normal((4, 6)).astype(np.float32) * 3
    x[0, :3] = [-100.0, 100.0, -40.0]  # saturated sigmoid / tanh
    dy = rng(9).standard_normal(x.shape).astype(np.float32)
    cases = [
        (A.relu, lambda dy, x, y: A.relu_grad(np, dy, y), torch.relu),
        (A.sigmoid, lambda dy, x, y: A.sigmoid_grad(np, dy, y), torch.sigmoid),
        (A.tanh, lambda dy, x, y: A.tanh_grad(np, dy, y), torch.tanh),
        (lambda xp, x: A.softmax(xp, x), lambda dy, x, y: A.softmax_grad(np, dy, y),
         lambda t: torch.softmax(t, -1)),
        (A.leaky_relu, lambda dy, x, y: A.leaky_relu_grad(np, dy, x),
         lambda t: torch.nn.functional.leaky_relu(t, 0.2)),
        (A.gelu, lambda dy, x, y: A.gelu_grad(np, dy, x), torch.nn.functional.gelu),
    ]
    for forward, grad, torch_fn in cases:
        xt = torch.tensor(x, requires_grad=True)
        yt = torch_fn(xt)
        yt.backward(torch.tensor(dy))
        y = forward(np, x)
        np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grad(dy, x, y), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_gelu_tails_keep_their_relative_precision(xp):
    """Φ(x) is read from erfc on both sides: far left, x Φ(x) is tiny but exact to about 1e-14 relative (where
    1 + erf(x / √2) would cancel to 0), and ±inf / NaN give what PyTorch gives."""
    x = np.array([-11.0, -9.0, -6.0, -3.0, 1e-8, 3.0, 9.0, 50.0])
    want = x * np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])
    np.testing.assert_allclose(host(A.gelu(xp, xp.asarray(x))), want, rtol=1e-13, atol=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        special = host(A.gelu(xp, xp.asarray([np.nan, np.inf, -np.inf, -1e200, 1e200])))
        special_grad = host(A.gelu_grad(xp, xp.ones(3), xp.asarray([-1e200, 1e200, np.inf])))
    np.testing.assert_array_equal(special, [np.nan, np.inf, np.nan, -0.0, 1e200])
    np.testing.assert_array_equal(special_grad, [0.0, 1.0, np.nan])
    assert A.gelu(xp, xp.asarray([-1.0, 2.0], dtype=np.float16)).dtype == np.float16
