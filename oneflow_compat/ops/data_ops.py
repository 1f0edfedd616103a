"""Host-side OFRecord data-pipeline ops: the reader, the record decoders, image resize / crop-mirror-normalize and
the coin flip (legacy `flow.data.*`, `flow.image.*`, `flow.random.CoinFlip`; legacy-api.md §1.2, §2.16).

Blob values: a `record` blob holds a numpy object array of parsed OFRecord messages (one per batch row); a
`tensor_buffer` blob holds a numpy object array of HWC ndarrays (images of different sizes). Both always live on
the host, whatever device the placement names (OneFlow registers these ops CPU-only); numeric outputs are handed to
the placement's array module, so GPU ops can consume them.

Layout: every op works row by row along the batch, so its signatures are S(0)->S(0) and B->B; the sources (reader,
coin flip) produce S(0), each device its share of the logical batch (the reader from its share of the part files).

Randomness (record shuffling, crop windows, coin flips) draws from the op's seed — the user's, else one derived from
the session's root seed and the job and op names — and a call counter kept with the session. Eager mode rebuilds
ops on every call and still continues the same streams (and the same reader position).
"""

from oneflow_compat.backend import devices
from oneflow_compat.datasets import ofrecord_io
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import image as image_k
from oneflow_compat.kernels import random as random_k
from oneflow_compat.kernels import record as record_k
from oneflow_compat.kernels.array import object_array
from oneflow_compat.ops.nn_ops import dropout_seed as op_seed
from oneflow_compat.ops.registry import OpDef, register

# --- state kept with the session ------------------------------------------------------------------------------
def _session_state(session):
    """{key: reader or call count}: readers and call counters outlive one built closure (eager mode rebuilds every
    op on every call), so they live with the session (its `op_state`)."""
    if session is None:
        return {}
    return session.op_state.setdefault("data ops", {})


def _stream_name(op):
    """The name this op's state (reader position, call count) is kept under: the op's, or the `module` attribute
    of OneFlow 0.9's module API (each nn.OFRecordReader, nn.CoinFlip, … its own stream, whatever eager op names)."""
    return op.attrs.get("module") or op.name


def _call_counter(op, dev):
    """A function returning 0, 1, 2, … on successive calls of this op on this device."""
    state = _session_state(dev.session)
    key = ("calls", op.job.name, _stream_name(op), dev.index)

    def next_call():
        call = state.get(key, 0)
        state[key] = call + 1
        return call

    return next_call


def _is_split(dev):
    return dev.parallel_num > 1 and bool(S.split_axes(dev.sbp_out[0]))


def _first_row(op, dev):
    """Logical batch index of this device's first row (0 unless the output is split; on a mesh, nested)."""
    if not _is_split(dev):
        return 0
    return S.piece_range(op.outputs[0].shape, dev.sbp_out[0], dev.index, dev.parallel_num, 0)[0]


# --- SBP -------------------------------------------------------------------------------------------------------
def _batch_sbp(op):
    n_in, n_out = len(op.inputs), len(op.outputs)
    return [((S.S(0),) * n_in, (S.S(0),) * n_out), ((S.B,) * n_in, (S.B,) * n_out)]


def _source_sbp(op):
    """S(0); or the layout the `nd_sbp` attribute names (OneFlow 0.9's readers and coin flip take the `sbp=` of
    their module: split(0) or broadcast on each placement dimension)."""
    return [((), (op.attrs.get("nd_sbp") or S.S(0),) * len(op.outputs))]


