"""kernels/record.py: decoding OFRecord features of a batch of records into a numeric batch (zero padding when
allowed) or into tensor buffers of bytes and of decoded images (with Pillow)."""
import io
import os
import sys

import numpy as np
import pytest

from oneflow_compat.core.record import record_pb2 as pb
from oneflow_compat.kernels import record as R
from oneflow_compat.kernels.array import object_array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, xp  # noqa: E402,F401  (xp: fixture)


def _records(**features):
    """One record per row: features[name] is a list of (kind, values) per row."""
    rows = len(next(iter(features.values())))
    out = []
    for i in range(rows):
        feature = {}
        for name, per_row in features.items():
            kind, values = per_row[i]
            lists = {"float": lambda v: pb.Feature(float_list=pb.FloatList(value=v)),
                     "int32": lambda v: pb.Feature(int32_list=pb.Int32List(value=v)),
                     "bytes": lambda v: pb.Feature(bytes_list=pb.BytesList(value=v))}
            feature[name] = lists[kind](values)
        out.append(pb.OFRecord(feature=feature))
    return object_array(out)


def test_raw_decode_numeric_batch_and_zero_padding(xp):
    records = _records(x=[("float", [1.0, 2.0, 3.0, 4.0]), ("float", [5.0, 6.0])])
    with pytest.raises(ValueError, match="has 2 values but shape"):
        R.raw_decode(xp, records, name="x", shape=(2, 2), np_dtype=np.float32, allow_short=False)
    out = R.raw_decode(xp, records, name="x", shape=(2, 2), np_dtype=np.float64, allow_short=True)
    assert out.dtype == np.float64 and out.shape == (2, 2, 2)
    np.testing.assert_array_equal(host(out), [[[1, 2], [3, 4]], [[5, 6], [0, 0]]])
    labels = R.raw_decode(xp, _records(y=[("int32", [7]), ("int32", [9])]), name="y", shape=(1,),
                          np_dtype=np.int32, allow_short=False)
    assert labels.dtype == np.int32 and host(labels).tolist() == [[7], [9]]


def test_bytes_decode_gives_uint8_buffers():
    # OneFlow's buffers are kUInt8 (ofrecord_decoder_kernels.cpp, v0.3.4 and v0.9.0)
    out = R.bytes_decode(np, _records(b=[("bytes", [b"\x01\xff"]), ("bytes", [b"abc"])]), name="b")
    assert out.dtype == object and len(out) == 2
    assert out[0].dtype == np.uint8 and out[0].tolist() == [1, 255]
    assert out[1].tolist() == list(b"abc")


def _png(pixels):
    image_mod = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    image_mod.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def test_image_decoders_from_records_and_from_buffers():
    rng = np.random.default_rng(0)
    rgb = [rng.integers(0, 256, (4 + i, 5, 3)).astype(np.uint8) for i in range(2)]
    encoded = [_png(p) for p in rgb]
    records = _records(img=[("bytes", [e]) for e in encoded])
    bgr = R.image_decode_records(np, records, name="img", color_space="BGR")
    assert [im.shape for im in bgr] == [(4, 5, 3), (5, 5, 3)]
    for decoded, pixels in zip(bgr, rgb):
        np.testing.assert_array_equal(decoded, pixels[..., ::-1])
    buffers = R.bytes_decode(np, records, name="img")
    as_float = R.image_decode(np, buffers, color_space="RGB", np_dtype=np.float32)
    for decoded, pixels in zip(as_float, rgb):
        assert decoded.dtype == np.float32
        np.testing.assert_array_equal(decoded, pixels)
