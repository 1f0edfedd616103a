"""nn.Graph.build as OneFlow 0.9 traces it, where it used to fail or differ:

* `y[idx]` with an index tensor computed inside build: the index stays in the job (wrapped, scaled and gathered by
  ops of the job), differentiable in the gathered tensor, as 0.9's lazy tensor_getitem
  (api/python/functional/indexing.cpp @ v0.9.0); a boolean mask computed in build is refused (its result's shape
  depends on its values);
* `flow.tensor(..., placement=, sbp=)` in build is made eagerly (LazyMode::Guard(false) in
  api/python/functional/tensor_api.cpp @ v0.9.0) and read by the job as a constant it captured;
* a parameter outside the graph's modules is a free eager tensor: a constant the job does not train
  (lazy_op_interpreter.cpp AddFreeEagerTensorToVariableOp, "Free EagerTensor not trainable"); an optimizer of the
  graph holding one is refused before the build, and a parameter bound to two optimizers too (optim/optimizer.py
  _check_variables_in_graph / _check_variables_optimizer_bound)."""
import numpy as np
import pytest

import oneflow_compat as flow
from simulated_ranks import on_ranks

W0 = np.arange(15, dtype=np.float32).reshape(5, 3) / 10


class Picker(flow.nn.Module):
    """Rows of its weight picked by indices computed from the input (an embedding looked up by argmax)."""

    def __init__(self):
        super().__init__()
        self.w = flow.nn.Parameter(flow.tensor(W0))

    def forward(self, x, col):
        idx = flow.argmax(x, dim=1)  # int64, computed in build
        rows = self.w[idx]  # (n, 3)
        picked = self.w[idx - 5, col]  # negative lazy indices beside a host index: (n,)
        return rows, picked


def _train_graph(model, lr=0.5):
    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = model
            self.add_optimizer(flow.optim.SGD(model.parameters(), lr=lr))

        def build(self, x):
            rows, picked = self.m(x, [2, 0, 1])
            loss = (rows * rows).sum() + picked.sum() * 3
            loss.backward()
            return rows, picked, loss

    return G()


X = np.array([[0.0, 5.0, 1.0, 0.0, 0.0], [3.0, 0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 9.0]], np.float32)


def _numpy_step(w, x, lr):
    idx = x.argmax(axis=1)
    rows = w[idx]
    picked = w[idx, [2, 0, 1]]
    grad = np.zeros_like(w)
    np.add.at(grad, idx, 2 * rows)
    np.add.at(grad, (idx, [2, 0, 1]), 3.0)
    return rows, picked, (rows * rows).sum() + picked.sum() * 3, w - lr * grad


def test_indices_computed_in_build_are_gathered_in_the_job_with_gradients():
    model = Picker()
    g = _train_graph(model)
    w = W0.copy()
    for _ in range(2):  # the second call runs the compiled job: the index is data of each call
        rows, picked, loss = g(flow.tensor(X))
        want_rows, want_picked, want_loss, w = _numpy_step(w, X, 0.5)
        np.testing.assert_allclose(rows.numpy(), want_rows, rtol=1e-6)
        np.testing.assert_allclose(picked.numpy(), want_picked, rtol=1e-6)
        np.testing.assert_allclose(loss.numpy(), want_loss, rtol=1e-5)
        np.testing.assert_allclose(model.w.numpy(), w, rtol=1e-5, atol=1e-6)
    # other data, other indices: the graph reads them when it runs
    x2 = X[::-1].copy()
    rows, _, _ = g(flow.tensor(x2))
    np.testing.assert_allclose(rows.numpy(), w[x2.argmax(axis=1)], rtol=1e-6)


def test_eval_graph_gathers_on_two_ranks_as_on_one():
    def body():
        placement = flow.placement("cpu", [0, 1])
        w = flow.tensor(W0, placement=placement, sbp=flow.sbp.split(1))

        class G(flow.nn.Graph):
            def build(self, x):
                return w[flow.argmax(x, dim=1)]

        x = flow.tensor(X, placement=placement, sbp=flow.sbp.split(0))
        return G()(x).numpy()

    for got in on_ranks(2, body):
        np.testing.assert_allclose(got, W0[X.argmax(axis=1)])


def test_a_mask_computed_in_build_is_refused_clearly():
    class G(flow.nn.Graph):
        def build(self, x):
            return x[x > 1]

    with pytest.raises(IndexError, match="boolean mask computed inside build"):
        G()(flow.tensor(X))


def test_flow_tensor_with_placement_in_build_is_a_constant_of_the_job():
    placement = flow.placement("cpu", [0])

    class G(flow.nn.Graph):
        def build(self, x):
            c = flow.tensor([1.0, 2.0, 3.0], placement=placement, sbp=flow.sbp.broadcast)
            assert not c.is_lazy and c.is_global  # made eagerly, as 0.9's TensorWithData functors do
            return x * c

    g = G()
    for k in range(2):
        x = flow.ones(2, 3, placement=placement, sbp=flow.sbp.broadcast) * (k + 1)
        np.testing.assert_allclose(g(x).numpy(), np.array([[1.0, 2.0, 3.0]] * 2) * (k + 1))


def test_flow_tensor_split_in_build_on_two_ranks():
    def body():
        placement = flow.placement("cpu", [0, 1])

        class G(flow.nn.Graph):
            def build(self, x):
                c = flow.tensor(np.arange(4, dtype=np.float32), placement=placement, sbp=flow.sbp.split(0))
                return x + c

        x = flow.ones(4, placement=placement, sbp=flow.sbp.broadcast)
        return G()(x).numpy()

    for got in on_ranks(2, body):
        np.testing.assert_allclose(got, np.arange(4) + 1.0)


