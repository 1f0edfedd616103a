"""`x.to(device)` of a local tensor inside nn.Graph.build: OneFlow 0.9 adds its copy op to the job (ToFunctor ->
CopyFunctor, core/functional/impl/array_functor.cpp@v0.9.0; test/graph/test_graph_copy.py moves the graph's input
to "cuda" in build). It raised "numpy() of a lazy tensor is not supported" here. Where CUDA is not usable "cuda"
runs on the CPU, as everywhere else. Expected values: numpy written here."""
import numpy as np

import oneflow as flow


def _linear(weight):
    m = flow.nn.Linear(4, 3, bias=False)
    with flow.no_grad():
        m.weight.copy_(flow.tensor(weight))
    return m


def test_input_moved_in_build_gives_the_eager_numbers():
    rng = np.random.default_rng(1)
    x, w = rng.random((5, 4)).astype(np.float32), rng.random((3, 4)).astype(np.float32)
    m = _linear(w).to("cuda")

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, x):
            y = x.to(flow.device("cuda"))
            assert y.device == flow.device("cuda:0") and y.is_local
            return self.m(y)

    out = G()(flow.tensor(x))
    assert out.device == flow.device("cuda:0")
    np.testing.assert_allclose(out.numpy(), x @ w.T, rtol=1e-5)


def test_move_back_to_cpu_and_train_through_it():
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    w = np.ones((3, 4), np.float32)
    m = _linear(w)
    opt = flow.optim.SGD(m.parameters(), lr=0.5)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.m(x.to("cuda").to("cpu")).sum()
            loss.backward()
            return loss

    loss = G()(flow.tensor(x))
    np.testing.assert_allclose(loss.numpy(), (x @ w.T).sum(), rtol=1e-5)
    # d loss / d W[i, :] = sum over rows of x
    np.testing.assert_allclose(m.weight.numpy(), w - 0.5 * x.sum(0)[None, :], rtol=1e-5)
