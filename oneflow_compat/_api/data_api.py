"""The legacy OFRecord pipeline API: `flow.data.ofrecord_reader` and the record decoders, `flow.image.Resize` /
`CropMirrorNormalize` / `random_crop` / `decode`, `flow.random.CoinFlip`, and the pre-user-op
`flow.data.decode_ofrecord` with `BlobConf` + `RawCodec` (legacy-api.md §1.2, §2.16; the ops are in
`ops/data_ops.py`).

Which module exports which names: `DATA_NAMES` (`flow.data.*`), `IMAGE_NAMES` (`flow.image.*`), `RANDOM_NAMES`
(`flow.random.*`), `TOP_LEVEL_NAMES` (`flow.*`, the legacy `image_*` aliases).
"""
import traceback

from oneflow_compat._api import legacy_data_api
from oneflow_compat.datasets import ofrecord_io
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.kernels import image as image_k
from oneflow_compat.ops import data_ops  # noqa: F401  (registers the ops)
from oneflow_compat.ops.registry import apply

DATA_NAMES = ["ofrecord_reader", "ofrecord_loader", "OFRecordRawDecoder", "ofrecord_raw_decoder",
              "OFRecordBytesDecoder", "ofrecord_bytes_decoder", "OFRecordImageDecoder", "ofrecord_image_decoder",
              "OFRecordImageDecoderRandomCrop", "ofrecord_image_decoder_random_crop", "decode_ofrecord", "BlobConf",
              "RawCodec"]
IMAGE_NAMES = ["Resize", "resize", "target_resize", "CropMirrorNormalize", "crop_mirror_normalize", "random_crop",
               "decode"]
RANDOM_NAMES = ["CoinFlip", "coin_flip"]
TOP_LEVEL_NAMES = {"image_resize": "Resize", "image_target_resize": "target_resize",
                   "image_random_crop": "random_crop", "image_decode": "decode"}


def _op_name(name, prefix, module=False):
    """`name`, or a fresh one when it is None. Seeded ops (`module=True`: CoinFlip, the random crops) are legacy
    "modules": their first call takes `name` and later calls with the same name get fresh ones."""
    ctx = builder.current("a data-pipeline op (%s)" % prefix)
    job = ctx.job
    # op names take the open namespaces as a prefix (ops/registry.py new_op)
    if name is None or (module and "".join(ns + "-" for ns in ctx.namespaces) + name in job.op_names):
        return job.unique_name(prefix)
    return name


def _check_dtype(blob, expected, what):
    if blob.dtype is not expected:
        raise TypeError("%s: input %s must have dtype %s, got %s" % (what, blob.logical_blob_name, expected.name,
                                                                     blob.dtype.name))


def _color_space(color_space, what):
    cs = str(color_space).upper()
    if cs not in ("BGR", "RGB", "GRAY"):
        raise ValueError("%s: color_space must be 'BGR', 'RGB' or 'GRAY', got %r" % (what, color_space))
    return cs


def _range_pair(values, what):
    values = [float(v) for v in values]
    if len(values) != 2 or not 0 < values[0] <= values[1]:
        raise ValueError("%s must be two positive numbers [min, max] with min <= max, got %r" % (what, values))
    return values


# --- reader and record decoders ----------------------------------------------------------------------------------
def ofrecord_reader(ofrecord_dir, batch_size=1, data_part_num=1, part_name_prefix="part-",
                    part_name_suffix_length=-1, random_shuffle=False, shuffle_buffer_size=1024,
                    shuffle_after_epoch=False, name=None):
    """A blob of `batch_size` OFRecords (dtype `record`) read from the `data_part_num` part files of
    `ofrecord_dir`; each call of the job reads the next batch, cycling over the files. On N devices each device
    reads batch_size / N records from its share of the part files."""
    if int(batch_size) < 1:
        raise ValueError("ofrecord_reader: batch_size must be at least 1, got %r" % (batch_size,))
    # the missing file is named now rather than when the session starts
    ofrecord_io.part_paths(ofrecord_dir, data_part_num, part_name_prefix, part_name_suffix_length)
    attrs = {"ofrecord_dir": str(ofrecord_dir), "batch_size": int(batch_size), "data_part_num": int(data_part_num),
             "part_name_prefix": part_name_prefix, "part_name_suffix_length": int(part_name_suffix_length),
             "random_shuffle": bool(random_shuffle), "shuffle_buffer_size": int(shuffle_buffer_size),
             "shuffle_after_epoch": bool(shuffle_after_epoch), "seed": None}
    return apply("ofrecord_reader", [], attrs, name=_op_name(name, "OFRecord_Reader"))


