"""gumbel_softmax inside nn.Graph (it was refused): the job's `uniform_like` op draws the noise at every call, as
dropout's mask, so each step has fresh noise and N devices draw 1 device's numbers."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.kernels import random as random_k

from simulated_ranks import on_ranks


class _Gumbel(nn.Graph):
    def __init__(self, tau=1.0, hard=False):
        super().__init__()
        self.tau, self.hard = tau, hard

    def build(self, x):
        return nn.functional.gumbel_softmax(x, tau=self.tau, hard=self.hard)


def test_fresh_noise_every_call_and_samples_on_the_simplex():
    flow.manual_seed(0)
    graph = _Gumbel(tau=0.5)
    x = flow.tensor(np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32))
    first, second = graph(x).numpy(), graph(x).numpy()
    np.testing.assert_allclose(first.sum(1), 1.0, rtol=1e-5)
    assert (first > 0).all() and not np.allclose(first, second)
    # softmax((x + g) / tau): tau · log(sample) - x is the Gumbel noise up to a constant per row
    noise = 0.5 * np.log(first.astype(np.float64)) - x.numpy()
    assert np.ptp(noise - noise.mean(1, keepdims=True)) > 0.5


def test_hard_samples_follow_the_softmax_of_the_logits():
    """P(argmax(x + g) = i) = softmax(x)_i for standard Gumbel g: 4000 one-hot draws of one row of logits."""
    flow.manual_seed(3)
    logits = np.array([1.0, 0.0, -1.0, 0.5], np.float32)
    x = flow.tensor(np.tile(logits, (4000, 1)))
    hard = _Gumbel(hard=True)(x).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(1) == 1).all()
    expected = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(hard.mean(0), expected, atol=0.03)  # 4 sigma of a binomial of 4000 draws


def test_two_ranks_draw_one_ranks_numbers():
    a = np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32)

    def body():
        flow.manual_seed(7)
        n = flow.env.get_world_size()
        x = flow.tensor(a, placement=flow.placement("cpu", list(range(n))), sbp=flow.sbp.split(0))
        graph = _Gumbel(tau=0.7)
        out = [graph(x), graph(x)]
        return [t.to_global(sbp=flow.sbp.broadcast).to_local().numpy() for t in out]

    (one,) = on_ranks(1, body)
    two = on_ranks(2, body)
    for rank_result in two:
        for got, want in zip(rank_result, one):
            np.testing.assert_array_equal(got, want)
    assert not np.array_equal(one[0], one[1])


def test_straight_through_gradient_trains_in_a_graph():
    flow.manual_seed(4)
    lin = nn.Linear(3, 4)
    w0 = lin.weight.numpy().copy()
    opt = flow.optim.SGD(lin.parameters(), lr=0.5)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = lin
            self.add_optimizer(opt)

        def build(self, x):
            y = nn.functional.gumbel_softmax(self.lin(x), tau=1.0, hard=True)
            loss = (y * flow.tensor(np.array([1.0, -1.0, 2.0, 0.5], np.float32))).sum()
            loss.backward()
            return loss

    loss = Train()(flow.tensor(np.random.default_rng(5).standard_normal((8, 3)).astype(np.float32)))
    assert np.isfinite(loss.numpy())
    assert not np.allclose(lin.weight.numpy(), w0)  # the soft sample's gradient reached the weight


def test_a_generator_seeds_the_graphs_noise():
    x = flow.tensor(np.zeros((3, 4), np.float32))

    class WithGen(nn.Graph):
        def __init__(self, seed):
            super().__init__()
            self.gen = flow.Generator()
            self.gen.manual_seed(seed)

        def build(self, x):
            return nn.functional.gumbel_softmax(x, generator=self.gen)

    a, b, c = WithGen(5)(x).numpy(), WithGen(5)(x).numpy(), WithGen(6)(x).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


@pytest.mark.parametrize("shape,piece", [((6, 5), (slice(0, 3),)), ((6, 5), (slice(3, 6),)),
                                         ((4, 3, 5), (slice(None), slice(1, 3)))])
def test_uniform_pieces_are_slices_of_the_whole(shape, piece):
    whole = random_k.uniform_piece(np, 123, shape, (), np.float64)
    assert whole.shape == shape and (whole >= 0).all() and (whole < 1).all()
    np.testing.assert_array_equal(random_k.uniform_piece(np, 123, shape, piece, np.float64), whole[piece])
    np.testing.assert_array_equal(whole.reshape(-1), random_k.uniform_slice(np, 123, shape, 0, whole.size))


def test_detach_inside_a_graph_cuts_the_gradient_as_eagerly():
    """(it did not: the detached lazy tensor was the same blob of the job, so `hard - soft.detach() + soft` had a
    zero gradient in a graph)"""
    a = np.random.default_rng(6).standard_normal((5, 3)).astype(np.float32)

    def loss_of(z):
        return ((z - z.detach()) * z.detach() * 3 + z.detach() ** 2).sum()

    def weights_after(graph_mode):
        flow.manual_seed(8)
        lin = nn.Linear(3, 2)
        opt = flow.optim.SGD(lin.parameters(), lr=0.1)
        x = flow.tensor(a)
        if graph_mode:
            class Train(nn.Graph):
                def __init__(self):
                    super().__init__()
                    self.lin = lin
                    self.add_optimizer(opt)

                def build(self, x):
                    loss = loss_of(self.lin(x))
                    loss.backward()
                    return loss

            Train()(x)
        else:
            loss_of(lin(x)).backward()
            opt.step()
        return lin.weight.numpy(), lin.bias.numpy()

    for got, want in zip(weights_after(True), weights_after(False)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
