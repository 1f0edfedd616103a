"""`uniform_like`: U[0, 1) noise of an input's shape and dtype, drawn by the job at every call (OneFlow 0.9's
`uniform` op, here shaped like its input): what `gumbel_softmax` needs inside an nn.Graph, where noise made in
Python during the build would be traced once into a constant.

As dropout's mask (ops/nn_ops.py), the noise is a function of the op's seed (the session's root seed and the
op's name, or the `seed` attr), the call index and the logical shape only, each device taking its piece: N devices
draw 1 device's numbers, and every call of the graph draws fresh ones.

`generator_draw_like`: the draw of a generator at a given state (normal, uniform, integers, permutation), made by
the job: what flow.randn / normal / rand / randint / randperm become inside nn.Graph.build (see below).
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import random as random_k
from oneflow_compat.ops import nn_ops
from oneflow_compat.ops.registry import OpDef, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _meta(op):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise TypeError("uniform_like '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _device_draws(op, dev):
    """What a random *_like op's device needs for its draws: the logical shape, whether the input is mirrored (each
    device an independent tensor), this device's piece of the logical tensor, and `next_call()`, the op's call
    number on this device (a new stream per call)."""
    logical = tuple(op.inputs[0].shape)
    mirrored = dev.sbp_in[0] == S.M
    piece = () if mirrored else S.local_slices(logical, dev.sbp_in[0], dev.index, dev.parallel_num)
    calls = nn_ops._call_counters(dev.session)
    counter = (op.job.name, op.name, dev.index)

    def next_call():
        call = calls.get(counter, 0)
        calls[counter] = call + 1
        return call

    return logical, mirrored, piece, next_call


def _build(op, dev):
    xp = dev.xp
    seed = nn_ops.dropout_seed(op, dev.session)
    logical, mirrored, piece, next_call = _device_draws(op, dev)
    dtype = op.inputs[0].dtype.np

    def run(like):
        call = next_call()
        if mirrored:  # each device an independent tensor: its own stream
            return random_k.uniform_piece(xp, random_k.call_key(seed, call, dev.index), tuple(like.shape), (), dtype)
        return random_k.uniform_piece(xp, random_k.call_key(seed, call), logical, piece, dtype)

    return run


def _sbp(op):
    # the input only gives the shape: a partial-sum input gets whole (broadcast) noise
    nd = len(op.inputs[0].shape)
    return [_sig([S.S(i)], [S.S(i)]) for i in range(nd)] + [_sig([S.B], [S.B]), _sig([S.P], [S.B])]


register(OpDef("uniform_like", infer=_meta, build=_build, sbp=_sbp))


# --- generator_draw_like: a generator's draw, made by the job ---------------------------------------------------
# OneFlow 0.9 gives a random op traced in nn.Graph.build the generator's state as its `seed` attr
# (core/functional/impl/random_functor.cpp @ v0.9.0: GlobalNormalFunctor:429-441, GlobalRandFunctor:253-258,
# GlobalRandIntFunctor:593-596 take `engine()()` of the default generator, advancing it, as the eager path does),
# and the graph's kernel, seeded with it, draws the numbers the eager op would have drawn from that state: after
# `flow.manual_seed(s)` the graph's first call and the eager draw agree (test/graph/test_graph_normal_inplace.py).
# Here the `seed` and `draw` attrs are the generator's seed and its draw counter at the trace: the first call draws
# exactly the eager draw of that state (kernels/random.py `generator_*`, the functions both use), later calls a
# fresh stream each. The whole logical tensor is drawn and each device keeps its piece, as the eager global draw
# does: N devices give 1 device's numbers. `kind`: "normal" (attrs mean, std), "uniform" (low, high), "integers"
# (low, high: integer values in the floating dtype, cast by the caller) or "permutation" (of the 1-d length).
# Local tensors take the state the same way. (0.9's local NormalFunctor gives the lazy op the generator's seed
# alone, `gen->current_seed()` at :358-359, without advancing it, so two local normal ops of one graph draw the
# same numbers there; that is not copied.)
DRAW_KINDS = ("normal", "uniform", "integers", "permutation")


def _draw_meta(op):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise TypeError("generator_draw_like '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    if op.attrs.get("seed") is None:
        raise ValueError("generator_draw_like '%s': attr 'seed' (the generator's seed) is required" % op.name)
    kind = op.attrs.get("kind", "normal")
    if kind not in DRAW_KINDS:
        raise ValueError("generator_draw_like '%s': kind must be one of %s, got %r" % (op.name, DRAW_KINDS, kind))
    if kind == "permutation" and len(x.shape) != 1:
        raise ValueError("generator_draw_like '%s': a permutation is 1-d, got shape %s" % (op.name, tuple(x.shape)))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def draw_key(seed, draw, call):
    """The Philox key of call `call` of a generator_draw_like op traced at draw `draw` of a generator seeded `seed`:
    the generator's own key for that draw at the first call (its eager draw), then a stream of the op's own."""
    if call == 0:
        return random_k.call_key(seed, draw)
    return random_k.call_key(random_k.derived_seed(seed, "nn.Graph generator draw %d" % draw), call)


def _draw(kind, key, shape, dtype, attrs):
    if kind == "normal":
        return random_k.generator_normal(key, shape, dtype, float(attrs.get("mean", 0.0)),
                                         float(attrs.get("std", 1.0)))
    if kind == "uniform":
        return random_k.generator_uniform(key, shape, dtype, float(attrs.get("low", 0.0)),
                                          float(attrs.get("high", 1.0)))
    if kind == "integers":
        return random_k.generator_integers(key, int(attrs.get("low", 0)), int(attrs.get("high", 2)), shape, dtype)
    return random_k.generator_permutation(key, shape[0]).astype(dtype)


def _draw_build(op, dev):
    xp = dev.xp
    seed, draw = int(op.attrs["seed"]), int(op.attrs.get("draw", 0))
    kind = op.attrs.get("kind", "normal")
    logical, mirrored, piece, next_call = _device_draws(op, dev)
    dtype = op.inputs[0].dtype.np

    def run(like):
        key = draw_key(seed, draw, next_call())
        if mirrored:  # each device an independent tensor: its own stream (device 0 the generator's)
            if dev.index:
                key = random_k.call_key(key, 0, dev.index)
            return xp.asarray(_draw(kind, key, tuple(like.shape), dtype, op.attrs))
        full = _draw(kind, key, logical, dtype, op.attrs)
        return xp.asarray(full[piece] if piece else full)

    return run


register(OpDef("generator_draw_like", infer=_draw_meta, build=_draw_build, sbp=_sbp))
