"""OneFlow 0.9's data-pipeline modules for tensors: `nn.OFRecordReader`, `nn.OFRecordRawDecoder`,
`nn.OFRecordBytesDecoder`, `nn.OFRecordImageDecoder`, `nn.OFRecordImageDecoderRandomCrop`, `nn.CoinFlip`,
`nn.CropMirrorNormalize`, `nn.COCOReader`, `nn.OneRecReader`, `flow.decode_onerec`, the `nn.image` modules
(`Resize`, `batch_align`, `decode`, `flip`, `normalize`) and `flow.tensor_to_tensor_buffer` /
`flow.tensor_buffer_to_tensor` on tensors.

Signatures, defaults, warnings and checks: python/oneflow/nn/modules/dataset.py, python/oneflow/nn/image.py and
framework/docstr/dataset.py at v0.9.0. The ops are the legacy pipeline's (ops/data_ops.py, legacy_data_ops.py,
onerec_ops.py, tensor_buffer_ops.py): the same files, decoders and kernels. Tensor buffers (dtype
`flow.tensor_buffer`) hold one array per row and live on the host.

Readers and the coin flip are sources: local on `device` (cpu), or global on `placement` with `sbp` — split(0):
each rank reads its share of the part files (batch_size / ranks records), broadcast: every rank reads the whole
batch — OneFlow 0.9's `nd_sbp` attribute, one symbol per placement dimension. Each module keeps its own stream (its
reader position and call count live with the session under the module's name); a module without `random_seed`
takes one derived from the default generator's seed and the module's creation order, the same on every rank
(OneFlow drew one at random).
"""
import itertools
import os
import weakref

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.datasets import ofrecord_io
from oneflow_compat.ir import dtypes
from oneflow_compat.kernels import image as image_k
from oneflow_compat.kernels.random import derived_seed
from oneflow_compat.ops import data_ops, legacy_data_ops, onerec_ops, tensor_buffer_ops  # noqa: F401 (the ops)
from oneflow_compat.runtime import context, global_eager
from oneflow_compat._global import generators, lazy
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module
from oneflow_compat._global.tensor import Tensor

_MODULES_OF_CONTEXT = weakref.WeakKeyDictionary()  # context -> creation order of its data modules (their stream
# names and derived seeds)
_COLOR_SPACES = ("BGR", "RGB", "GRAY")


def _stream(kind):
    # counted per context (api-misc2): simulated ranks share this process, each with a context of its own, and
    # each must name its modules as a process of its own would (one counter per process under MPI)
    counter = _MODULES_OF_CONTEXT.setdefault(context.get(), itertools.count())
    return "nn.%s#%d" % (kind, next(counter))


def _seed(random_seed, stream, is_global):
    """The module's seed: the user's, else one derived from its stream name and the seed of the global generator
    (a global module: the same on every rank) or of the rank's default generator (a local one)."""
    if random_seed is not None and int(random_seed) != -1:
        return int(random_seed)
    generator = generators.global_generator() if is_global else generators.default_generator()
    return derived_seed(generator.initial_seed(), stream)


def _layout(module, device, placement, sbp, what):
    """OneFlow 0.9's `_handle_distributed_args`: a local module on `device` (cpu), or a global one on `placement`
    with `sbp` (a symbol or one per placement dimension: split(0) or broadcast)."""
    module.placement = placement
    if placement is None:
        if sbp is not None:
            raise ValueError("%s: sbp %r needs a placement" % (what, sbp))
        module.device = device or "cpu"
        if str(module.device).split(":")[0] != "cpu":
            raise ValueError("%s: only supports cpu currently, got device %r" % (what, device))
        module.sbp = None
        return
    if device is not None:
        raise ValueError("The 'device' and 'placement' arguments can't be specified at the same time.")
    module.device = None
    if isinstance(sbp, flow_sbp.sbp):
        sbp = (sbp,)
    elif isinstance(sbp, (tuple, list)):
        for item in sbp:
            if not isinstance(item, flow_sbp.sbp):
                raise ValueError("invalid sbp item: %s" % (item,))
        sbp = tuple(sbp)
    else:
        raise ValueError("invalid 'sbp' argument: %s" % (sbp,))
    if len(sbp) != len(placement.hierarchy):
        raise ValueError("Number of SBP's dimensions of sbp and number of placement ranks'dimensions must equal. "
                         "%d vs. %d" % (len(sbp), len(placement.hierarchy)))
    for item in sbp:
        if item != flow_sbp.broadcast and item != flow_sbp.split(0):
            raise ValueError("%s: sbp must be flow.sbp.split(0) or flow.sbp.broadcast on each placement dimension "
                             "(the batch is split or read whole), got %r" % (what, sbp))
    if placement.type != "cpu":
        raise ValueError("%s: only supports cpu currently, got placement %r" % (what, placement))
    module.sbp = sbp