def ofrecord_loader(ofrecord_dir, batch_size=1, data_part_num=1, part_name_prefix="part-",
                    part_name_suffix_length=-1, shuffle=False, shuffle_buffer_size=1024, name=None):
    """The older reader (`record_load`): the same records as `ofrecord_reader`, `shuffle` = `random_shuffle`."""
    return ofrecord_reader(ofrecord_dir, batch_size, data_part_num, part_name_prefix, part_name_suffix_length,
                           random_shuffle=shuffle, shuffle_buffer_size=shuffle_buffer_size,
                           name=name if name is not None else _op_name(None, "OFRecord_Loader"))


def OFRecordRawDecoder(input_blob, blob_name, shape, dtype, dim1_varying_length=False, auto_zero_padding=False,
                       name=None, truncate=False):  # noqa: N802 - legacy name
    """Feature `blob_name` of every record as a (batch,) + shape tensor of `dtype`. Lists must hold exactly
    prod(shape) values, or at most that many (zero-padded) with `dim1_varying_length` / `truncate`
    (`auto_zero_padding`, deprecated, means `truncate`)."""
    if auto_zero_padding:
        print("WARNING: auto_zero_padding has been deprecated, Please use truncate instead.")
    _check_dtype(input_blob, dtypes.record, "OFRecordRawDecoder")
    dtype = dtypes.as_dtype(dtype)
    if dtype is None or dtype.np is None:
        raise TypeError("OFRecordRawDecoder: dtype must be a numeric oneflow dtype, got %r" % (dtype,))
    shape = tuple(int(d) for d in shape)
    attrs = {"name": blob_name, "shape": shape, "dtype": dtype, "dim1_varying_length": bool(dim1_varying_length),
             "truncate": bool(truncate or auto_zero_padding)}
    return apply("ofrecord_raw_decoder", [input_blob], attrs, name=_op_name(name, "OFRecordRawDecoder"))


ofrecord_raw_decoder = OFRecordRawDecoder


def OFRecordBytesDecoder(input_blob, blob_name, name=None):  # noqa: N802 - legacy name
    """Feature `blob_name` (a bytes_list of one value) of every record as a tensor buffer of int8 arrays."""
    _check_dtype(input_blob, dtypes.record, "OFRecordBytesDecoder")
    return apply("ofrecord_bytes_decoder", [input_blob], {"name": blob_name},
                 name=_op_name(name, "OFRecordBytesDecoder"))


ofrecord_bytes_decoder = OFRecordBytesDecoder


def OFRecordImageDecoder(input_blob, blob_name, color_space="BGR", name=None):  # noqa: N802 - legacy name
    """Feature `blob_name` (encoded JPEG/PNG/…) of every record decoded into a tensor buffer of HWC uint8 images
    (3 channels in `color_space` order, or 1 for "GRAY"). Needs Pillow."""
    _check_dtype(input_blob, dtypes.record, "OFRecordImageDecoder")
    attrs = {"name": blob_name, "color_space": _color_space(color_space, "OFRecordImageDecoder")}
    return apply("ofrecord_image_decoder", [input_blob], attrs, name=_op_name(name, "OFRecordImageDecoder"))


ofrecord_image_decoder = OFRecordImageDecoder


def _random_crop_attrs(num_attempts, seed, random_area, random_aspect_ratio, name):
    if seed is not None:
        if name is None:
            raise AssertionError()
    if int(num_attempts) < 1:
        raise ValueError("num_attempts must be at least 1, got %r" % (num_attempts,))
    return {"num_attempts": int(num_attempts), "seed": None if seed is None else int(seed),
            "random_area": _range_pair(random_area, "random_area"),
            "random_aspect_ratio": _range_pair(random_aspect_ratio, "random_aspect_ratio")}