def reader_share(op, dev):
    """(share index, number of shares) of the records this device reads: its piece of the batch among the
    batch's pieces (S(0): its own share of the part files; B: the whole stream; n-D: its split axes' piece)."""
    lo, hi = S.piece_range(op.outputs[0].shape, dev.sbp_out[0], dev.index, dev.parallel_num, 0)
    local = hi - lo
    return (lo // local, op.outputs[0].shape[0] // local) if local else (0, 1)


def _buffer_meta(op):
    return [TensorMeta((op.inputs[0].shape[0],), dtypes.tensor_buffer)]


# --- reader ----------------------------------------------------------------------------------------------------
def _reader_build(op, dev):
    a = op.attrs
    batch = a["batch_size"]
    # split (S(0)) or mirrored: each device reads from its own share of the part files
    shares_parts = dev.parallel_num > 1 and dev.sbp_out[0] != S.B
    if _is_split(dev) and batch % dev.parallel_num and not S.is_nd(dev.sbp_out[0]):
        raise ValueError("ofrecord_reader '%s': batch_size %d is not divisible by the %d devices of its placement"
                         % (op.name, batch, dev.parallel_num))
    local_batch = dev.out_shapes[0][0]
    share, shares = (dev.index, dev.parallel_num) if shares_parts else (0, 1)
    if S.is_nd(dev.sbp_out[0]):  # a mesh: the devices holding one piece read the same share
        share, shares = reader_share(op, dev)
    state = _session_state(dev.session)
    key = ("reader", op.job.name, _stream_name(op), dev.index, dev.parallel_num)
    reader = state.get(key)
    if reader is None:
        reader = state[key] = ofrecord_io.RecordReader(
            a["ofrecord_dir"], local_batch, a["data_part_num"], a["part_name_prefix"], a["part_name_suffix_length"],
            a["random_shuffle"], a["shuffle_buffer_size"], a["shuffle_after_epoch"], seed=op_seed(op, dev.session),
            parallel_id=share, parallel_num=shares)

    def read():
        return object_array(reader.next_batch())

    return read


register(OpDef("ofrecord_reader", infer=lambda op: [TensorMeta((op.attrs["batch_size"],), dtypes.record)],
               build=_reader_build, sbp=_source_sbp))


# --- record decoders -------------------------------------------------------------------------------------------
def _raw_decoder_meta(op):
    return [TensorMeta((op.inputs[0].shape[0],) + tuple(op.attrs["shape"]), op.attrs["dtype"])]


register(OpDef("ofrecord_raw_decoder", infer=_raw_decoder_meta, kernel=record_k.raw_decode,
               kernel_attrs=lambda op: {"name": op.attrs["name"], "shape": tuple(op.attrs["shape"]),
                                        "np_dtype": op.attrs["dtype"].np,
                                        "allow_short": op.attrs["dim1_varying_length"] or op.attrs["truncate"]},
               sbp=_batch_sbp))
register(OpDef("ofrecord_bytes_decoder", infer=_buffer_meta, kernel=record_k.bytes_decode,
               kernel_attrs=lambda op: {"name": op.attrs["name"]}, sbp=_batch_sbp))
register(OpDef("ofrecord_image_decoder", infer=_buffer_meta, kernel=record_k.image_decode_records,
               kernel_attrs=lambda op: {"name": op.attrs["name"], "color_space": op.attrs["color_space"]},
               sbp=_batch_sbp))
register(OpDef("image_decode", infer=_buffer_meta, kernel=record_k.image_decode,
               kernel_attrs=lambda op: {"color_space": op.attrs["color_space"], "np_dtype": op.attrs["dtype"].np},
               sbp=_batch_sbp))


# --- random crop -----------------------------------------------------------------------------------------------
def _random_crop_build(op, dev, decode):
    a = op.attrs
    window = dict(random_area=tuple(a["random_area"]), random_aspect_ratio=tuple(a["random_aspect_ratio"]),
                  num_attempts=a["num_attempts"])
    seed = op_seed(op, dev.session)
    next_call = _call_counter(op, dev)
    first_row = _first_row(op, dev)
    # mirrored pieces are independent batches: each device its own streams
    device = dev.index + 1 if dev.sbp_out[0] == S.M else 0

    def run(batch):
        return image_k.random_crop(dev.xp, decode(batch), seed=seed, call=next_call(), first_row=first_row,
                                   device=device, **window)

    return run


def _decode_random_crop_build(op, dev):
    name, color_space = op.attrs["name"], op.attrs["color_space"]

    def decode(records):
        return record_k.image_decode_records(dev.xp, records, name=name, color_space=color_space)

    return _random_crop_build(op, dev, decode)


register(OpDef("ofrecord_image_decoder_random_crop", infer=_buffer_meta, build=_decode_random_crop_build,
               sbp=_batch_sbp))
register(OpDef("image_random_crop", infer=_buffer_meta, build=lambda op, dev: _random_crop_build(op, dev, list),
               sbp=_batch_sbp))


# --- resize ----------------------------------------------------------------------------------------------------
def _resize_fixed_meta(op):
    a = op.attrs
    n = op.inputs[0].shape[0]
    return [TensorMeta((n, a["target_height"], a["target_width"], a["channels"]), a["dtype"]),
            TensorMeta((n, 2), dtypes.float32)]


register(OpDef("image_resize_to_fixed", infer=_resize_fixed_meta, kernel=image_k.resize_to_fixed, num_outputs=2,
               kernel_attrs=lambda op: {"target_width": op.attrs["target_width"],
                                        "target_height": op.attrs["target_height"], "channels": op.attrs["channels"],
                                        "np_dtype": op.attrs["dtype"].np,
                                        "interpolation_type": op.attrs["interpolation_type"]},
               sbp=_batch_sbp))


def _resize_keep_ratio_meta(op):
    n = op.inputs[0].shape[0]
    return [TensorMeta((n,), dtypes.tensor_buffer), TensorMeta((n, 2), dtypes.int32),
            TensorMeta((n, 2), dtypes.float32)]


register(OpDef("image_resize_keep_aspect_ratio", infer=_resize_keep_ratio_meta,
               kernel=image_k.resize_keep_aspect_ratio, num_outputs=3,
               kernel_attrs=lambda op: {k: op.attrs[k] for k in ("target_size", "min_size", "max_size",
                                                                 "resize_longer", "interpolation_type")},
               sbp=_batch_sbp))


# --- crop, mirror, normalize -----------------------------------------------------------------------------------
def _cmn_channels(op):
    return 3 if op.attrs["color_space"].upper() in ("RGB", "BGR") else 1


def _cmn_meta(op):
    a = op.attrs
    x = op.inputs[0]
    n, c = x.shape[0], _cmn_channels(op)
    if x.dtype is dtypes.uint8:
        h, w = x.shape[1], x.shape[2]
        if a["crop_h"] != 0 and a["crop_w"] != 0:
            h, w = min(a["crop_h"], h), min(a["crop_w"], w)
    else:
        h, w = a["crop_h"], a["crop_w"]
    shape = (n, c, h, w) if a["output_layout"] == "NCHW" else (n, h, w, c)
    return [TensorMeta(shape, dtypes.float32)]


def _cmn_attrs(op):
    a = op.attrs
    attrs = {k: a[k] for k in ("crop_h", "crop_w", "crop_pos_y", "crop_pos_x", "output_layout")}
    attrs.update(mean=tuple(a["mean"]), std=tuple(a["std"]))
    return attrs


def _cmn_tensorbuffer_attrs(op):
    # decoded images carry no channel count of their own
    return dict(_cmn_attrs(op), channels=_cmn_channels(op))


register(OpDef("crop_mirror_normalize_from_uint8", infer=_cmn_meta,
               kernel=image_k.crop_mirror_normalize_from_uint8, kernel_attrs=_cmn_attrs, sbp=_batch_sbp))
def _cmn_tensorbuffer_build(op, dev):
    attrs = _cmn_tensorbuffer_attrs(op)

    def run(images, *mirror):
        # tensor-buffer images are cut on the host, where they live: the flags come down from a device
        return image_k.crop_mirror_normalize_from_tensorbuffer(dev.xp, images, *map(devices.to_host, mirror),
                                                               **attrs)

    return run


register(OpDef("crop_mirror_normalize_from_tensorbuffer", infer=_cmn_meta, build=_cmn_tensorbuffer_build,
               sbp=_batch_sbp))


# --- coin flip -------------------------------------------------------------------------------------------------
def _coin_flip_build(op, dev):
    n, p = op.attrs["batch_size"], op.attrs["probability"]
    seed = op_seed(op, dev.session)
    next_call = _call_counter(op, dev)
    start = _first_row(op, dev)
    stop = start + dev.out_shapes[0][0]
    device = dev.index + 1 if dev.sbp_out[0] == S.M else 0

    def flip():
        return random_k.coin_flips(dev.xp, seed, next_call(), device, n, p, start, stop)

    return flip


register(OpDef("coin_flip", infer=lambda op: [TensorMeta((op.attrs["batch_size"],), dtypes.int8)],
               build=_coin_flip_build, sbp=_source_sbp))