def _source(module, op_type, attrs):
    """Runs a source op (reader, coin flip) as the module's layout asks: local, or global with its SBP."""
    attrs = dict(attrs)
    if module.placement is None:
        placement, shown = global_eager.local_placement("cpu"), None
    else:
        placement, shown = module.placement.ir(), module.sbp
        attrs["nd_sbp"] = flow_sbp.to_ir(shown, op_type + ": sbp", module.placement)
    if lazy.tracer_active():
        outs = lazy.current().apply(op_type, attrs, [], placement)
    else:
        outs = global_eager.run_op(op_type, attrs, [], placement=placement)
    return [Tensor._make(v, module.placement, shown, "cpu") for v in outs]


def _tensor(x, dtype, what):
    if not isinstance(x, Tensor):
        raise TypeError("%s: expected a Tensor, got %s" % (what, type(x).__name__))
    if dtype is not None and x.dtype is not dtype:
        raise TypeError("%s: the input must have dtype %s, got %s" % (what, dtype, x.dtype))
    return x


def _color_space(color_space, what):
    cs = str(color_space).upper()
    if cs not in _COLOR_SPACES:
        raise ValueError("%s: color_space must be 'BGR', 'RGB' or 'GRAY', got %r" % (what, color_space))
    return cs


def _deprecated_name(name):
    if name is not None:
        print("WARNING: name has been deprecated and has NO effect.\n")


def _pair(values, what):
    values = [float(v) for v in values]
    if len(values) != 2 or not 0 < values[0] <= values[1]:
        raise ValueError("%s must be two positive numbers [min, max] with min <= max, got %r" % (what, values))
    return values


# --- readers and decoders ------------------------------------------------------------------------------------------
class OFRecordReader(Module):
    def __init__(self, ofrecord_dir, batch_size=1, data_part_num=1, part_name_prefix="part-",
                 part_name_suffix_length=-1, random_shuffle=False, shuffle_buffer_size=1024, shuffle_after_epoch=False,
                 random_seed=-1, device=None, placement=None, sbp=None, name=None):
        super().__init__()
        _deprecated_name(name)
        if int(batch_size) < 1:
            raise ValueError("OFRecordReader: batch_size must be at least 1, got %r" % (batch_size,))
        _layout(self, device, placement, sbp, "OFRecordReader")
        ofrecord_io.part_paths(ofrecord_dir, data_part_num, part_name_prefix, part_name_suffix_length)  # names a gap
        self.ofrecord_dir, self.batch_size, self.data_part_num = str(ofrecord_dir), int(batch_size), data_part_num
        self.part_name_prefix, self.part_name_suffix_length = part_name_prefix, part_name_suffix_length
        self.random_shuffle, self.shuffle_buffer_size = random_shuffle, shuffle_buffer_size
        self.shuffle_after_epoch = shuffle_after_epoch
        self._stream = _stream("OFRecordReader")
        self.seed = _seed(random_seed, self._stream, placement is not None)
        self.has_seed = random_seed not in (None, -1)

    def forward(self):
        return _source(self, "ofrecord_reader", {
            "ofrecord_dir": self.ofrecord_dir, "batch_size": self.batch_size,
            "data_part_num": int(self.data_part_num), "part_name_prefix": self.part_name_prefix,
            "part_name_suffix_length": int(self.part_name_suffix_length),
            "random_shuffle": bool(self.random_shuffle), "shuffle_buffer_size": int(self.shuffle_buffer_size),
            "shuffle_after_epoch": bool(self.shuffle_after_epoch), "seed": self.seed, "module": self._stream})[0]