def OFRecordImageDecoderRandomCrop(input_blob, blob_name, color_space="BGR", num_attempts=10, seed=None,
                                   random_area=(0.08, 1.0), random_aspect_ratio=(0.75, 1.333333),
                                   name="OFRecordImageDecoderRandomCrop"):  # noqa: N802 - legacy name
    """As `OFRecordImageDecoder`, each image then cut to an Inception-style random window: area fraction uniform
    in `random_area`, width/height ratio log-uniform in `random_aspect_ratio`, up to `num_attempts` draws."""
    if not isinstance(name, str):
        raise AssertionError()
    _check_dtype(input_blob, dtypes.record, "OFRecordImageDecoderRandomCrop")
    attrs = _random_crop_attrs(num_attempts, seed, random_area, random_aspect_ratio, name)
    attrs.update(name=blob_name, color_space=_color_space(color_space, "OFRecordImageDecoderRandomCrop"))
    return apply("ofrecord_image_decoder_random_crop", [input_blob], attrs,
                 name=_op_name(name, "OFRecordImageDecoderRandomCrop", module=True))


ofrecord_image_decoder_random_crop = OFRecordImageDecoderRandomCrop


# --- images ----------------------------------------------------------------------------------------------------
def random_crop(input_blob, num_attempts=10, seed=None, random_area=None, random_aspect_ratio=None,
                name="ImageRandomCrop"):
    """A random Inception-style window of every image of a tensor buffer (see OFRecordImageDecoderRandomCrop)."""
    if not isinstance(name, str):
        raise AssertionError()
    _check_dtype(input_blob, dtypes.tensor_buffer, "image.random_crop")
    attrs = _random_crop_attrs(num_attempts, seed, random_area if random_area is not None else (0.08, 1.0),
                               random_aspect_ratio if random_aspect_ratio is not None else (0.75, 1.333333), name)
    return apply("image_random_crop", [input_blob], attrs, name=_op_name(name, "ImageRandomCrop", module=True))


def decode(images_bytes_buffer, dtype=dtypes.uint8, color_space="BGR", name=None):
    """Encoded images (a tensor buffer of byte arrays, e.g. from OFRecordBytesDecoder) decoded to HWC images."""
    _check_dtype(images_bytes_buffer, dtypes.tensor_buffer, "image.decode")
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.uint8, dtypes.float32):
        raise TypeError("image.decode: dtype must be flow.uint8 or flow.float, got %r" % (dtype,))
    attrs = {"dtype": dtype, "color_space": _color_space(color_space, "image.decode")}
    return apply("image_decode", [images_bytes_buffer], attrs, name=_op_name(name, "ImageDecode"))


def _deprecated(message):
    print("WARNING: %s" % message)
    print(traceback.format_stack()[-3])  # the caller's line, as OneFlow prints it


