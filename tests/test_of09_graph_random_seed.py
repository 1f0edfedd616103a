"""Random draws inside nn.Graph.build take the generator's state, as OneFlow 0.9's do.

OneFlow v0.9.0 (core/functional/impl/random_functor.cpp:429-441, GlobalNormalFunctor) gives the lazy `normal` op the
default generator's next engine output as its `seed` attr, the value the eager path derives its draw from; the
graph's kernel seeded with it draws what the eager op draws from the same state. So `flow.manual_seed(233)` inside
build then `flow.normal(..., out=data)` gives, at the graph's first call, the numbers of `flow.manual_seed(233)`
then the same eager draw (test/graph/test_graph_normal_inplace.py asserts it for every placement and SBP). Here the
job's `generator_draw_like` op takes the generator's seed and draw counter at the trace (ops/random_like_ops.py).
"""
import numpy as np

import oneflow_compat as flow
from simulated_ranks import on_ranks


def _normal(data, placement=None, sbp=None):
    if placement is None:
        return flow.normal(size=data.shape, mean=0.0, std=1.0, out=data)
    return flow.normal(size=data.shape, mean=0.0, std=1.0, out=data, placement=placement, sbp=sbp)


def _graph_vs_eager(placement, sbp, shape=(8, 6, 5)):
    data_1 = flow.empty(*shape).to_global(placement=placement, sbp=sbp)
    data_2 = flow.empty(*shape).to_global(placement=placement, sbp=sbp)

    class GlobalNormalGraph(flow.nn.Graph):
        def build(self):
            flow.manual_seed(233)
            _normal(data_1, placement, sbp)
            return data_1

    graph = GlobalNormalGraph()
    lazy_first = graph()
    lazy_second = graph()
    flow.manual_seed(233)
    _normal(data_2, placement, sbp)
    # (a local tensor made global with split(k) on N ranks is N pieces: the logical shape grows, as in 0.9)
    return lazy_first.numpy(), lazy_second.numpy(), data_2.numpy(), lazy_first.to_local().numpy(), \
        data_2.to_local().numpy()


def _reference(shape, seed=233, draw=0):
    # the eager global draw: a seeded generator's normal draw number `draw`, the whole logical tensor
    gen = flow.Generator()
    gen.manual_seed(seed)
    for _ in range(draw):
        gen.normal((1,), np.float32)
    return gen.normal(shape, np.float32)


def test_global_normal_in_graph_equals_eager_draw_of_the_same_seed_every_sbp():
    want = _reference((8, 6, 5))
    placement = flow.placement("cpu", [0])
    for sbp in (flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1), flow.sbp.split(2)):
        first, second, eager, first_local, eager_local = _graph_vs_eager(placement, sbp)
        np.testing.assert_array_equal(first_local, eager_local)
        np.testing.assert_array_equal(first, eager)
        np.testing.assert_array_equal(first, want)
        assert (second != first).all() and abs(second.mean()) < 0.3  # the next call: fresh draws
    assert abs(want.mean()) < 0.3 and 0.8 < want.std() < 1.2


def test_global_normal_in_graph_on_two_ranks_equals_one_rank_and_eager():
    def run():
        placement = flow.placement("cpu", [0, 1])
        out = []
        for sbp in (flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)):
            first, second, eager, first_local, eager_local = _graph_vs_eager(placement, sbp)
            np.testing.assert_array_equal(first_local, eager_local)  # each rank's piece
            out.append((first, second, eager))
        return out

    def one_rank(shape):
        first, second, eager, _, _ = _graph_vs_eager(flow.placement("cpu", [0]), flow.sbp.broadcast, shape)
        return first, second, eager

    (ones,) = on_ranks(1, lambda: [one_rank(s) for s in ((8, 6, 5), (16, 6, 5), (8, 12, 5))])
    for got in on_ranks(2, run):
        for (first, second, eager), (one_first, one_second, _) in zip(got, ones):
            np.testing.assert_array_equal(first, _reference(first.shape))
            np.testing.assert_array_equal(eager, first)
            np.testing.assert_array_equal(first, one_first)
            np.testing.assert_array_equal(second, one_second)  # later calls too: N devices == 1 device


def test_the_trace_takes_one_draw_of_the_generator():
    # 0.9's `engine()()` advances the generator: an eager draw after the build is the generator's second draw
    placement = flow.placement("cpu", [0])

    class G(flow.nn.Graph):
        def build(self):
            return flow.randn(3, 4, placement=placement, sbp=flow.sbp.broadcast)

    flow.manual_seed(7)
    graph = G()
    lazy = graph().numpy()
    after = flow.randn(3, 4, placement=placement, sbp=flow.sbp.broadcast).numpy()
    np.testing.assert_array_equal(lazy, _reference((3, 4), seed=7, draw=0))
    # (the reference's first draw is of shape (1,): the key depends on the draw number alone)
    np.testing.assert_array_equal(after, _reference((3, 4), seed=7, draw=1))


