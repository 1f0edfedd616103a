"""Random tensors created inside nn.Graph.build: ops of the job that draw fresh values at every call of the graph.

OneFlow 0.9's random functors (core/functional/impl/random_functor.cpp @ v0.9.0: RandN, Rand, RandInt, RandPerm,
Normal and their Global forms) dispatch their op (`normal`, `uniform`, `uniform_int`, `randperm`) like any other
op: inside a graph's build it becomes an op of the job, so every call of the graph draws new numbers (only the
tensor constructors, `flow.tensor` & co., are made eagerly there). Values made in Python during the build would be
traced once into a constant of the job instead.

Here each is the job's `generator_draw_like` op (ops/random_like_ops.py) given the generator's state at the trace,
which the trace advances by one draw, as OneFlow 0.9's Global random functors take (and advance) their default
generator's state for the lazy op's seed (core/functional/impl/random_functor.cpp:253-258, 429-441, 593-596 @
v0.9.0): the graph's first call draws the numbers the eager op would have drawn from that state (`flow.manual_seed`
in build and eagerly: the same), later calls fresh numbers. The whole logical tensor is drawn and each device
keeps its piece, so N devices draw 1 device's numbers.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, dispatch, functional as F, lazy


def _shape_of_noise(shape, dtype, device, placement, sbp):
    """An eager zeros tensor the job captures as a constant: the shape, dtype and layout of the draws."""
    with lazy.eager_constants():
        if placement is None:
            return creation.zeros(*shape, dtype=dtype, device=device)
        from oneflow_compat import sbp as flow_sbp

        sbp = [flow_sbp.broadcast if s == flow_sbp.partial_sum else s for s in sbp]
        return creation.zeros(*shape, dtype=dtype, placement=placement, sbp=sbp)


def _draw(like, generator, placement, kind, **attrs):
    """The job's `generator_draw_like` op of `kind` given the generator's (seed, draw counter) now; the generator
    moves on by one draw, as an eager draw moves it."""
    gen = creation._generator(placement, generator)
    seed = int(gen.initial_seed())
    draw = int(gen._draws)
    gen._next_key()
    attrs.update(kind=kind, seed=seed, draw=draw)
    return dispatch.apply_op("generator_draw_like", [like], attrs)


def random(kind, shape, dtype, generator, device, placement, sbp, low=0, high=1, mean=0.0, std=1.0):
    """A random tensor of `kind` ("rand", "randn", "normal", "randint") as ops of the job being traced."""
    floating = dtype if dtype.is_floating else dtypes.float64  # (randint: integer values, exact in float64)
    like = _shape_of_noise(shape, floating, device, placement, sbp)
    if kind == "rand":
        return _draw(like, generator, placement, "uniform", low=0.0, high=1.0)
    if kind in ("randn", "normal"):
        return _draw(like, generator, placement, "normal", mean=float(mean), std=float(std))
    if kind == "randint":
        drawn = _draw(like, generator, placement, "integers", low=int(low), high=int(high))
        return F.cast(drawn, dtype) if drawn.dtype != dtype else drawn
    raise ValueError("graph_random.random: unknown kind %r" % kind)


def randperm(n, dtype, generator, device, placement, sbp):
    """A permutation of range(n), the generator's draw."""
    like = _shape_of_noise((n,), dtypes.float64, device, placement, sbp)
    order = _draw(like, generator, placement, "permutation")
    return F.cast(order, dtype) if order.dtype != dtype else order


creation.IN_GRAPH.update(random=random, randperm=randperm)
