"""Random tensors created inside nn.Graph.build: ops of the job that draw fresh values at every call of the graph.

OneFlow 0.9's random functors (core/functional/impl/random_functor.cpp @ v0.9.0: RandN, Rand, RandInt, RandPerm,
Normal and their Global forms) dispatch their op (`normal`, `uniform`, `uniform_int`, `randperm`) like any other
op: inside a graph's build it becomes an op of the job, so every call of the graph draws new numbers (only the
tensor constructors, `flow.tensor` & co., are made eagerly there). Values made in Python during the build would be
traced once into a constant of the job instead.

Here each is built on the job's `uniform_like` op (ops/random_like_ops.py: U[0, 1) of a shape, a function of the
op's seed, the call index and the logical shape, each device keeping its piece, so N devices draw 1 device's
numbers): `rand` is it, `randint` its scaled floor, `randperm` the argsort of one draw; their numbers are the
job's, not the eager generator's; a generator given seeds the draws. `randn` / `normal` are the job's `normal_like`
op given the generator's state at the trace (OneFlow 0.9's lazy random ops take it as their seed attr): the first
call of the graph draws what the eager op would have drawn from that state, later calls fresh numbers.
"""
import math

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, dispatch, functional as F, lazy
from oneflow_compat._global import tensor_functions as TF


def _shape_of_noise(shape, dtype, device, placement, sbp):
    """An eager zeros tensor the job captures as a constant: the shape, dtype and layout of the draws."""
    with lazy.eager_constants():
        if placement is None:
            return creation.zeros(*shape, dtype=dtype, device=device)
        from oneflow_compat import sbp as flow_sbp

        sbp = [flow_sbp.broadcast if s == flow_sbp.partial_sum else s for s in sbp]
        return creation.zeros(*shape, dtype=dtype, placement=placement, sbp=sbp)


def _uniform(like, generator, stream):
    seed = None if generator is None else int(generator.initial_seed()) + stream  # (two draws of one generator)
    return dispatch.apply_op("uniform_like", [like], {"seed": seed})


def _generator_normal(like, generator, placement, mean, std):
    """The job's `normal_like` op (ops/random_like_ops.py) given the generator's state at the trace, which it
    advances by one draw, as OneFlow 0.9's GlobalNormalFunctor takes (and advances) its default generator's state
    for the lazy op's seed (core/functional/impl/random_functor.cpp:429-441 @ v0.9.0): the graph's first call draws
    the numbers the eager op would draw from that state (`flow.manual_seed(s)` in build and eagerly: the same)."""
    gen = creation._generator(placement, generator)
    seed = int(gen.initial_seed())
    draw = int(gen._draws)
    gen._next_key()  # (the draw is the graph's: the generator moves on, as an eager draw moves it)
    return dispatch.apply_op("normal_like", [like], {"seed": seed, "draw": draw, "mean": float(mean),
                                                     "std": float(std)})


def random(kind, shape, dtype, generator, device, placement, sbp, low=0, high=1, mean=0.0, std=1.0):
    """A random tensor of `kind` ("rand", "randn", "normal", "randint") as ops of the job being traced."""
    floating = dtype if dtype.is_floating else dtypes.float64  # (randint: draws fine enough for any range)
    like = _shape_of_noise(shape, floating, device, placement, sbp)
    if kind == "rand":
        return _uniform(like, generator, 0)
    if kind in ("randn", "normal"):
        return _generator_normal(like, generator, placement, mean, std)
    if kind == "randint":
        u = _uniform(like, generator, 0)
        drawn = F.add(F.floor(F.mul(u, float(high - low))), float(low))
        return F.cast(drawn, dtype)
    raise ValueError("graph_random.random: unknown kind %r" % kind)


def randperm(n, dtype, generator, device, placement, sbp):
    """A permutation of range(n): the argsort of n fresh uniform draws (every call of the graph a new one)."""
    like = _shape_of_noise((n,), dtypes.float64, device, placement, sbp)
    order = TF.argsort(_uniform(like, generator, 0))
    return F.cast(order, dtype) if order.dtype != dtype else order


creation.IN_GRAPH.update(random=random, randperm=randperm)
