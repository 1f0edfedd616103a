"""`flow.math.gelu` (legacy `oneflow.math.gelu`, exact erf-based GELU) through a whole train job on 1 and 2 devices:
its values and its gradient (read with `flow.watch_diff`) against x Φ(x) and Φ(x) + x φ(x) computed with
math.erfc, and against PyTorch when installed. The op's SBP signatures and its gradient rule are checked from its
rows in oneflow_compat/ops/examples.py (tests/test_validate_signatures.py, tests/test_gradcheck_all_ops.py)."""
import math

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import typing as tp

X = np.random.default_rng(11).standard_normal((6, 5)).astype(np.float32) * 3


def _phi(x):
    return np.vectorize(lambda v: 0.5 * math.erfc(-v / math.sqrt(2)))(x.astype(np.float64))


def _run(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    seen = {}

    def keep(g: tp.Numpy):
        seen["grad"] = g

    @flow.global_function(type="train")
    def gelu_job(x: tp.Numpy.Placeholder(X.shape)) -> tp.Numpy:
        v = flow.get_variable("v", shape=X.shape, initializer=flow.zeros_initializer())
        flow.watch_diff(v, keep)
        y = flow.math.gelu(x + v)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.0]), momentum=0).minimize(
            flow.math.reduce_sum(y))
        return y

    return gelu_job(X), seen["grad"]


@pytest.mark.parametrize("devices", [1, 2])
def test_gelu_values_and_gradient(devices):
    y, g = _run(devices)
    assert y.dtype == np.float32 and g.dtype == np.float32
    x = X.astype(np.float64)
    np.testing.assert_allclose(y, x * _phi(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, _phi(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi), rtol=1e-5, atol=1e-6)


def test_gelu_matches_torch():
    torch = pytest.importorskip("torch")
    y, g = _run(1)
    xt = torch.tensor(X, requires_grad=True)
    yt = torch.nn.functional.gelu(xt)
    yt.sum().backward()
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=1e-5, atol=1e-6)