def Resize(image, target_size=None, min_size=None, max_size=None, keep_aspect_ratio=False, resize_side="shorter",
           channels=3, dtype=None, interpolation_type="auto", name=None, color_space=None, interp_type=None,
           resize_shorter=0, resize_x=0, resize_y=0):  # noqa: N802 - legacy name
    """Resizes a tensor buffer of images. With `keep_aspect_ratio=False`, `target_size=(width, height)`: a static
    (N, height, width, channels) tensor of `dtype` (uint8 default); with `keep_aspect_ratio=True` and an int
    `target_size`, the shorter (`resize_side`) or longer side becomes `target_size`: a tensor buffer. Returns
    `(image, scale, new_size)` — scale (N, 2) = (new_w / w, new_h / h), new_size (N, 2) = (new_w, new_h) or None
    for fixed sizes — or only the image when any deprecated argument (color_space, interp_type, resize_shorter,
    resize_x/resize_y) is used."""
    deprecated_used = False
    if color_space is not None:
        _deprecated("color_space has been deprecated. Please use channels instead.")
        deprecated_used = True
        cs = str(color_space).upper()
        if cs in ("RGB", "BGR"):
            channels = 3
        elif cs == "GRAY":
            channels = 1
        else:
            raise ValueError("invalid color_space")
    if interp_type is not None:
        _deprecated("interp_type has been deprecated. Please use interpolation_type instead.")
        deprecated_used = True
        legacy = {"Linear": "bilinear", "NN": "nearest_neighbor", "Cubic": "bicubic"}
        if interp_type not in legacy:
            raise ValueError("invalid interp_type")
        interpolation_type = legacy[interp_type]
    if resize_x > 0 and resize_y > 0:
        _deprecated("resize_x and resize_y has been deprecated. Please use target_size instead.")
        deprecated_used = True
        target_size, keep_aspect_ratio = (resize_x, resize_y), False
    if resize_shorter > 0:
        _deprecated("resize_shorter has been deprecated. Please use target_size instead.")
        deprecated_used = True
        target_size, keep_aspect_ratio, resize_side = resize_shorter, True, "shorter"
    _check_dtype(image, dtypes.tensor_buffer, "image.Resize")
    image_k.resolve_interpolation(interpolation_type, 1, 1, 1, 1)  # rejects unknown names now
    name = _op_name(name, "ImageResize")

    if keep_aspect_ratio:
        if not isinstance(target_size, int):
            raise ValueError("target_size must be an int when keep_aspect_ratio is True")
        if resize_side not in ("shorter", "longer"):
            raise ValueError('resize_side must be "shorter" or "longer"')
        min_size, max_size = int(min_size or 0), int(max_size or 0)
        if target_size <= 0 or (min_size > 0 and target_size < min_size) or (max_size > 0 and target_size > max_size):
            raise ValueError("image.Resize: target_size %d must be positive and within [min_size=%d, max_size=%d] "
                             "(0 = no limit)" % (target_size, min_size, max_size))
        attrs = {"target_size": target_size, "min_size": min_size, "max_size": max_size,
                 "resize_longer": resize_side == "longer", "interpolation_type": interpolation_type}
        res_image, new_size, scale = apply("image_resize_keep_aspect_ratio", [image], attrs, name=name)
    else:
        if (not isinstance(target_size, (list, tuple)) or len(target_size) != 2
                or not all(isinstance(s, int) for s in target_size)):
            raise ValueError("target_size must be a form like (width, height) when keep_aspect_ratio is False")
        dtype = dtypes.as_dtype(dtype) if dtype is not None else dtypes.uint8
        if dtype not in (dtypes.uint8, dtypes.float32):
            raise TypeError("image.Resize: dtype must be flow.uint8 or flow.float, got %r" % (dtype,))
        if int(channels) not in (1, 3):
            raise ValueError("image.Resize: channels must be 1 or 3, got %r" % (channels,))
        target_w, target_h = target_size
        attrs = {"target_width": target_w, "target_height": target_h, "channels": int(channels), "dtype": dtype,
                 "interpolation_type": interpolation_type}
        res_image, scale = apply("image_resize_to_fixed", [image], attrs, name=name)
        new_size = None
    if deprecated_used:
        return res_image
    return res_image, scale, new_size


resize = Resize


def target_resize(images, target_size, min_size=None, max_size=None, resize_side="shorter",
                  interpolation_type="auto", name=None):
    """Keep-aspect-ratio resize; returns (images, new_size, scale) (note the order, as legacy)."""
    res_image, scale, new_size = Resize(images, target_size=target_size, min_size=min_size, max_size=max_size,
                                        keep_aspect_ratio=True, resize_side=resize_side,
                                        interpolation_type=interpolation_type,
                                        name=name if name is not None else _op_name(None, "ImageTargetResize"))
    return res_image, new_size, scale


