"""A parameter group's "lr_scale" in nn.Graph (OneFlow 0.9: Optimizer._generate_lr_scale_for_optim_conf,
python/oneflow/optim/optimizer.py:437@v0.9.0, becomes the update op's `learning_rate_scale`, which the kernel
multiplies into its rate first: user/kernels/model_update_kernel_util.cpp:59). An eager `optimizer.step()` ignores
the key, as 0.9's does (test/graph/test_graph_lr_scale.py expects exactly that; it failed: the graph ignored it).
Expected values: numpy formulas written here."""
import numpy as np
import pytest

import oneflow as flow


class _Block(flow.nn.Module):
    def __init__(self, feats):
        super().__init__()
        self.param = flow.nn.Parameter(flow.ones(feats))

    def forward(self, x):
        return x * self.param


class _Chain(flow.nn.Module):
    def __init__(self, feats, depth):
        super().__init__()
        self.layers = flow.nn.ModuleList([_Block(feats) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _groups(model, scales):
    return [{"params": layer.parameters(), "lr_scale": s} for layer, s in zip(model.layers, scales)]


def _graph(model, optimizer):
    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = model
            self.add_optimizer(optimizer)

        def build(self, x):
            out = self.m(x)
            out.sum().backward()
            return out

    return G()


def test_sgd_groups_scale_their_rate_in_a_graph_over_two_steps():
    rng = np.random.default_rng(0)
    x = rng.random((3, 5)).astype(np.float32)
    scales, lr = [0.1, 0.5, 1.0], 0.2
    model = _Chain(5, 3)
    g = _graph(model, flow.optim.SGD(_groups(model, scales), lr=lr))
    w = [np.ones(5, np.float32) for _ in scales]
    for _ in range(2):
        g(flow.tensor(x))
        # d sum(x * w0 * w1 * w2) / d wi = sum over rows of x * prod(w_j, j != i)
        grads = [(x * np.prod([w[j] for j in range(3) if j != i], axis=0)).sum(0) for i in range(3)]
        w = [w[i] - np.float32(np.float32(lr) * np.float32(scales[i])) * grads[i] for i in range(3)]
    for layer, want in zip(model.layers, w):
        np.testing.assert_allclose(layer.param.numpy(), want, rtol=1e-5)


def test_adam_group_scale_multiplies_the_whole_step():
    x = np.arange(4, dtype=np.float32).reshape(2, 2) + 1
    model = _Chain(2, 1)
    g = _graph(model, flow.optim.Adam(_groups(model, [0.25]), lr=0.1))
    g(flow.tensor(x))
    grad = x.sum(0)
    m, v = 0.1 * grad, 0.001 * grad * grad
    step = (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
    np.testing.assert_allclose(model.layers[0].param.numpy(), 1 - 0.1 * 0.25 * step, rtol=1e-5)


@pytest.mark.parametrize("with_scale", [True, False])
def test_eager_step_ignores_lr_scale(with_scale):
    x = np.full((2, 3), 2.0, np.float32)
    model = _Chain(3, 1)
    groups = _groups(model, [0.1]) if with_scale else [{"params": model.parameters()}]
    opt = flow.optim.SGD(groups, lr=1.0)
    model(flow.tensor(x)).sum().backward()
    opt.step()
    np.testing.assert_allclose(model.layers[0].param.numpy(), 1 - x.sum(0))