class OFRecordRawDecoder(Module):
    def __init__(self, blob_name, shape, dtype, dim1_varying_length=False, truncate=False, auto_zero_padding=False,
                 name=None):
        super().__init__()
        if auto_zero_padding:
            print("WARNING: auto_zero_padding has been deprecated, Please use truncate instead.\n")
        _deprecated_name(name)
        dt = dtypes.as_dtype(dtype)
        if dt is None or dt.np is None or dt in (dtypes.tensor_buffer, dtypes.record):
            raise TypeError("OFRecordRawDecoder: dtype must be a numeric oneflow dtype, got %r" % (dtype,))
        self.blob_name, self.shape, self.dtype = blob_name, tuple(int(d) for d in shape), dt
        self.dim1_varying_length, self.truncate = dim1_varying_length, truncate
        self.auto_zero_padding = auto_zero_padding

    def forward(self, input):  # noqa: A002
        return apply_op("ofrecord_raw_decoder", [_tensor(input, dtypes.record, "OFRecordRawDecoder")], {
            "name": self.blob_name, "shape": self.shape, "dtype": self.dtype,
            "dim1_varying_length": bool(self.dim1_varying_length),
            "truncate": bool(self.truncate or self.auto_zero_padding)})


class OFRecordBytesDecoder(Module):
    def __init__(self, blob_name, name=None):
        super().__init__()
        _deprecated_name(name)
        self.blob_name = blob_name

    def forward(self, input):  # noqa: A002
        return apply_op("ofrecord_bytes_decoder", [_tensor(input, dtypes.record, "OFRecordBytesDecoder")],
                        {"name": self.blob_name})


class OFRecordImageDecoder(Module):
    def __init__(self, blob_name, color_space="BGR"):
        super().__init__()
        self.blob_name, self.color_space = blob_name, _color_space(color_space, "OFRecordImageDecoder")

    def forward(self, input):  # noqa: A002
        return apply_op("ofrecord_image_decoder", [_tensor(input, dtypes.record, "OFRecordImageDecoder")],
                        {"name": self.blob_name, "color_space": self.color_space})


class OFRecordImageDecoderRandomCrop(Module):
    def __init__(self, blob_name, color_space="BGR", num_attempts=10, random_seed=None, random_area=(0.08, 1.0),
                 random_aspect_ratio=(0.75, 1.333333)):
        super().__init__()
        if int(num_attempts) < 1:
            raise ValueError("OFRecordImageDecoderRandomCrop: num_attempts must be at least 1, got %r"
                             % (num_attempts,))
        self.blob_name = blob_name
        self.color_space = _color_space(color_space, "OFRecordImageDecoderRandomCrop")
        self.num_attempts = int(num_attempts)
        self.random_area = _pair(random_area, "random_area")
        self.random_aspect_ratio = _pair(random_aspect_ratio, "random_aspect_ratio")
        self._stream = _stream("OFRecordImageDecoderRandomCrop")
        self._random_seed, self.has_seed = random_seed, random_seed is not None
        self.seed = None  # drawn at the first call, where the input says local or global

    def forward(self, input):  # noqa: A002
        x = _tensor(input, dtypes.record, "OFRecordImageDecoderRandomCrop")
        if self.seed is None:
            self.seed = _seed(self._random_seed, self._stream, x.is_global)
        return apply_op("ofrecord_image_decoder_random_crop", [x],
                        {"name": self.blob_name, "color_space": self.color_space, "num_attempts": self.num_attempts,
                         "random_area": self.random_area, "random_aspect_ratio": self.random_aspect_ratio,
                         "seed": self.seed, "module": self._stream})


