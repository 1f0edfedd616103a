"""`uniform_like`: U[0, 1) noise of an input's shape and dtype, drawn by the job at every call (OneFlow 0.9's
`uniform` op, here shaped like its input): what `gumbel_softmax` needs inside an nn.Graph, where noise made in
Python during the build would be traced once into a constant.

As dropout's mask (ops/nn_ops.py), the noise is a function of the op's seed (the session's root seed and the
op's name, or the `seed` attr), the call index and the logical shape only, each device taking its piece: N devices
draw 1 device's numbers, and every call of the graph draws fresh ones.
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


def _build(op, dev):
    xp = dev.xp
    seed = nn_ops.dropout_seed(op, dev.session)
    logical = tuple(op.inputs[0].shape)
    mirrored = dev.sbp_in[0] == S.M
    piece = () if mirrored else S.local_slices(logical, dev.sbp_in[0], dev.index, dev.parallel_num)
    calls = nn_ops._call_counters(dev.session)
    counter = (op.job.name, op.name, dev.index)
    dtype = op.inputs[0].dtype.np

    def run(like):
        call = calls.get(counter, 0)
        calls[counter] = call + 1
        if mirrored:  # each device an independent tensor: its own stream
            return random_k.uniform_piece(xp, random_k.call_key(seed, call, dev.index), tuple(like.shape), (), dtype)
        return random_k.uniform_piece(xp, random_k.call_key(seed, call), logical, piece, dtype)

    return run


def _sbp(op):
    # the input only gives the shape: a partial-sum input gets whole (broadcast) noise
    nd = len(op.inputs[0].shape)
    return [_sig([S.S(i)], [S.S(i)]) for i in range(nd)] + [_sig([S.B], [S.B]), _sig([S.P], [S.B])]


register(OpDef("uniform_like", infer=_meta, build=_build, sbp=_sbp))
