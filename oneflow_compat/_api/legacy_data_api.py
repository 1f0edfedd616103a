"""`flow.data` names of OneFlow v0.3.4 beyond data_api.py: decode_random, image_decoder_random_crop_resize, and the
old decode_ofrecord API's codecs and preprocessors (ImageCodec,
BytesListCodec, ImagePreprocessor, ImageResizePreprocessor, NormByChannelPreprocessor). Signatures, defaults and
checks after `oneflow/python/ops/data_ops.py` and `user_data_ops.py` at v0.3.4. OneRec's reader and decoder are
onerec_api.py's."""
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ops.registry import apply


def _name(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def decode_random(shape, dtype, batch_size=1, initializer=None, tick=None, name=None):
    """A (batch_size,) + shape batch drawn from `initializer` (random uniform in [0, 1) by default), a new one every
    call of the job (the source of OneFlow's synthetic-data benchmarks)."""
    from oneflow_compat import initializer as init

    name = _name(name, "DecodeRandom_", "flow.data.decode_random")
    assert isinstance(name, str)
    assert isinstance(shape, (list, tuple))
    assert dtype is not None
    conf = initializer if initializer is not None else init.random_uniform_initializer()
    return apply("decode_random", [], {"shape": tuple(int(d) for d in shape), "dtype": dtypes.as_dtype(dtype),
                                       "batch_size": int(batch_size), "initializer": conf, "seed": None}, name=name)


def image_decoder_random_crop_resize(input_blob, target_width, target_height, num_attempts=None, seed=None,
                                     random_area=None, random_aspect_ratio=None, num_workers=None, warmup_size=None,
                                     max_num_pixels=None, name=None):
    """Encoded images (a tensor buffer) decoded, cut to an Inception-style random window and resized (bilinear) to
    target_height x target_width: uint8 RGB (n, h, w, 3). num_workers, warmup_size and max_num_pixels tune
    OneFlow's decoding threads and are accepted."""
    if random_area is not None:
        assert len(random_area) == 2
    if random_aspect_ratio is not None:
        assert len(random_aspect_ratio) == 2
    return apply("image_decoder_random_crop_resize", [input_blob], {
        "target_width": int(target_width), "target_height": int(target_height),
        "num_attempts": 10 if num_attempts is None else int(num_attempts), "seed": seed,
        "random_area": tuple(random_area) if random_area is not None else (0.08, 1.0),
        "random_aspect_ratio": tuple(random_aspect_ratio) if random_aspect_ratio is not None else (0.75, 1.333333)},
        name=_name(name, "ImageDecoderRandomCropResize_", "flow.data.image_decoder_random_crop_resize"))


# --- the old decode_ofrecord API ------------------------------------------------------------------------------------
class ImagePreprocessor:
    """"bgr2rgb" (swap the channels) or "mirror" (a horizontal flip with probability 1/2)."""

    def __init__(self, preprocessor):
        assert isinstance(preprocessor, str)
        if preprocessor.lower() != "bgr2rgb" and preprocessor.lower() != "mirror":
            raise ValueError('preprocessor must be "bgr2rgb" or "mirror".')
        self.preprocessor = preprocessor

    def step(self):
        return (self.preprocessor.lower(),)


class ImageResizePreprocessor:
    """Resize to width x height (bilinear)."""

    def __init__(self, width, height):
        assert isinstance(width, int)
        assert isinstance(height, int)
        self.width, self.height = width, height

    def step(self):
        return ("resize", self.width, self.height)


class ImageCodec:
    """Decode an encoded image feature, then apply the image preprocessors in order."""

    def __init__(self, image_preprocessors=None):
        self.image_preprocessors = list(image_preprocessors) if isinstance(image_preprocessors, (list, tuple)) else []


class BytesListCodec:
    """Copy a bytes_list feature's values into int8 rows."""


class NormByChannelPreprocessor:
    """(x - mean[c]) / std[c] per channel, after decoding."""

    def __init__(self, mean_values, std_values=(1.0, 1.0, 1.0), data_format="channels_last"):
        assert isinstance(mean_values, (list, tuple))
        assert isinstance(std_values, (list, tuple))
        assert isinstance(data_format, str)
        self.mean_values, self.std_values, self.data_format = mean_values, std_values, data_format


# --- COCO (v0.3.4 `user_data_ops.py` api_coco_reader / COCOReader) -------------------------------------------------
def coco_reader(annotation_file, image_dir, batch_size, shuffle=True, random_seed=None, group_by_aspect_ratio=True,
                stride_partition=True, name=None):
    """(image, image_id, image_size, gt_bbox, gt_label, gt_segm, gt_segm_index) of the next batch of a COCO dataset:
    encoded images, ids (int64), (height, width) int32 rows, and tensor buffers of boxes (n, 4) float32 in
    xyxy, contiguous labels (n,) int32, polygon points (m, 2) float32 and their (point, polygon, annotation) index
    (m, 3) int32 (datasets/coco_io.py has the rules). The reader is a module of this name: calling it again in the
    session continues the same stream. random_seed None: one derived from the session's seed (OneFlow drew a
    random one)."""
    from oneflow_compat._api.legacy_misc import find_or_create_module

    assert name is not None
    module = find_or_create_module(name, lambda: COCOReader(
        annotation_file=annotation_file, image_dir=image_dir, batch_size=batch_size, shuffle=shuffle,
        random_seed=random_seed, group_by_aspect_ratio=group_by_aspect_ratio, stride_partition=stride_partition,
        name=name))
    return module()


class COCOReader:
    """OneFlow v0.3.4's COCOReader module: builds a COCOReader op per call, the first named as the module."""

    def __init__(self, annotation_file, image_dir, batch_size, shuffle=True, random_seed=None,
                 group_by_aspect_ratio=True, remove_images_without_annotations=True, stride_partition=True,
                 name=None):
        assert name is not None
        self.module_name = name
        self.call_seq_no = 0
        self.attrs = {"annotation_file": str(annotation_file), "image_dir": str(image_dir),
                      "batch_size": int(batch_size), "shuffle_after_epoch": bool(shuffle),
                      "seed": None if random_seed is None else int(random_seed),
                      "group_by_ratio": bool(group_by_aspect_ratio),
                      "remove_images_without_annotations": bool(remove_images_without_annotations),
                      "stride_partition": bool(stride_partition), "module": name}

    def __call__(self):
        name = self.module_name if self.call_seq_no == 0 else \
            builder.current("flow.data.coco_reader").job.unique_name("COCOReader")
        self.call_seq_no += 1
        return tuple(apply("COCOReader", [], dict(self.attrs), name=name))


# --- v0.4.0 `user_data_ops.py` gpt_data_loader ----------------------------------------------------------------------
def megatron_gpt_mmap_data_loader(data_file_prefix, seq_length, num_samples, batch_size, dtype=dtypes.int64,
                                  shuffle=True, random_seed=None, split_sizes=None, split_index=None,
                                  parallel_distribution=None, start_from_saved_progress=False, name=None):
    """(batch_size, seq_length + 1) token ids of a Megatron-LM indexed dataset (`<prefix>.idx` / `.bin`), the
    next batch every call; split along the batch over the placement's devices (parallel_distribution ["S(0)"], the
    default) or read whole by each (["B"]). With start_from_saved_progress the position is a variable
    (model_name "iteration", saved with the checkpoints) that every call advances. random_seed None: one derived
    from the session's seed (OneFlow took the clock). datasets/megatron_io.py has the sampling rules."""
    from oneflow_compat import initializer as init
    from oneflow_compat._api.legacy_array_api import assign
    from oneflow_compat.ops import variable_ops

    if name is None:
        name = "gpt_data_loader" if start_from_saved_progress else \
            builder.current("flow.data.megatron_gpt_mmap_data_loader").job.unique_name("gpt_data_loader_")
    label_length = 1
    split_index = 0 if split_index is None else split_index
    split_sizes = (1,) if split_sizes is None else split_sizes
    if split_index >= len(split_sizes):
        raise ValueError("split index {} is out of range, split_sizes {}".format(split_index, split_sizes))
    dists = [_dist_str(d) for d in (parallel_distribution or [])]
    hierarchy = builder.current("flow.data.megatron_gpt_mmap_data_loader").placement.hierarchy
    if dists and len(dists) != len(hierarchy):
        raise ValueError("flow.data.megatron_gpt_mmap_data_loader: parallel_distribution %s has %d entries, but "
                         "the placement has %d dimension%s (hierarchy %s): one entry per dimension"
                         % (dists, len(dists), len(hierarchy), "" if len(hierarchy) == 1 else "s", tuple(hierarchy)))
    for d in dists:
        if d not in ("S(0)", "B"):
            raise ValueError("parallel_distribution must be S(0) or B, got %s" % d)
    attrs = {"data_file_prefix": str(data_file_prefix), "seq_length": int(seq_length), "label_length": label_length,
             "num_samples": int(num_samples), "batch_size": int(batch_size), "dtype": dtypes.as_dtype(dtype),
             "shuffle": bool(shuffle), "seed": None if random_seed is None else int(random_seed),
             "split_sizes": tuple(int(s) for s in split_sizes), "split_index": int(split_index),
             "parallel_distribution": tuple(dists)}
    if not start_from_saved_progress:
        return apply("megatron_gpt_mmap_data_loader", [], attrs, name=name)
    iteration_name = "{}-iteration-sq{}-sa{}-bs{}-sd{}-sp{}-spi{}-{}".format(
        name, seq_length, num_samples, batch_size, random_seed, "_".join(str(s) for s in split_sizes), split_index,
        "_".join("S{}".format(p[2:-1]) if p.startswith("S") else p for p in dists))
    iteration = variable_ops.get_variable(name=iteration_name, shape=(1,), dtype=dtypes.int64,
                                          initializer=init.constant_initializer(0, dtypes.int64),
                                          trainable=False, model_name="iteration", reuse=False)
    out, next_iteration = apply("megatron_gpt_mmap_data_loader", [iteration], attrs, name=name)
    assign(iteration, next_iteration)
    return out


def _dist_str(dist):
    from oneflow_compat import distribute

    sbp = distribute.to_sbp(dist)
    return "" if sbp is None else str(sbp)


MegatronGPTMMapDataLoader = megatron_gpt_mmap_data_loader