class CoinFlip(Module):
    def __init__(self, batch_size=1, random_seed=None, probability=0.5, device=None, placement=None, sbp=None):
        super().__init__()
        if not 0.0 <= float(probability) <= 1.0:
            raise ValueError("CoinFlip: probability must be in [0, 1], got %r" % (probability,))
        _layout(self, device, placement, sbp, "coin flip")
        self.batch_size, self.probability = int(batch_size), float(probability)
        self._stream = _stream("CoinFlip")
        self.seed, self.has_seed = _seed(random_seed, self._stream, placement is not None), random_seed is not None

    def forward(self):
        return _source(self, "coin_flip", {"batch_size": self.batch_size, "probability": self.probability,
                                           "seed": self.seed, "module": self._stream})[0]


class CropMirrorNormalize(Module):
    def __init__(self, color_space="BGR", output_layout="NCHW", crop_h=0, crop_w=0, crop_pos_y=0.5, crop_pos_x=0.5,
                 mean=(0.0,), std=(1.0,), output_dtype=dtypes.float32):
        super().__init__()
        if output_layout != "NCHW":
            print("WARNING: output_layout has been deprecated. Please use Environment Variable ONEFLOW_ENABLE_NHWC, "
                  "and make it equals 1.")
        # as OneFlow 0.9: the environment decides the layout
        output_layout = "NHWC" if os.getenv("ONEFLOW_ENABLE_NHWC") == "1" else "NCHW"
        self.color_space = _color_space(color_space, "CropMirrorNormalize")
        channels = 1 if self.color_space == "GRAY" else 3
        mean = [float(v) for v in (mean if isinstance(mean, (list, tuple)) else [mean])]
        std = [float(v) for v in (std if isinstance(std, (list, tuple)) else [std])]
        for what, values in (("mean", mean), ("std", std)):
            if len(values) not in (1, channels):
                raise ValueError("CropMirrorNormalize: %s needs 1 or %d values for color_space %s, got %d"
                                 % (what, channels, color_space, len(values)))
        if dtypes.as_dtype(output_dtype) is not dtypes.float32:
            raise TypeError("CropMirrorNormalize: output_dtype must be flow.float (the only one supported), got %r"
                            % (output_dtype,))
        self.output_layout, self.mean, self.std = output_layout, mean, std
        self.crop_h, self.crop_w = int(crop_h), int(crop_w)
        self.crop_pos_y, self.crop_pos_x = float(crop_pos_y), float(crop_pos_x)
        self.output_dtype = output_dtype

    def forward(self, input, mirror=None):  # noqa: A002
        x = _tensor(input, None, "CropMirrorNormalize")
        if x.dtype is dtypes.uint8:
            op_type = "crop_mirror_normalize_from_uint8"
            channels = 1 if self.color_space == "GRAY" else 3
            if x.ndim != 4 or x.shape[3] != channels:
                raise ValueError("CropMirrorNormalize: a uint8 input must be (N, H, W, %d) for color_space %s, got "
                                 "%s" % (channels, self.color_space, tuple(x.shape)))
        elif x.dtype is dtypes.tensor_buffer:
            op_type = "crop_mirror_normalize_from_tensorbuffer"
            if self.crop_h <= 0 or self.crop_w <= 0:
                raise ValueError("CropMirrorNormalize: images in a tensor buffer need crop_h and crop_w (their sizes "
                                 "vary)")
        else:
            # OneFlow 0.9 prints this and raises a bare NotImplementedError; here the exception says it too
            print("ERROR! oneflow.nn.CropMirrorNormalize module NOT support input dtype = ", x.dtype)
            raise NotImplementedError("oneflow.nn.CropMirrorNormalize: input must be a tensor buffer or uint8, got "
                                      "dtype %s" % x.dtype)
        inputs = [x]
        if mirror is not None:
            _tensor(mirror, dtypes.int8, "CropMirrorNormalize mirror")
            if tuple(mirror.shape) != (x.shape[0],):
                raise ValueError("CropMirrorNormalize: mirror must be (%d,), got %s" % (x.shape[0],
                                                                                       tuple(mirror.shape)))
            inputs.append(mirror)
        return apply_op(op_type, inputs, {
            "color_space": self.color_space, "output_layout": self.output_layout, "crop_h": self.crop_h,
            "crop_w": self.crop_w, "crop_pos_y": self.crop_pos_y, "crop_pos_x": self.crop_pos_x, "mean": self.mean,
            "std": self.std})


