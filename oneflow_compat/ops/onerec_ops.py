"""OneRec ops of OneFlow v0.4.0 (`oneflow/user/ops/onerec_reader_op.cpp`, `onerec_decoder_op.cpp`): `OneRecReader`
(a batch of raw examples, a tensor buffer blob, split along the batch) and `onerec_decoder` (one feature of every
example as an array). The file format, sharding and shuffles are datasets/onerec_io.py's.

Randomness as in data_ops.py: the shuffle seed is the op's (the user's, else derived from the session's root seed
and the names)."""
from oneflow_compat.datasets import onerec_io
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import record as record_k
from oneflow_compat.kernels.array import object_array
from oneflow_compat.ops.data_ops import _session_state, reader_share
from oneflow_compat.ops.nn_ops import dropout_seed as op_seed
from oneflow_compat.ops.registry import OpDef, register


def _reader_build(op, dev):
    a = op.attrs
    batch = a["batch_size"]
    split = dev.parallel_num > 1 and dev.sbp_out[0] != S.B and not S.is_nd(dev.sbp_out[0])
    if split and batch % dev.parallel_num:
        # OneFlow: CHECK_EQ(local_batch_size % parallel_num, 0)
        raise ValueError("OneRecReader '%s': batch_size %d is not divisible by the %d devices of its placement"
                         % (op.name, batch, dev.parallel_num))
    state = _session_state(dev.session)
    share, shares = (dev.index, dev.parallel_num) if split else (0, 1)
    if S.is_nd(dev.sbp_out[0]):  # a mesh: the devices holding one piece read the same share
        share, shares = reader_share(op, dev)
    key = ("onerec", op.job.name, op.attrs.get("module") or op.name, dev.index, dev.parallel_num)
    reader = state.get(key)
    if reader is None:
        reader = state[key] = onerec_io.OneRecReader(
            a["files"], dev.out_shapes[0][0], a["random_shuffle"], a["shuffle_mode"], a["shuffle_buffer_size"],
            a["shuffle_after_epoch"], a["verify_example"], seed=a["seed"] if a["seed"] != -1 else op_seed(
                op, dev.session), parallel_id=share, parallel_num=shares)

    def read():
        return object_array(reader.next_batch())

    return read


register(OpDef("OneRecReader", infer=lambda op: [TensorMeta((op.attrs["batch_size"],), dtypes.tensor_buffer)],
               build=_reader_build, sbp=lambda op: [((), (op.attrs.get("nd_sbp") or S.S(0),))]))


def _decoder_meta(op):
    x = op.inputs[0]
    if x.dtype is not dtypes.tensor_buffer or len(x.shape) != 1:
        raise TypeError("onerec_decoder '%s': the input must be the (batch,) tensor buffer of flow.data.onerec_reader, "
                        "got %s %s" % (op.name, x.dtype.name, x.shape))
    return [TensorMeta((x.shape[0],) + tuple(op.attrs["static_shape"]), op.attrs["data_type"],
                       op.attrs["is_dynamic"])]


register(OpDef("onerec_decoder", infer=_decoder_meta, kernel=record_k.onerec_decode,
               kernel_attrs=lambda op: {"key": op.attrs["key"], "np_dtype": op.attrs["data_type"].np,
                                        "static_shape": tuple(op.attrs["static_shape"]),
                                        "is_dynamic": op.attrs["is_dynamic"],
                                        "reshape": op.attrs["reshape"] if op.attrs["has_reshape"] else None,
                                        "batch_padding": (op.attrs["batch_padding"] if op.attrs["has_batch_padding"]
                                                          else None)},
               sbp=lambda op: [((S.S(0),), (S.S(0),))]))
