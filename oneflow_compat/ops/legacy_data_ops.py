"""Data ops of the legacy API beyond data_ops.py: decode_random (random batches from an initializer, OneFlow v0.3.4
`oneflow/core/operator/decode_random_op.cpp`), image_decoder_random_crop_resize (`image_decoder_random_crop_resize_
op.cpp`), and the old decode_ofrecord's image / bytes-list codecs and channel normalization (`decode_ofrecord_op.cpp`
holds them all in one op there; one op per blob here: ofrecord_jpeg_decoder, ofrecord_bytes_list_decoder,
norm_by_channel), COCOReader (`flow.data.coco_reader`; datasets/coco_io.py reads the files) and v0.4.0's
megatron_gpt_mmap_data_loader (datasets/megatron_io.py).

Randomness as in data_ops.py: the op's seed (the user's, else derived from the session's root seed and the names)
and its call count, one stream per logical row, so that no value depends on how the batch is split.
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.datasets import coco_io, megatron_io
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import random as random_k
from oneflow_compat.kernels import record_legacy as K
from oneflow_compat.kernels.array import object_array
from oneflow_compat.ops import initial_values
from oneflow_compat.ops.data_ops import _batch_sbp, _call_counter, _first_row, _session_state
from oneflow_compat.ops.nn_ops import dropout_seed as op_seed
from oneflow_compat.ops.registry import OpDef, register


def _stream(op, dev):
    return op_seed(op, dev.session), _call_counter(op, dev), _first_row(op, dev), (
        dev.index + 1 if dev.sbp_out[0] == S.M else 0)


# --- decode_random ---------------------------------------------------------------------------------------------------
def _decode_random_meta(op):
    return [TensorMeta((op.attrs["batch_size"],) + tuple(op.attrs["shape"]), op.attrs["dtype"])]


def _decode_random_build(op, dev):
    """Each call draws the whole logical batch from the initializer with a fresh seed; each device keeps its rows."""
    seed, next_call, _, device = _stream(op, dev)
    logical = op.outputs[0].shape
    piece = S.local_slices(logical, dev.sbp_out[0], dev.index, dev.parallel_num) if device == 0 else ()
    np_dtype = op.attrs["dtype"].np

    def run():
        key = random_k.call_key(seed, next_call(), device)
        shape = logical if device == 0 else tuple(dev.out_shapes[0])
        value = initial_values.generate(op.attrs["initializer"], shape, np_dtype, key & (2 ** 63 - 1))
        return dev.xp.asarray(value[piece] if piece else value)

    return run


register(OpDef("decode_random", infer=_decode_random_meta, build=_decode_random_build,
               sbp=lambda op: [((), (S.S(0),)), ((), (S.B,))]))


# --- image_decoder_random_crop_resize --------------------------------------------------------------------------------
def _crop_resize_meta(op):
    x = op.inputs[0]
    if x.dtype is not dtypes.tensor_buffer:
        raise TypeError("image_decoder_random_crop_resize '%s': the input must be a tensor buffer of encoded images "
                        "(flow.data.OFRecordBytesDecoder), got %s" % (op.name, x.dtype.name))
    return [TensorMeta(tuple(x.shape) + (op.attrs["target_height"], op.attrs["target_width"], 3), dtypes.uint8)]


def _crop_resize_build(op, dev):
    seed, next_call, first_row, device = _stream(op, dev)
    a = op.attrs

    def run(buffers):
        return K.decode_random_crop_resize(dev.xp, buffers, target_width=a["target_width"],
                                           target_height=a["target_height"], seed=seed, call=next_call(),
                                           first_row=first_row, device=device, random_area=tuple(a["random_area"]),
                                           random_aspect_ratio=tuple(a["random_aspect_ratio"]),
                                           num_attempts=a["num_attempts"])

    return run


register(OpDef("image_decoder_random_crop_resize", infer=_crop_resize_meta, build=_crop_resize_build,
               sbp=_batch_sbp))


# --- the old decode_ofrecord's codecs ----------------------------------------------------------------------------------
def _record_blob_meta(op):
    x = op.inputs[0]
    if x.dtype is not dtypes.record:
        raise TypeError("%s '%s': the input must be an OFRecord blob, got %s" % (op.type, op.name, x.dtype.name))
    return [TensorMeta((x.shape[0],) + tuple(op.attrs["shape"]), op.attrs["dtype"])]


def _jpeg_build(op, dev):
    seed, next_call, first_row, device = _stream(op, dev)
    a = op.attrs

    def run(records):
        return K.jpeg_decode_records(dev.xp, records, name=a["name"], shape=tuple(a["shape"]), np_dtype=a["dtype"].np,
                                     preprocess=a["preprocess"], seed=seed, call=next_call(), first_row=first_row,
                                     device=device)

    return run


register(OpDef("ofrecord_jpeg_decoder", infer=_record_blob_meta, build=_jpeg_build, sbp=_batch_sbp))
register(OpDef("ofrecord_bytes_list_decoder", infer=_record_blob_meta,
               build=lambda op, dev: (lambda records: K.bytes_list_decode(
                   dev.xp, records, name=op.attrs["name"], shape=tuple(op.attrs["shape"]),
                   np_dtype=op.attrs["dtype"].np)),
               sbp=_batch_sbp))


def _norm_meta(op):
    x = op.inputs[0]
    axis = len(x.shape) - 1 if op.attrs["data_format"] == "channels_last" else 1
    if len(op.attrs["mean"]) not in (1, x.shape[axis]) or len(op.attrs["std"]) != len(op.attrs["mean"]):
        raise ValueError("norm_by_channel '%s': %d means and %d stds for %d channels" % (
            op.name, len(op.attrs["mean"]), len(op.attrs["std"]), x.shape[axis]))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


register(OpDef("norm_by_channel", infer=_norm_meta, kernel=K.norm_by_channel,
               kernel_attrs=lambda op: {k: op.attrs[k] for k in ("mean", "std", "data_format")},
               sbp=lambda op: [((S.S(0),), (S.S(0),)), ((S.B,), (S.B,))]))


# --- COCOReader (v0.3.4 `oneflow/user/ops/coco_reader_op.cpp`, `oneflow/user/data/coco_*`) --------------------------
_COCO_OUTPUTS = ((dtypes.tensor_buffer, ()), (dtypes.int64, ()), (dtypes.int32, (2,)), (dtypes.tensor_buffer, ()),
                 (dtypes.tensor_buffer, ()), (dtypes.tensor_buffer, ()), (dtypes.tensor_buffer, ()))


def _coco_meta(op):
    n = op.attrs["batch_size"]
    return [TensorMeta((n,) + tail, dtype) for dtype, tail in _COCO_OUTPUTS]


def _coco_build(op, dev):
    """Each device reads its shard of the images (the outputs are split along the batch: S(0)), batches of
    batch_size / parallel_num images; the reader lives with the session."""
    a = op.attrs
    n, parts = a["batch_size"], dev.parallel_num
    index = dev.index
    if op.attrs.get("nd_sbp") is not None:  # OneFlow 0.9's nn.COCOReader: its sbp= (broadcast: the whole batch)
        from oneflow_compat.ops.data_ops import reader_share
        index, parts = reader_share(op, dev)
    if parts > 1 and n % parts:
        raise ValueError("COCOReader '%s': batch_size %d is not divisible by the %d devices of its placement"
                         % (op.name, n, parts))
    state = _session_state(dev.session)
    key = ("coco_reader", op.job.name, a.get("module", op.name), dev.index, parts)  # one stream per module
    reader = state.get(key)
    if reader is None:
        meta_key = ("coco_meta", a["annotation_file"], a["image_dir"], a["remove_images_without_annotations"])
        meta = state.get(meta_key)
        if meta is None:
            meta = state[meta_key] = coco_io.COCOMeta(a["annotation_file"], a["image_dir"],
                                                      a["remove_images_without_annotations"])
        reader = state[key] = coco_io.COCOReader(
            meta, n // parts, parts, index, a["stride_partition"], a["shuffle_after_epoch"],
            op_seed(op, dev.session), a["group_by_ratio"])
    xp = dev.xp

    def read():
        rows = [reader.meta.sample(i) for i in reader.next_batch()]
        cols = list(zip(*rows))
        return (object_array(list(cols[0])), xp.asarray(np.array(cols[1], np.int64)), xp.asarray(np.stack(cols[2])),
                object_array(list(cols[3])), object_array(list(cols[4])), object_array(list(cols[5])),
                object_array(list(cols[6])))

    return read


register(OpDef("COCOReader", infer=_coco_meta, build=_coco_build, num_outputs=7,
               sbp=lambda op: [((), (op.attrs.get("nd_sbp") or S.S(0),) * 7)]))


# --- megatron_gpt_mmap_data_loader (v0.4.0 `oneflow/user/ops/gpt_data_loader_op.cpp`, `gpt_data_loader_kernel.cpp`)
def _gpt_meta(op):
    a = op.attrs
    outs = [TensorMeta((a["batch_size"], a["seq_length"] + a["label_length"]), a["dtype"])]
    if op.inputs:  # start_from_saved_progress: the iteration variable's next value (assigned by the surface)
        it = op.inputs[0]
        if it.dtype is not dtypes.int64 or tuple(it.shape) != (1,):
            raise ValueError("%s '%s': iteration must be an int64 blob of shape (1,), got %s %s"
                             % (op.type, op.name, it.dtype.name, it.shape))
        outs.append(TensorMeta((1,), dtypes.int64))
    return outs


def _gpt_sbp(op):
    """The layout `parallel_distribution` names (one entry per placement dimension: S(0) or B; none: S(0)); on an
    n-D placement an n-D SBP, on a mesh whose every axis it names."""
    dist = op.attrs["parallel_distribution"] or ("S(0)",)
    sbps = [S.B if d == "B" else S.S(0) for d in dist]
    pl = op.placement
    if pl is not None and pl.is_nd and len(sbps) == len(pl.hierarchy):
        out = S.nd(sbps, pl.hierarchy)
        extra = (S.nd((S.B,) * len(sbps), pl.hierarchy),) if op.inputs else ()
        return [((extra[0],) * len(op.inputs) if op.inputs else (), (out,) + extra)]
    extra = (S.B,) if op.inputs else ()
    return [((S.B,) * len(op.inputs), (sbps[0],) + extra)]


def _gpt_build(op, dev):
    """Each device reads its rows of every batch: sample iter · batch + (its first row) + i (on a mesh, the rows its
    nested piece holds)."""
    a = op.attrs
    lo, hi = S.piece_range(op.outputs[0].shape, dev.sbp_out[0], dev.index, dev.parallel_num, 0)
    local = hi - lo
    shards = a["batch_size"] // local if local else 1
    if a["num_samples"] % shards or a["batch_size"] % shards:
        raise ValueError("%s '%s': num_samples %d and batch_size %d must be divisible by the %d shards"
                         % (op.type, op.name, a["num_samples"], a["batch_size"], shards))
    state = _session_state(dev.session)
    key = ("gpt_dataset", a["data_file_prefix"], a["seq_length"], a["label_length"], a["num_samples"],
           tuple(a["split_sizes"]), a["split_index"], a["shuffle"], op_seed(op, dev.session))
    dataset = state.get(key)
    if dataset is None:
        dataset = state[key] = megatron_io.MegatronGPTMMapDataset(
            a["data_file_prefix"], a["seq_length"], a["label_length"], a["num_samples"], a["split_sizes"],
            a["split_index"], a["shuffle"], op_seed(op, dev.session))
    next_call = _call_counter(op, dev)
    np_dtype, xp = a["dtype"].np, dev.xp

    def batch(it):
        first = it * a["batch_size"] + lo
        return xp.asarray(np.stack([dataset.sample(first + i, np_dtype) for i in range(local)]))

    if not op.inputs:
        return lambda: batch(next_call())

    def run(iteration):
        it = int(devices.to_host(iteration).reshape(-1)[0])
        return batch(it), xp.asarray(np.array([it + 1], np.int64))

    return run


register(OpDef("megatron_gpt_mmap_data_loader", infer=_gpt_meta, build=_gpt_build, sbp=_gpt_sbp))