def _handle_shuffle(module, shuffle, random_seed, stream, is_global):
    """OneFlow 0.9's `_handle_shuffle_args`: without random_seed, a drawn seed when shuffling (here derived: see
    the module docstring), else -1."""
    module.shuffle = bool(shuffle)
    if random_seed is None:
        module.random_seed = _seed(None, stream, is_global) if shuffle else -1
    else:
        if not isinstance(random_seed, int):
            raise AssertionError("random_seed must be an int, got %r" % (random_seed,))
        module.random_seed = random_seed


class COCOReader(Module):
    def __init__(self, annotation_file, image_dir, batch_size, shuffle=True, random_seed=None,
                 group_by_aspect_ratio=True, remove_images_without_annotations=True, stride_partition=True,
                 device=None, placement=None, sbp=None):
        super().__init__()
        self._stream = _stream("COCOReader")
        _handle_shuffle(self, shuffle, random_seed, self._stream, placement is not None)
        _layout(self, device, placement, sbp, "COCOReader")
        for path, what in ((annotation_file, "annotation_file"), (image_dir, "image_dir")):
            if not os.path.exists(str(path)):
                raise FileNotFoundError("COCOReader: %s %s not found" % (what, path))
        self.annotation_file, self.image_dir = str(annotation_file), str(image_dir)
        self.batch_size = int(batch_size)
        self.group_by_aspect_ratio = group_by_aspect_ratio
        self.remove_images_without_annotations = remove_images_without_annotations
        self.stride_partition = stride_partition

    def forward(self):
        """(image, image_id, image_size, gt_bbox, gt_label, gt_segm, gt_segm_index), as the legacy
        flow.data.coco_reader (datasets/coco_io.py has the rules)."""
        return tuple(_source(self, "COCOReader", {
            "annotation_file": self.annotation_file, "image_dir": self.image_dir, "batch_size": self.batch_size,
            "shuffle_after_epoch": self.shuffle, "seed": self.random_seed if self.random_seed != -1 else None,
            "group_by_ratio": bool(self.group_by_aspect_ratio),
            "remove_images_without_annotations": bool(self.remove_images_without_annotations),
            "stride_partition": bool(self.stride_partition), "module": self._stream}))


class OneRecReader(Module):
    def __init__(self, files, batch_size, shuffle, shuffle_mode, random_seed=None, shuffle_buffer_size=1024,
                 shuffle_after_epoch=False, verify_example=True, placement=None, sbp=None):
        super().__init__()
        self._stream = _stream("OneRecReader")
        _handle_shuffle(self, shuffle, random_seed, self._stream, placement is not None)
        _layout(self, None, placement, sbp, "OneRecReader")
        if shuffle_mode not in ("batch", "instance"):
            raise ValueError("shuffle_mode should be 'batch' or 'instance'")
        files = [str(f) for f in files]
        if not files:
            raise ValueError("OneRecReader: files is empty (no OneRec file to read)")
        for f in files:
            if not os.path.isfile(f):
                raise FileNotFoundError("OneRecReader: OneRec file %s not found" % f)
        self.files, self.batch_size, self.shuffle_mode = files, int(batch_size), shuffle_mode
        self.shuffle_buffer_size, self.shuffle_after_epoch = shuffle_buffer_size, shuffle_after_epoch
        self.verify_example = verify_example

    def forward(self):
        return _source(self, "OneRecReader", {
            "files": tuple(self.files), "batch_size": self.batch_size, "random_shuffle": self.shuffle,
            "shuffle_mode": self.shuffle_mode, "shuffle_buffer_size": int(self.shuffle_buffer_size),
            "shuffle_after_epoch": bool(self.shuffle_after_epoch), "verify_example": bool(self.verify_example),
            "seed": self.random_seed, "module": self._stream})[0]


_DECODABLE = ("int8", "int32", "int64", "float32", "float64")


