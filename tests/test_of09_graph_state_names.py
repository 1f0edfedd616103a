"""nn.Graph's state_dict names an optimizer state variable as OneFlow 0.9's optimizer passes do, "<variable>-<name>"
(job_rewriter/momentum_optm.cpp:29 "-momentum"; adam_optm.cpp:119-123 "-m", "-v", "-max_v"; rmsprop_optm.cpp:45,70
"-mean_square", "-mean_gradient"; adagrad_optm.cpp:67 "-sum", at v0.9.0), so a 0.9 graph checkpoint loads by these
keys (test/graph/test_graph_save_load.py reads "linear.weight-momentum"; it was "-momentum_buf" here). The values
are the eager optimizer's states, checked against numpy written here."""
import numpy as np
import pytest

import oneflow as flow

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 6


def _trained(opt_factory, steps=2):
    m = flow.nn.Linear(3, 2)
    with flow.no_grad():
        m.weight.fill_(0.5)
        m.bias.fill_(0.0)
    opt = opt_factory(m.parameters())

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.linear = m
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.linear(x).sum()
            loss.backward()
            return loss

    g = G()
    for _ in range(steps):
        g(flow.tensor(X))
    return g, opt, m


@pytest.mark.parametrize("factory, names", [
    (lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9), ["momentum"]),
    (lambda p: flow.optim.Adam(p, lr=0.1, amsgrad=True), ["m", "v", "max_v"]),
    (lambda p: flow.optim.AdamW(p, lr=0.1), ["m", "v"]),
    (lambda p: flow.optim.RMSprop(p, lr=0.1, centered=True), ["mean_square", "mean_gradient"]),
    (lambda p: flow.optim.Adagrad(p, lr=0.1), ["sum"]),
])
def test_state_keys_are_0_9s(factory, names):
    g, _, _ = _trained(factory)
    keys = [k for k in g.state_dict() if k.startswith("linear.")]
    assert sorted(keys) == sorted("linear.%s-%s" % (v, n) for v in ("weight", "bias") for n in names)


def test_momentum_state_holds_the_numbers_and_round_trips():
    g, opt, m = _trained(lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9))
    grad_w = np.broadcast_to(X.sum(0), (2, 3))  # d sum(x W^T + b) / dW: every row is the column sums of x
    # two steps, constant gradient: buf = g, then 0.9 g + g
    np.testing.assert_allclose(g.state_dict()["linear.weight-momentum"].numpy(), 1.9 * grad_w, rtol=1e-6)
    np.testing.assert_allclose(opt.state[m.weight]["momentum_buf"].numpy(), 1.9 * grad_w, rtol=1e-6)
    state = g.state_dict()

    g2, _, m2 = _trained(lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9), steps=0)
    g2.load_state_dict(state)
    g2(flow.tensor(X))
    g(flow.tensor(X))
    np.testing.assert_array_equal(m2.weight.numpy(), m.weight.numpy())
    np.testing.assert_array_equal(g2.state_dict()["linear.weight-momentum"].numpy(),
                                  g.state_dict()["linear.weight-momentum"].numpy())