def CropMirrorNormalize(input_blob, mirror_blob=None, color_space="BGR", output_layout="NCHW", crop_h=0, crop_w=0,
                        crop_pos_y=0.5, crop_pos_x=0.5, mean=(0.0,), std=(1.0,), output_dtype=dtypes.float32,
                        name=None):  # noqa: N802 - legacy name
    """Crop (crop_h x crop_w at relative position crop_pos_y/x; 0 = whole image, uint8 input only), mirror
    horizontally the rows whose int8 `mirror_blob` flag is 1, then (x - mean) / std per channel: a float32 tensor
    in `output_layout` ("NCHW" or "NHWC"). Input: a tensor buffer of images or a uint8 (N, H, W, C) tensor."""
    from_uint8 = input_blob.dtype is dtypes.uint8
    if not from_uint8 and input_blob.dtype is not dtypes.tensor_buffer:
        print("ERROR! oneflow.data.crop_mirror_normalize op", " NOT support input data type : ", input_blob.dtype)
        raise NotImplementedError("CropMirrorNormalize: input must be a tensor buffer or uint8, got %s"
                                  % input_blob.dtype.name)
    channels = 3 if _color_space(color_space, "CropMirrorNormalize") in ("RGB", "BGR") else 1
    if output_layout not in ("NCHW", "NHWC"):
        raise ValueError("output_layout: %s is not supported" % (output_layout,))
    if dtypes.as_dtype(output_dtype) is not dtypes.float32:
        raise TypeError("CropMirrorNormalize: output_dtype must be flow.float (the only one supported)")
    mean, std = [float(v) for v in mean], [float(v) for v in std]
    for what, values in (("mean", mean), ("std", std)):
        if len(values) not in (1, channels):
            raise ValueError("CropMirrorNormalize: %s needs 1 or %d values for color_space %s, got %d"
                             % (what, channels, color_space, len(values)))
    crop_h, crop_w = int(crop_h), int(crop_w)
    if from_uint8:
        if len(input_blob.shape) != 4 or input_blob.shape[3] != channels:
            raise ValueError("CropMirrorNormalize: a uint8 input must be (N, H, W, %d) for color_space %s, got %s"
                             % (channels, color_space, input_blob.shape))
    elif crop_h <= 0 or crop_w <= 0:
        raise ValueError("CropMirrorNormalize: images in a tensor buffer need crop_h and crop_w (their sizes vary)")
    inputs = [input_blob]
    if mirror_blob is not None:
        _check_dtype(mirror_blob, dtypes.int8, "CropMirrorNormalize mirror_blob")
        if len(mirror_blob.shape) != 1 or mirror_blob.shape[0] != input_blob.shape[0]:
            raise ValueError("CropMirrorNormalize: mirror_blob must be (%d,), got %s"
                             % (input_blob.shape[0], mirror_blob.shape))
        inputs.append(mirror_blob)
    attrs = {"color_space": color_space, "output_layout": output_layout, "crop_h": crop_h, "crop_w": crop_w,
             "crop_pos_y": float(crop_pos_y), "crop_pos_x": float(crop_pos_x), "mean": mean, "std": std}
    op_type = "crop_mirror_normalize_from_uint8" if from_uint8 else "crop_mirror_normalize_from_tensorbuffer"
    return apply(op_type, inputs, attrs, name=_op_name(name, "CropMirrorNormalize"))


crop_mirror_normalize = CropMirrorNormalize


# --- random ----------------------------------------------------------------------------------------------------
def CoinFlip(batch_size=1, seed=None, probability=0.5, name="CoinFlip"):  # noqa: N802 - legacy name
    """An int8 (batch_size,) blob of independent draws: 1 with `probability`, else 0; new draws every call."""
    if not isinstance(name, str):
        raise AssertionError()
    if seed is not None:
        if name is None:
            raise AssertionError()
    if not 0.0 <= float(probability) <= 1.0:
        raise ValueError("CoinFlip: probability must be in [0, 1], got %r" % (probability,))
    attrs = {"batch_size": int(batch_size), "probability": float(probability),
             "seed": None if seed is None else int(seed)}
    return apply("coin_flip", [], attrs, name=_op_name(name, "CoinFlip", module=True))


coin_flip = CoinFlip


# --- the pre-user-op decoder: decode_ofrecord(dir, [BlobConf(..., codec=RawCodec())]) -----------------------------
class RawCodec:
    """Numeric features read as they are stored (`auto_zero_padding`: shorter lists are zero-padded)."""

    def __init__(self, auto_zero_padding=False):
        self.auto_zero_padding = auto_zero_padding


class BlobConf:
    """One output of `decode_ofrecord`: feature `name` as a (batch,) + shape tensor of `dtype`."""

    def __init__(self, name, shape, dtype, codec, preprocessors=None):
        if not isinstance(name, str):
            raise AssertionError()
        if not isinstance(shape, (list, tuple)):
            raise AssertionError()
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.codec = codec
        self.preprocessors = list(preprocessors) if isinstance(preprocessors, (list, tuple)) else []