def decode_onerec(input, key, dtype, shape, is_dynamic=False, reshape=None, batch_padding=None):  # noqa: A002
    """Feature `key` of every OneRec example of `input` (nn.OneRecReader's tensor buffer) as a (batch,) + shape
    tensor of `dtype` (framework/docstr/dataset.py, v0.9.0; the op is the legacy onerec_decoder)."""
    x = _tensor(input, dtypes.tensor_buffer, "decode_onerec")
    dt = dtypes.as_dtype(dtype)
    if dt is None or dt.name not in _DECODABLE:
        raise TypeError("decode_onerec: dtype must be one of %s, got %r" % (", ".join(_DECODABLE), dtype))
    shape = tuple(int(d) for d in shape)
    return apply_op("onerec_decoder", [x], {
        "key": str(key), "data_type": dt, "static_shape": shape, "is_dynamic": bool(is_dynamic),
        "has_reshape": reshape is not None,
        "reshape": tuple(int(d) for d in reshape) if reshape is not None else shape,
        "has_batch_padding": batch_padding is not None,
        "batch_padding": tuple(int(d) for d in batch_padding) if batch_padding is not None else shape})


# --- tensor buffers ------------------------------------------------------------------------------------------------
def tensor_to_tensor_buffer(x, instance_dims):
    """The last `instance_dims` axes of x as one array per row of the leading axes (a tensor buffer)."""
    return apply_op("tensor_to_tensor_buffer", [_tensor(x, None, "tensor_to_tensor_buffer")],
                    {"instance_dims": int(instance_dims)})


def tensor_buffer_to_tensor(x, dtype, instance_shape):
    """A tensor buffer's arrays (each of `instance_shape`) stacked into a tensor of `dtype`."""
    return apply_op("tensor_buffer_to_tensor", [_tensor(x, dtypes.tensor_buffer, "tensor_buffer_to_tensor")],
                    {"instance_shape": tuple(int(d) for d in instance_shape), "dtype": dtypes.as_dtype(dtype)})


# --- nn.image (python/oneflow/nn/image.py: dataset.py's ImageResize, ImageBatchAlign, ImageDecode, ImageFlip,
# ImageNormalize) ----------------------------------------------------------------------------------------------------
class ImageResize(Module):
    def __init__(self, target_size=None, min_size=None, max_size=None, keep_aspect_ratio=False,
                 resize_side="shorter", channels=3, dtype=None, interpolation_type="auto", name=None,
                 color_space=None, interp_type=None, resize_shorter=0, resize_x=0, resize_y=0):
        super().__init__()
        _deprecated_name(name)
        if color_space is not None:
            print("WARNING: color_space has been deprecated. Please use channels instead.")
            if not isinstance(color_space, str):
                raise AssertionError("color_space must be a str, got %r" % (color_space,))
            if color_space.upper() in ("RGB", "BGR"):
                channels = 3
            elif color_space.upper() == "GRAY":
                channels = 1
            else:
                raise ValueError("invalid color_space")
        if interp_type is not None:
            print("WARNING: interp_type has been deprecated. Please use interpolation_type instead.")
            legacy = {"Linear": "bilinear", "NN": "nearest_neighbor", "Cubic": "bicubic"}
            if interp_type not in legacy:
                raise ValueError("invalid interp_type")
            interpolation_type = legacy[interp_type]
        if resize_x > 0 and resize_y > 0:
            print("WARNING: resize_x and resize_y has been deprecated. Please use target_size instead.")
            target_size, keep_aspect_ratio = (resize_x, resize_y), False
        if resize_shorter > 0:
            print("WARNING: resize_shorter has been deprecated. Please use target_size instead.")
            target_size, keep_aspect_ratio, resize_side = resize_shorter, True, "shorter"
        image_k.resolve_interpolation(interpolation_type, 1, 1, 1, 1)  # rejects unknown names now
        self.channels, self.interpolation_type = int(channels), interpolation_type
        self.keep_aspect_ratio = keep_aspect_ratio
        if keep_aspect_ratio:
            if not isinstance(target_size, int):
                raise ValueError("target_size must be an int when keep_aspect_ratio is True")
            if resize_side not in ("shorter", "longer"):
                raise ValueError('resize_side must be "shorter" or "longer"')
            self.target_size, self.min_size, self.max_size = target_size, int(min_size or 0), int(max_size or 0)
            self.resize_longer = resize_side == "longer"
        else:
            if (not isinstance(target_size, (list, tuple)) or len(target_size) != 2
                    or not all(isinstance(s, int) for s in target_size)):
                raise ValueError("target_size must be a form like (width, height) when keep_aspect_ratio is False")
            self.dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.uint8
            if self.dtype not in (dtypes.uint8, dtypes.float32):
                raise TypeError("image.Resize: dtype must be flow.uint8 or flow.float, got %r" % (dtype,))
            if self.channels not in (1, 3):
                raise ValueError("image.Resize: channels must be 1 or 3, got %r" % (channels,))
            self.target_w, self.target_h = target_size

    def forward(self, input):  # noqa: A002
        """(image, scale, new_size): scale (N, 2) = (new_w / w, new_h / h); new_size (N, 2) int32 (new_w, new_h)
        with keep_aspect_ratio (its image a tensor buffer), else None (its image (N, H, W, C) of dtype)."""
        x = _tensor(input, dtypes.tensor_buffer, "image.Resize")
        if self.keep_aspect_ratio:
            image, new_size, scale = apply_op("image_resize_keep_aspect_ratio", [x], {
                "target_size": self.target_size, "min_size": self.min_size, "max_size": self.max_size,
                "resize_longer": self.resize_longer, "interpolation_type": self.interpolation_type})
            return image, scale, new_size
        image, scale = apply_op("image_resize_to_fixed", [x], {
            "target_width": self.target_w, "target_height": self.target_h, "channels": self.channels,
            "dtype": self.dtype, "interpolation_type": self.interpolation_type})
        return image, scale, None


