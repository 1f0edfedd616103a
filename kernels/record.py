"""Decoding kernels of the OFRecord pipeline: a `record` blob (an object array of parsed OFRecord messages, one per
batch row) into numeric arrays or into tensor buffers (object arrays of per-row arrays).

Parsing and image decoding run on the host (`datasets/ofrecord_io.py`); numeric results are handed to `xp`, so a
GPU op can consume them.
"""
import numpy

from oneflow_compat.datasets import ofrecord_io, onerec_io

from .array import object_array


def raw_decode(xp, records, *, name, shape, np_dtype, allow_short):
    """Feature `name` of every record as one (batch,) + shape array; `allow_short`: a shorter feature is
    zero-padded (the legacy dim1_varying_length / truncate)."""
    return xp.asarray(ofrecord_io.decode_raw(records, name, shape, np_dtype, dim1_varying_length=allow_short))


def bytes_decode(xp, records, *, name):
    """Feature `name`'s bytes of every record, each as a uint8 array (OneFlow's kernel: `buffer->Resize(Shape({size}),
    DataType::kUInt8)`, oneflow/user/kernels/ofrecord_decoder_kernels.cpp at v0.3.4 and v0.9.0)."""
    return object_array([numpy.frombuffer(b, dtype=numpy.uint8).copy()
                         for b in ofrecord_io.decode_bytes(records, name)])


def image_decode_records(xp, records, *, name, color_space):
    """The encoded image in feature `name` of every record, decoded to an HWC uint8 array."""
    return object_array([ofrecord_io.decode_image(b, color_space) for b in ofrecord_io.decode_bytes(records, name)])


def image_decode(xp, buffers, *, color_space, np_dtype):
    """Encoded images held as byte arrays in a tensor buffer, decoded to HWC arrays of `np_dtype`."""
    out = []
    for data in buffers:
        image = ofrecord_io.decode_image(numpy.asarray(data).tobytes(), color_space)
        out.append(image if image.dtype == np_dtype else image.astype(np_dtype))
    return object_array(out)


# --- OneRec (model zoo, issue 24): a tensor buffer blob of raw OneRec examples (datasets/onerec_io.py parses them)
def onerec_decode(xp, examples, *, key, np_dtype, static_shape, is_dynamic, reshape, batch_padding):
    """Feature `key` of every OneRec example as one (batch,) + instance-shape array (OneFlow's onerec_decoder)."""
    return xp.asarray(onerec_io.decode_feature(list(examples), key, np_dtype, static_shape, is_dynamic, reshape,
                                               batch_padding))