def decode_ofrecord(ofrecord_dir, blobs, batch_size=1, data_part_num=1, part_name_prefix="part-",
                    part_name_suffix_length=-1, shuffle=False, buffer_size=1024, name=None):
    """A tuple with one blob per BlobConf, all rows from the same records: a reader plus one decoder per blob
    (RawCodec, ImageCodec with its preprocessors, BytesListCodec; NormByChannel preprocessors after decoding)."""
    name = _op_name(name, "Decode")
    records = ofrecord_reader(ofrecord_dir, batch_size, data_part_num, part_name_prefix, part_name_suffix_length,
                              random_shuffle=bool(shuffle), shuffle_buffer_size=buffer_size, name=name)
    return tuple(decode_blob(records, conf, "%s-%s" % (name, conf.name)) for conf in blobs)


# --- the rest of OneFlow v0.3.4's flow.data on OFRecords (the whole legacy API, issue 20) ---------------------------
def decode_blob(records, conf, name):
    """One BlobConf of decode_ofrecord: its codec's decoder, then its NormByChannel preprocessors."""
    codec = conf.codec
    if isinstance(codec, RawCodec):
        out = OFRecordRawDecoder(records, conf.name, conf.shape, conf.dtype, auto_zero_padding=False,
                                 truncate=codec.auto_zero_padding, name=name)
    elif isinstance(codec, legacy_data_api.ImageCodec):
        out = apply("ofrecord_jpeg_decoder", [records], {
            "name": conf.name, "shape": tuple(conf.shape), "dtype": dtypes.as_dtype(conf.dtype),
            "preprocess": [p.step() for p in codec.image_preprocessors], "seed": None}, name=name)
    elif isinstance(codec, legacy_data_api.BytesListCodec):
        out = apply("ofrecord_bytes_list_decoder", [records], {
            "name": conf.name, "shape": tuple(conf.shape), "dtype": dtypes.as_dtype(conf.dtype)}, name=name)
    else:
        raise TypeError("decode_ofrecord: blob %r has codec %r; use RawCodec, ImageCodec or BytesListCodec" % (
            conf.name, codec))
    for k, p in enumerate(conf.preprocessors):
        if not isinstance(p, legacy_data_api.NormByChannelPreprocessor):
            raise TypeError("decode_ofrecord: blob %r: a BlobConf preprocessor must be a NormByChannelPreprocessor "
                            "(image preprocessors go to the ImageCodec), got %r" % (conf.name, p))
        mean = [float(v) for v in p.mean_values]
        std = [float(v) for v in p.std_values] if p.std_values else [1.0] * len(mean)
        out = apply("norm_by_channel", [out], {"mean": mean, "std": std[:len(mean)], "data_format": p.data_format},
                    name="%s-norm_by_channel_%d" % (name, k))
    return out


def ofrecord_image_classification_reader(ofrecord_dir, image_feature_name, label_feature_name, batch_size=1,
                                         data_part_num=1, part_name_prefix="part-", part_name_suffix_length=-1,
                                         random_shuffle=False, shuffle_buffer_size=1024, shuffle_after_epoch=False,
                                         color_space="BGR", decode_buffer_size_per_thread=32,
                                         num_decode_threads_per_machine=None, name=None):
    """(images, labels): the decoded images (a tensor buffer) and the int32 labels (n,) of an image-classification
    OFRecord dataset, read as one reader. The decoding-thread settings are accepted."""
    name = _op_name(name, "OFRecordImageClassificationReader_")
    records = ofrecord_reader(ofrecord_dir, batch_size, data_part_num, part_name_prefix, part_name_suffix_length,
                              random_shuffle=random_shuffle, shuffle_buffer_size=shuffle_buffer_size,
                              shuffle_after_epoch=shuffle_after_epoch, name=name)
    image = OFRecordImageDecoder(records, image_feature_name, color_space=color_space, name=name + "_image")
    label = OFRecordRawDecoder(records, label_feature_name, shape=(1,), dtype=dtypes.int32, name=name + "_label")
    return image, apply("reshape", [label], {"shape": (batch_size,)}, name=name + "_label_squeeze")