def test_local_normal_inplace_in_graph_draws_and_given_generator_seeds_it():
    # test_graph_normal_inplace.py's local case: the graph's draw into a captured eager tensor is not zeros
    for device in ("cpu", "cuda"):
        data_1 = flow.zeros(16, 8).to(device)

        class NormalGraph(flow.nn.Graph):
            def build(self):
                _normal(data_1).to(device)
                return data_1

        lazy_x = NormalGraph()()
        assert lazy_x.numpy().sum() != 0 and lazy_x.numpy().std() > 0.5
    gen = flow.Generator()
    gen.manual_seed(99)

    class Seeded(flow.nn.Graph):
        def build(self):
            return flow.randn(5, 6, generator=gen)

    np.testing.assert_array_equal(Seeded()().numpy(), _reference((5, 6), seed=99))


def test_graph_normal_on_the_device_equals_eager(monkeypatch):
    # the job's generator_draw_like draws on the host and copies the piece up, as the eager draw does (fake device or GPU)
    import strict_device

    strict_device.suite_gpu_or_fake(monkeypatch)
    placement = flow.placement("cuda", [0])

    class G(flow.nn.Graph):
        def build(self):
            flow.manual_seed(3)
            return (flow.randn(4, 5, placement=placement, sbp=flow.sbp.split(0)),
                    flow.normal(1.0, 2.0, (6,), device="cuda"))

    lazy, local = G()()
    flow.manual_seed(3)
    eager = flow.randn(4, 5, placement=placement, sbp=flow.sbp.split(0))
    np.testing.assert_array_equal(lazy.numpy(), eager.numpy())
    np.testing.assert_array_equal(lazy.numpy(), _reference((4, 5), seed=3))
    assert local.device.type == "cuda" and local.numpy().std() > 0.5


def test_tensor_normal_inplace_in_graph_equals_eager_local_and_global():
    # Tensor.normal_ is nn.init.normal_, i.e. flow.normal(..., out=tensor) (0.9 framework/tensor.py:276-277)
    placement = flow.placement("cpu", [0])
    for make_global in (True, False):
        d1, d2 = flow.zeros(4, 5), flow.zeros(4, 5)
        if make_global:
            d1, d2 = (d.to_global(placement, flow.sbp.split(1)) for d in (d1, d2))

        class G(flow.nn.Graph):
            def build(self):
                flow.manual_seed(233)
                d1.normal_(0, 1)
                return d1

        lazy = G()().numpy()
        flow.manual_seed(233)
        d2.normal_(0, 1)
        np.testing.assert_array_equal(lazy, d2.numpy())
        np.testing.assert_array_equal(lazy, _reference((4, 5)))


def test_rand_randint_randperm_in_graph_equal_eager_draws_and_two_ranks_equal_one():
    # 0.9's GlobalRand / GlobalRandInt functors take the generator state too (random_functor.cpp:253-258, 593-596)
    def draws(n):
        placement = flow.placement("cpu", list(range(n)))
        sbp = flow.sbp.split(0) if n > 1 else flow.sbp.broadcast
        kw = dict(placement=placement, sbp=sbp)

        class G(flow.nn.Graph):
            def build(self):
                flow.manual_seed(17)
                return (flow.rand(6, 3, **kw), flow.randint(2, 9, (6, 3), **kw), flow.randperm(10, **kw),
                        flow.randn(4, **kw))

        graph = G()
        lazy = [t.numpy() for t in graph()]
        second = [t.numpy() for t in graph()]
        flow.manual_seed(17)
        eager = [flow.rand(6, 3, **kw).numpy(), flow.randint(2, 9, (6, 3), **kw).numpy(),
                 flow.randperm(10, **kw).numpy(), flow.randn(4, **kw).numpy()]
        return lazy, second, eager

    (one,) = on_ranks(1, lambda: draws(1))
    lazy, second, eager = one
    for a, b in zip(lazy, eager):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert lazy[0].dtype == np.float32 and 0 <= lazy[0].min() and lazy[0].max() < 1
    assert lazy[1].dtype == np.int64 and set(np.unique(lazy[1])) <= set(range(2, 9))
    assert sorted(lazy[2]) == list(range(10))
    assert (second[0] != lazy[0]).all()  # the next call: fresh draws
    for lazy2, second2, eager2 in on_ranks(2, lambda: draws(2)):
        for a, b in zip(lazy2 + second2 + eager2, lazy + second + eager):
            np.testing.assert_array_equal(a, b)
