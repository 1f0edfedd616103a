"""kernels/loss.py: the cross-entropy losses against float64 log-softmax formulas, their gradients against central
differences, the legacy safe-log floor and label checks, and PyTorch when installed."""
import math
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import loss

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, numeric_grad, rng, xp  # noqa: E402,F401  (xp: fixture)


def _log_softmax(z):
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_sparse_softmax_cross_entropy_values_and_grad(xp):
    logits = rng(10).standard_normal((2, 3, 5))
    labels = np.array([[0, 4, 2], [1, 1, 3]], dtype=np.int32)
    out, prob = loss.sparse_softmax_cross_entropy(xp, xp.asarray(logits), xp.asarray(labels))
    assert out.shape == (2, 3) and out.dtype == logits.dtype
    expected = -np.take_along_axis(_log_softmax(logits), labels[..., None].astype(np.int64), -1)[..., 0]
    np.testing.assert_allclose(host(out), expected, rtol=1e-12)
    np.testing.assert_allclose(host(prob), np.exp(_log_softmax(logits)), rtol=1e-12)
    dloss = rng(11).standard_normal(out.shape)
    numeric = numeric_grad(
        lambda: float(np.sum(loss.sparse_softmax_cross_entropy(np, logits, labels)[0] * dloss)), logits)
    grad = loss.sparse_softmax_cross_entropy_grad(xp, xp.asarray(dloss), prob, xp.asarray(labels))
    np.testing.assert_allclose(host(grad), numeric, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(host(prob), np.exp(_log_softmax(logits)), rtol=1e-12)  # the grad left prob alone


def test_sparse_softmax_cross_entropy_safe_log_floor(xp):
    logits = xp.asarray([[0.0, 200.0]], dtype=np.float32)
    out, _ = loss.sparse_softmax_cross_entropy(xp, logits, xp.asarray([0], dtype=np.int64))
    assert out.dtype == np.float32 and out.shape == (1,)
    np.testing.assert_allclose(host(out), [-math.log(1e-20)], rtol=1e-6)  # clipped, not inf


@pytest.mark.parametrize("bad", [5, -1])
def test_sparse_softmax_cross_entropy_rejects_out_of_range_labels(xp, bad):
    # on the host the kernel raises; on a device it reads nothing back (no wait per op) and the error comes with
    # the next fetch, `host` here (kernels/checks.py)
    with pytest.raises(ValueError, match=r"^sparse_softmax_cross_entropy: label %d is out of range \[0, 5\)$" % bad):
        host(loss.sparse_softmax_cross_entropy(xp, xp.zeros((2, 5)), xp.asarray([1, bad], dtype=np.int64)))


def test_dense_softmax_cross_entropy_and_grad(xp):
    logits = rng(12).standard_normal((3, 4))
    labels = rng(13).dirichlet(np.ones(4), size=3)  # rows sum to 1, as the legacy grad assumes
    out = loss.softmax_cross_entropy(xp, xp.asarray(logits), xp.asarray(labels))
    np.testing.assert_allclose(host(out), -(labels * _log_softmax(logits)).sum(-1), rtol=1e-12)
    dloss = rng(14).standard_normal(out.shape)
    prob = np.exp(_log_softmax(logits))
    np.testing.assert_allclose(
        host(loss.softmax_cross_entropy_grad(xp, xp.asarray(dloss), xp.asarray(prob), xp.asarray(labels))),
        numeric_grad(lambda: float(np.sum(loss.softmax_cross_entropy(np, logits, labels) * dloss)), logits),
        rtol=1e-6, atol=1e-9)


def test_sigmoid_cross_entropy_and_grad(xp):
    z = rng(15).uniform(size=(3, 4))
    x = rng(12).standard_normal((3, 4)) * 10
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(host(loss.sigmoid_cross_entropy(xp, xp.asarray(x), xp.asarray(z))),
                               -(z * np.log(s) + (1 - z) * np.log(1 - s)), rtol=1e-9)
    d = rng(16).standard_normal(x.shape)
    np.testing.assert_allclose(
        host(loss.sigmoid_cross_entropy_grad(xp, xp.asarray(d), xp.asarray(x), xp.asarray(z))),
        numeric_grad(lambda: float(np.sum(loss.sigmoid_cross_entropy(np, x, z) * d)), x), rtol=1e-6, atol=1e-8)
    big = xp.asarray([-1000.0, 1000.0], dtype=np.float32)
    np.testing.assert_allclose(host(loss.sigmoid_cross_entropy(xp, big, xp.asarray([1.0, 0.0], np.float32))),
                               [1000.0, 1000.0])  # the overflow-free form


def test_losses_match_torch():
    torch = pytest.importorskip("torch")
    logits = rng(17).standard_normal((6, 10)).astype(np.float32)
    labels = rng(18).integers(0, 10, size=6).astype(np.int32)
    lt = torch.tensor(logits, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(lt, torch.tensor(labels, dtype=torch.int64), reduction="none")
    ref.sum().backward()
    out, prob = loss.sparse_softmax_cross_entropy(np, logits, labels)
    np.testing.assert_allclose(out, ref.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(loss.sparse_softmax_cross_entropy_grad(np, np.ones(6, np.float32), prob, labels),
                               lt.grad.numpy(), rtol=1e-5, atol=1e-7)
    dense = np.eye(10, dtype=np.float32)[labels]
    np.testing.assert_allclose(loss.softmax_cross_entropy(np, logits, dense), ref.detach().numpy(), rtol=1e-5)
    z = rng(19).uniform(size=logits.shape).astype(np.float32)
    lt = torch.tensor(logits, requires_grad=True)
    ref = torch.nn.functional.binary_cross_entropy_with_logits(lt, torch.tensor(z), reduction="none")
    ref.sum().backward()
    np.testing.assert_allclose(loss.sigmoid_cross_entropy(np, logits, z), ref.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(loss.sigmoid_cross_entropy_grad(np, np.ones_like(z), logits, z), lt.grad.numpy(),
                               rtol=1e-5, atol=1e-7)