def test_a_parameter_outside_the_graphs_modules_is_not_trained():
    lin = flow.nn.Linear(2, 1)
    free = flow.nn.Parameter(flow.tensor([1.0, 2.0]))

    class G(flow.nn.Graph):
        def __init__(self, params):
            super().__init__()
            self.lin = lin
            self.add_optimizer(flow.optim.SGD(params, lr=1.0))

        def build(self, x):
            loss = self.lin(x * free).sum()
            loss.backward()
            return loss

    with pytest.raises(ValueError, match=r"^Parameter <.*> is not in the corresponding nn.Graph/nn.Module. Please "
                                         r"make sure you call the module's to\(\.\.\)/to_global\(\.\.\.\) method "
                                         r"first, then add the module's parameters into an optimizer\.$"):
        G(list(lin.parameters()) + [free])(flow.ones(3, 2))
    w = lin.weight.numpy().copy()
    G(list(lin.parameters()))(flow.ones(3, 2))
    # the module's weight is trained (d loss / d w = 3 * free); the free parameter is a constant of the job
    np.testing.assert_allclose(lin.weight.numpy(), w - np.array([[3.0, 6.0]]), rtol=1e-6)
    np.testing.assert_allclose(free.numpy(), [1.0, 2.0])
    assert free.grad is None


def test_a_parameter_bound_to_two_optimizers_is_refused():
    lin = flow.nn.Linear(2, 1)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin
            self.add_optimizer(flow.optim.SGD(lin.parameters(), lr=1.0))
            self.add_optimizer(flow.optim.Adam([lin.weight], lr=1.0))

        def build(self, x):
            loss = self.lin(x).sum()
            loss.backward()
            return loss

    with pytest.raises(ValueError, match=r"^<lin\.weight> is already bound to another optimizer\.$"):
        G()(flow.ones(3, 2))


def test_a_graph_refuses_tensor_and_optimizer_attributes():
    # nn/graph/graph.py Graph.__setattr__ @ v0.9.0: a graph holds tensors through modules, optimizers through
    # add_optimizer
    class HoldsTensor(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.p = flow.nn.Parameter(flow.ones(2))

    class HoldsOptimizer(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.opt = flow.optim.SGD(flow.nn.Linear(2, 1).parameters(), lr=0.1)

    with pytest.raises(AttributeError, match=r"^'HoldsTensor' nn.Graph is not allowed to set Tensor attribute named "
                                             r"'p'. Please use nn.Module to hold the tensor, then add the nn.Module "
                                             r"to nn.Graph.$"):
        HoldsTensor()
    with pytest.raises(AttributeError, match=r"^'HoldsOptimizer' nn.Graph is not allowed to set Optimizer attribute "
                                             r"named 'opt'. Please use add_optimizer\(...\) instead.$"):
        HoldsOptimizer()


def _random_graph(placement, sbp, generator=None, local=True):
    class G(flow.nn.Graph):
        def build(self, x):
            kw = dict(placement=placement, sbp=sbp, generator=generator)
            return (flow.randn(4000, **kw), flow.rand(4000, **kw), flow.randint(2, 7, (4000,), **kw),
                    flow.normal(3.0, 0.5, (4000,), **kw), flow.randperm(8, **kw),
                    flow.randn(2, 3) if local else x * 2, x * 1)

    return G()


def test_random_tensors_in_build_are_ops_of_the_job_drawn_at_every_call():
    # OneFlow 0.9's random functors dispatch their op: inside build an op of the job (random_functor.cpp)
    placement = flow.placement("cpu", [0])
    g = _random_graph(placement, flow.sbp.broadcast)
    x = flow.ones(2, placement=placement, sbp=flow.sbp.broadcast)
    first = [t.numpy() for t in g(x)]
    second = [t.numpy() for t in g(x)]
    for a, b in zip(first[:6], second[:6]):
        assert a.shape == b.shape and (a != b).any()  # fresh values at every call, not constants of the build
    randn, rand, randint, normal, perm, local = first[:6]
    assert randn.dtype == np.float32 and abs(randn.mean()) < 0.1 and abs(randn.std() - 1) < 0.1
    assert 0 <= rand.min() and rand.max() < 1 and abs(rand.mean() - 0.5) < 0.05
    assert randint.dtype == np.int64 and set(np.unique(randint)) == {2, 3, 4, 5, 6}
    assert abs(normal.mean() - 3) < 0.05 and abs(normal.std() - 0.5) < 0.05
    assert perm.dtype == np.int64 and sorted(perm) == list(range(8))
    assert local.shape == (2, 3)
    # a generator given seeds the job's draws: two graphs traced from one generator state draw alike (the trace
    # takes the state and advances it, as OneFlow 0.9's GlobalNormalFunctor does: random_functor.cpp:429-441)
    gen = flow.Generator()
    gen.manual_seed(21)
    one = _random_graph(placement, flow.sbp.broadcast, gen)(x)[0].numpy()
    gen.manual_seed(21)
    two = _random_graph(placement, flow.sbp.broadcast, gen)(x)[0].numpy()
    np.testing.assert_array_equal(one, two)


def test_random_tensors_in_build_on_two_ranks_equal_one_rank():
    def draws(n):
        flow.manual_seed(5)
        placement = flow.placement("cpu", list(range(n)))
        g = _random_graph(placement, flow.sbp.split(0) if n > 1 else flow.sbp.broadcast, local=False)
        x = flow.ones(2, placement=placement, sbp=flow.sbp.broadcast)
        return [t.numpy() for t in g(x)[:4]]

    (one,) = on_ranks(1, lambda: draws(1))
    for got in on_ranks(2, lambda: draws(2)):
        for a, b in zip(got, one):
            np.testing.assert_array_equal(a, b)
