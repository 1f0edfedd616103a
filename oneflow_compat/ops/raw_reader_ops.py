"""`raw_reader` (OneFlow 0.9's op type, oneflow/user/kernels/raw_reader_kernel.cpp): a source reading fixed-size
instances from raw files (datasets/raw_io.py holds the format and the batch order), one batch of
(batch_size,) + shape per call; split(0) over the placement (each shard its blocks of the batch: OneFlow's
shard index over the split axes of the `nd_sbp`) or broadcast (every device the whole batch). The reader position
lives with the session under the op's stream name (nn.RawReader's module attribute), so eager calls continue it.
"""
from oneflow_compat.datasets import raw_io
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ops.data_ops import _session_state, _source_sbp, _stream_name, reader_share
from oneflow_compat.ops.nn_ops import dropout_seed as op_seed
from oneflow_compat.ops.registry import OpDef, register


def _meta(op):
    a = op.attrs
    return [TensorMeta((int(a["batch_size"]),) + tuple(int(d) for d in a["shape"]), a["data_type"])]


def _build(op, dev):
    a = op.attrs
    shard, shards = reader_share(op, dev)
    state = _session_state(dev.session)
    key = ("raw_reader", op.job.name, _stream_name(op), dev.index, dev.parallel_num)
    stream = state.get(key)
    if stream is None:
        stream = state[key] = raw_io.RawStream(
            a["files"], a["shape"], a["data_type"].np, int(a["batch_size"]), bool(a["random_shuffle"]),
            int(a["shuffle_block_size"]), op_seed(op, dev.session), shard, shards)

    def read():
        return dev.xp.asarray(stream.next_batch())

    return read


register(OpDef("raw_reader", infer=_meta, build=_build, sbp=_source_sbp))
