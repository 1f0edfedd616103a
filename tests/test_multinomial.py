"""`flow.multinomial` and `flow.distributions.Categorical` (OneFlow 0.9): shapes, dtype, frequencies against the
probabilities over many draws under a fixed seed (deterministic), no repeats and no zero-probability index without
replacement, the seed replaying the draws, OneFlow's errors."""
import numpy as np
import pytest

import oneflow_compat as flow


def test_multinomial_draws_follow_the_probabilities():
    flow.manual_seed(0)
    p = np.array([[1.0, 2.0, 7.0], [5.0, 5.0, 0.0]], np.float32)  # unnormalized rows
    drawn = flow.multinomial(flow.tensor(p), 20000, replacement=True)
    assert drawn.dtype == flow.int64 and tuple(drawn.shape) == (2, 20000)
    for row, probs in zip(drawn.numpy(), p / p.sum(1, keepdims=True)):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / row.size, probs, atol=0.015)
    one = flow.tensor(np.array([0.1, 0.2, 0.7], np.float32))
    firsts = np.array([int(flow.multinomial(one, 1).numpy()[0]) for _ in range(2000)])
    np.testing.assert_allclose(np.bincount(firsts, minlength=3) / firsts.size, [0.1, 0.2, 0.7], atol=0.03)


def test_multinomial_without_replacement_and_the_seed():
    flow.manual_seed(5)
    p = flow.tensor(np.array([[0.2, 0.0, 0.3, 0.5], [1.0, 1.0, 1.0, 1.0]], np.float32))
    for _ in range(50):
        drawn = flow.multinomial(p, 3).numpy()
        assert all(len(set(row)) == 3 for row in drawn) and 1 not in drawn[0]
    flow.manual_seed(11)
    first = flow.multinomial(p, 2).numpy()
    flow.manual_seed(11)
    np.testing.assert_array_equal(flow.multinomial(p, 2).numpy(), first)
    assert tuple(p.multinomial(2).shape) == (2, 2)  # the tensor method
    with pytest.raises(RuntimeError, match="^cannot sample n_sample > prob_dist.size\\(-1\\) samples without "
                                           "replacement$"):
        flow.multinomial(p, 5)
    with pytest.raises(RuntimeError, match="^prob_dist must be 1 or 2 dim, got 3$"):
        flow.multinomial(flow.ones(2, 2, 2), 1)


def test_categorical():
    flow.manual_seed(3)
    d = flow.distributions.Categorical(probs=flow.tensor(np.array([1.0, 1.0, 2.0], np.float32)))
    assert d.batch_shape == flow.Size([]) and tuple(d.sample().shape) == () and tuple(d.sample((2, 3)).shape) == (2, 3)
    np.testing.assert_allclose(d.probs.numpy(), [0.25, 0.25, 0.5])
    logits = np.array([[0.0, 1.0], [2.0, 0.0]], np.float32)
    d = flow.distributions.Categorical(logits=flow.tensor(logits))
    assert d.batch_shape == flow.Size([2])
    draws = d.sample((4000,))
    assert tuple(draws.shape) == (4000, 2)
    want = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    np.testing.assert_allclose(draws.numpy().mean(0), want[:, 1], atol=0.03)
    np.testing.assert_allclose(np.exp(d.logits.numpy()), want, rtol=1e-6)
    with pytest.raises(ValueError, match="^Either `probs` or `logits` must be specified, but not both.$"):
        flow.distributions.Categorical()
