"""`flow.utils.checkpoint.checkpoint` (OneFlow 0.9's eager activation checkpointing): the loss and every gradient
(inputs', parameters') equal the run without it, dropout included (the recomputation replays the random state);
tuple outputs, inputs that want no gradient, no_grad, and a call inside nn.Graph's build."""
import numpy as np

import oneflow_compat as flow
from oneflow_compat.utils.checkpoint import checkpoint


def _train(use_checkpoint, x_grad=True, pair=False):
    flow.manual_seed(1)
    a, b, drop = flow.nn.Linear(4, 8), flow.nn.Linear(8, 3), flow.nn.Dropout(0.3)

    def block(x):
        h = drop(flow.relu(a(x)))
        return (h, h * 2) if pair else h

    x = flow.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4), requires_grad=x_grad)
    out = checkpoint(block, x) if use_checkpoint else block(x)
    h = out[0] + out[1] if pair else out
    loss = b(h).square().sum()
    loss.backward()
    return [loss.numpy(), a.weight.grad.numpy(), a.bias.grad.numpy(), b.weight.grad.numpy()] + \
        ([x.grad.numpy()] if x_grad else [])


def test_checkpoint_gives_the_gradients_of_the_plain_run():
    for kw in ({}, {"x_grad": False}, {"pair": True}):
        plain, checked = _train(False, **kw), _train(True, **kw)
        assert len(plain) == len(checked)
        for p, c in zip(plain, checked):
            np.testing.assert_array_equal(c, p)


def test_checkpoint_without_grad_and_in_a_graph():
    layer = flow.nn.Linear(3, 2)
    x = flow.ones(4, 3)
    with flow.no_grad():
        y = checkpoint(layer, x)
    assert not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), layer(x).detach().numpy())

    class Eval(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def build(self, x):
            return checkpoint(self.layer, x)

    np.testing.assert_allclose(Eval()(x).numpy(), y.numpy(), rtol=1e-6)
