"""Kernels of the legacy data ops beyond record.py: the old `decode_ofrecord` codecs (ImageCodec with its
preprocessors, BytesListCodec, NormByChannelPreprocessor), the image decoder that crops and resizes in one step.

Rules as OneFlow v0.3.4 (`oneflow/core/record/ofrecord_jpeg_decoder.cpp`, `image_preprocess.cpp`,
`ofrecord_decoder.cpp`, `ofrecord_bytes_list_decoder.cpp`, `oneflow/core/kernel/
image_decoder_random_crop_resize_kernel.cpp`); OpenCV's INTER_LINEAR resize is image.py's `bilinear`.
"""
import numpy

from oneflow_compat.datasets import ofrecord_io

from .image import crop_window, resize_image


def _rng(seed, call, row, device):
    return numpy.random.default_rng([int(seed) & (2 ** 63 - 1), int(call), int(device), int(row)])


def jpeg_decode_records(xp, records, *, name, shape, np_dtype, preprocess, seed, call, first_row, device):
    """The (old API's) ImageCodec: each record's encoded image decoded as OpenCV does (BGR), then the
    preprocessors in order — ("resize", width, height) bilinear, ("bgr2rgb",), ("mirror",) a horizontal flip with
    probability 1/2 from the row's stream — then 1 <-> 3 channels as the blob's shape asks; -> (n,) + shape."""
    out = numpy.zeros((len(records),) + tuple(shape), dtype=np_dtype)
    for i, encoded in enumerate(ofrecord_io.decode_bytes(records, name)):
        image = ofrecord_io.decode_image(encoded, "BGR")
        rng = _rng(seed, call, first_row + i, device)
        for step in preprocess:
            if step[0] == "resize":
                image = resize_image(image, step[2], step[1], "bilinear")
            elif step[0] == "bgr2rgb":
                image = image[:, :, ::-1]
            elif step[0] == "mirror" and rng.integers(0, 2) == 1:
                image = image[:, ::-1]
        if image.shape[2] != shape[2]:
            if image.shape[2] == 3 and shape[2] == 1:  # OpenCV's BGR2GRAY weights
                gray = image[:, :, 0] * 0.114 + image[:, :, 1] * 0.587 + image[:, :, 2] * 0.299
                image = numpy.clip(numpy.rint(gray), 0, 255).astype(numpy.uint8)[:, :, None]
            elif image.shape[2] == 1 and shape[2] == 3:
                image = numpy.repeat(image, 3, axis=2)
        if tuple(image.shape) != tuple(shape):
            raise ValueError("decode_ofrecord: blob %r is %s, the decoded image of record %d is %s" % (
                name, tuple(shape), first_row + i, image.shape))
        out[i] = image
    return xp.asarray(out)


def bytes_list_decode(xp, records, *, name, shape, np_dtype):
    """The old API's BytesListCodec: each bytes value of the feature copied into its row of (n,) + shape int8,
    zero-padded (each value at most prod(shape[1:]) bytes)."""
    out = numpy.zeros((len(records),) + tuple(shape), dtype=np_dtype)
    row = int(numpy.prod(shape[1:], dtype=numpy.int64)) if len(shape) > 1 else 1
    flat = out.reshape(len(records), -1)
    for i, record in enumerate(records):
        feature = record.feature.get(name)
        if feature is None or feature.WhichOneof("kind") != "bytes_list":
            raise ValueError("decode_ofrecord: record %d has no bytes_list feature %r" % (i, name))
        for j, value in enumerate(feature.bytes_list.value):
            if len(value) > row:
                raise ValueError("decode_ofrecord: feature %r: %d bytes exceed %d" % (name, len(value), row))
            flat[i, j * row:j * row + len(value)] = numpy.frombuffer(value, dtype=numpy.int8)
    return xp.asarray(out)


def norm_by_channel(xp, x, *, mean, std, data_format):
    """(x - mean[c]) / std[c] along the channel axis (last for channels_last, 1 for channels_first)."""
    axis = x.ndim - 1 if data_format == "channels_last" else 1
    shape = [1] * x.ndim
    shape[axis] = len(mean)
    mean = xp.asarray(numpy.asarray(mean, dtype=numpy.float64).reshape(shape))
    std = xp.asarray(numpy.asarray(std, dtype=numpy.float64).reshape(shape))
    return ((x - mean) / std).astype(x.dtype)


def decode_random_crop_resize(xp, buffers, *, target_width, target_height, seed, call, first_row, device,
                              random_area, random_aspect_ratio, num_attempts):
    """Encoded images decoded, cut to a random crop window and resized (bilinear) to target_height x target_width,
    RGB uint8: (n, target_height, target_width, 3)."""
    out = numpy.zeros((len(buffers), target_height, target_width, 3), dtype=numpy.uint8)
    for i, data in enumerate(buffers):
        image = ofrecord_io.decode_image(numpy.asarray(data).tobytes(), "BGR")
        y, x, h, w = crop_window(_rng(seed, call, first_row + i, device), image.shape[0], image.shape[1],
                                 random_area, random_aspect_ratio, num_attempts)
        resized = resize_image(image[y:y + h, x:x + w], target_height, target_width, "bilinear")
        out[i] = resized[:, :, ::-1]
    return xp.asarray(out)