class ImageBatchAlign(Module):
    def __init__(self, shape, dtype, alignment):
        super().__init__()
        self.shape, self.dtype, self.alignment = tuple(int(d) for d in shape), dtypes.as_dtype(dtype), int(alignment)

    def forward(self, input):  # noqa: A002
        return apply_op("image_batch_align", [_tensor(input, dtypes.tensor_buffer, "image.batch_align")],
                        {"shape": self.shape, "data_type": self.dtype, "alignment": self.alignment,
                         "dynamic_out": False})  # as OneFlow 0.9's module: the static (N,) + shape


class ImageDecode(Module):
    def __init__(self, dtype=dtypes.uint8, color_space="BGR"):
        super().__init__()
        self.color_space, self.dtype = _color_space(color_space, "image.decode"), dtypes.as_dtype(dtype)
        if self.dtype not in (dtypes.uint8, dtypes.float32):
            raise TypeError("image.decode: dtype must be flow.uint8 or flow.float, got %r" % (dtype,))

    def forward(self, input):  # noqa: A002
        return apply_op("image_decode", [_tensor(input, dtypes.tensor_buffer, "image.decode")],
                        {"color_space": self.color_space, "dtype": self.dtype})


class ImageFlip(Module):
    """Flips the images of a tensor buffer: flip code 0 none, 1 horizontal, 2 vertical, 3 both (one int8 per
    image; OneFlow 0.9's codes: the legacy API's vertical bit was 0x10)."""

    def forward(self, images, flip_code):
        return apply_op("image_flip", [_tensor(images, dtypes.tensor_buffer, "image.flip"),
                                       _tensor(flip_code, dtypes.int8, "image.flip flip_code")],
                        {"vertical_flip_code": 0x02})


class ImageNormalize(Module):
    def __init__(self, std, mean):
        super().__init__()
        self.std, self.mean = [float(v) for v in std], [float(v) for v in mean]

    def forward(self, input):  # noqa: A002
        return apply_op("image_normalize", [_tensor(input, dtypes.tensor_buffer, "image.normalize")],
                        {"std": tuple(self.std), "mean": tuple(self.mean)})
