"""OFRecord part files: framing, part naming, the batching reader, and the raw/bytes/image decoders."""
import io
import struct
import sys

import numpy as np
import pytest

from oneflow_compat.core.record import record_pb2 as pb
from oneflow_compat.datasets import ofrecord_io as rio


def _record(i):
    return pb.OFRecord(feature={
        "index": pb.Feature(int64_list=pb.Int64List(value=[i])),
        "pixels": pb.Feature(float_list=pb.FloatList(value=[i + k / 4.0 for k in range(6)])),
    })


def _make_dataset(folder, counts, prefix="part-", suffix_length=-1):
    """Part p holds records numbered consecutively; returns the list of per-part index lists."""
    folder.mkdir(exist_ok=True)
    start = 0
    layout = []
    for part, count in enumerate(counts):
        indices = list(range(start, start + count))
        rio.write_part(str(folder / rio.part_name(part, prefix, suffix_length)), [_record(i) for i in indices])
        layout.append(indices)
        start += count
    return layout


def _indices(batch):
    return [record.feature["index"].int64_list.value[0] for record in batch]


# ----------------------------------------------------------------------------------------------------------------
# Part files
# ----------------------------------------------------------------------------------------------------------------

def test_part_file_layout_is_length_prefixed_little_endian(tmp_path):
    records = [_record(0), pb.OFRecord(), _record(7)]
    path = tmp_path / "part-0"
    assert rio.write_part(str(path), records) == 3
    expected = b"".join(struct.pack("<q", len(r.SerializeToString())) + r.SerializeToString() for r in records)
    assert path.read_bytes() == expected
    assert list(rio.iter_records(str(path))) == records
    assert list(rio.iter_serialized(str(path))) == [r.SerializeToString() for r in records]


def test_write_part_accepts_serialized_bytes(tmp_path):
    data = _record(3).SerializeToString()
    rio.write_part(str(tmp_path / "p"), [data])
    assert (tmp_path / "p").read_bytes() == struct.pack("<q", len(data)) + data


@pytest.mark.parametrize("tail, message", [
    (b"\x05\x00\x00", "truncated record length"),
    (struct.pack("<q", 100) + b"abc", "declares 100 bytes but only 3 remain"),
    (struct.pack("<q", -4), "negative record length"),
])
def test_broken_part_files_name_the_file(tmp_path, tail, message):
    path = tmp_path / "part-0"
    rio.write_part(str(path), [_record(1)])
    with open(path, "ab") as out:
        out.write(tail)
    with pytest.raises(ValueError, match=message) as info:
        list(rio.iter_records(str(path)))
    assert str(path) in str(info.value)


def test_undecodable_record_names_file_and_index(tmp_path):
    path = tmp_path / "part-0"
    rio.write_part(str(path), [_record(1), b"\x0a\x05\x01"])
    with pytest.raises(ValueError, match=r"record #1 is not a valid OFRecord"):
        list(rio.iter_records(str(path)))


def test_part_names_and_paths(tmp_path):
    assert rio.part_name(3) == "part-3"
    assert rio.part_name(12, "part-", 5) == "part-00012"
    assert rio.part_name(123456, "p", 5) == "p123456"
    assert rio.part_name(7, "x_", 1) == "x_7"
    _make_dataset(tmp_path, [1, 1], prefix="part-", suffix_length=5)
    assert rio.part_paths(str(tmp_path), 2, "part-", 5) == [str(tmp_path / "part-00000"),
                                                           str(tmp_path / "part-00001")]
    with pytest.raises(FileNotFoundError, match="part-00002"):
        rio.part_paths(str(tmp_path), 3, "part-", 5)
    with pytest.raises(FileNotFoundError, match=r"part-0 not found"):
        rio.part_paths(str(tmp_path), 1)
    with pytest.raises(ValueError):
        rio.part_paths(str(tmp_path), 0)


# ----------------------------------------------------------------------------------------------------------------
# Reader
# ----------------------------------------------------------------------------------------------------------------

def test_reader_cycles_in_order_across_parts_and_epochs(tmp_path):
    _make_dataset(tmp_path, [3, 2])
    reader = rio.RecordReader(str(tmp_path), batch_size=4, data_part_num=2)
    batches = [_indices(next(reader)) for _ in range(3)]
    assert batches == [[0, 1, 2, 3], [4, 0, 1, 2], [3, 4, 0, 1]]
    assert all(isinstance(r, pb.OFRecord) for r in next(reader))


def test_reader_random_shuffle_is_a_seeded_permutation_per_window(tmp_path):
    _make_dataset(tmp_path, [10, 10])
    reader = rio.RecordReader(str(tmp_path), batch_size=4, data_part_num=2, random_shuffle=True,
                              shuffle_buffer_size=5, seed=7)
    first = [i for _ in range(4) for i in _indices(next(reader))]
    # Record ids equal stream positions in the first epoch (16 draws + 5 buffered < 21 records read): the k-th
    # draw comes from the buffer holding stream positions up to k + 4, and no record is drawn twice.
    assert all(i <= k + 4 for k, i in enumerate(first))
    assert len(set(first)) == 16
    assert sorted(first) != first
    again = rio.RecordReader(str(tmp_path), batch_size=4, data_part_num=2, random_shuffle=True,
                             shuffle_buffer_size=5, seed=7)
    assert [i for _ in range(4) for i in _indices(next(again))] == first
    other_seed = rio.RecordReader(str(tmp_path), batch_size=16, data_part_num=2, random_shuffle=True,
                                  shuffle_buffer_size=5, seed=8)
    assert _indices(next(other_seed)) != first
    # A buffer of 1 cannot reorder anything.
    plain = rio.RecordReader(str(tmp_path), batch_size=20, data_part_num=2, random_shuffle=True,
                             shuffle_buffer_size=1, seed=1)
    assert _indices(next(plain)) == list(range(20))


def test_reader_shuffle_after_epoch_permutes_part_order(tmp_path):
    layout = _make_dataset(tmp_path, [2] * 6)
    reader = rio.RecordReader(str(tmp_path), batch_size=12, data_part_num=6, shuffle_after_epoch=True, seed=3)
    epoch0, epoch1, epoch2 = (_indices(next(reader)) for _ in range(3))
    assert epoch0 == list(range(12))
    for epoch in (epoch1, epoch2):
        parts = [epoch[k:k + 2] for k in range(0, 12, 2)]
        assert sorted(parts) == layout                  # whole parts, each once
    assert epoch1 != epoch0 or epoch2 != epoch0


def test_reader_data_parallel_shares(tmp_path):
    _make_dataset(tmp_path, [1, 1, 1, 1, 1])
    # 5 parts over 2 readers: balanced contiguous shares of 3 and 2 parts
    first = rio.RecordReader(str(tmp_path), batch_size=3, data_part_num=5, parallel_id=0, parallel_num=2)
    second = rio.RecordReader(str(tmp_path), batch_size=3, data_part_num=5, parallel_id=1, parallel_num=2)
    assert _indices(next(first)) == [0, 1, 2]
    assert _indices(next(second)) == [3, 4, 3]
    with pytest.raises(ValueError, match="at least as many part files"):
        rio.RecordReader(str(tmp_path), batch_size=1, data_part_num=2, parallel_id=0, parallel_num=3)


def test_reader_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="part-0"):
        rio.RecordReader(str(tmp_path), batch_size=1)
    rio.write_part(str(tmp_path / "part-0"), [])
    with pytest.raises(ValueError, match="hold no records"):
        next(rio.RecordReader(str(tmp_path), batch_size=1))
    with pytest.raises(ValueError, match="batch_size"):
        rio.RecordReader(str(tmp_path), batch_size=0)


# ----------------------------------------------------------------------------------------------------------------
# Decoders
# ----------------------------------------------------------------------------------------------------------------

def test_decode_raw_numeric_lists_with_cast():
    batch = [_record(0), _record(5)]
    out = rio.decode_raw(batch, "pixels", (2, 3), np.float32)
    assert out.shape == (2, 2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out[1], np.array([[5, 5.25, 5.5], [5.75, 6, 6.25]], np.float32))
    labels = rio.decode_raw(batch, "index", (1,), np.int32)
    assert labels.dtype == np.int32 and labels.tolist() == [[0], [5]]
    truncated = rio.decode_raw(batch, "pixels", (6,), np.int64)   # C cast: toward zero
    assert truncated[1].tolist() == [5, 5, 5, 5, 6, 6]


@pytest.mark.parametrize("kind, cls, values, dtype", [
    ("double_list", pb.DoubleList, [1.5, -2.25], np.float64),
    ("int32_list", pb.Int32List, [-3, 2 ** 31 - 1], np.int32),
    ("int64_list", pb.Int64List, [-(2 ** 40), 7], np.int64),
])
def test_decode_raw_each_list_kind(kind, cls, values, dtype):
    record = pb.OFRecord(feature={"k": pb.Feature(**{kind: cls(value=values)})})
    out = rio.decode_raw([record], "k", (2,), dtype)
    np.testing.assert_array_equal(out, np.array([values], dtype))


def test_decode_raw_bytes_list_reads_int8():
    record = pb.OFRecord(feature={"img": pb.Feature(bytes_list=pb.BytesList(value=[bytes([1, 200, 255, 3])]))})
    assert rio.decode_raw([record], "img", (4,), np.uint8).tolist() == [[1, 200, 255, 3]]
    assert rio.decode_raw([record], "img", (4,), np.float32).tolist() == [[1.0, -56.0, -1.0, 3.0]]
    # longer than the shape: truncated; shorter: rest zero
    assert rio.decode_raw([record], "img", (2,), np.uint8).tolist() == [[1, 200]]
    assert rio.decode_raw([record], "img", (6,), np.uint8).tolist() == [[1, 200, 255, 3, 0, 0]]


def test_decode_raw_size_rules():
    short = pb.OFRecord(feature={"k": pb.Feature(float_list=pb.FloatList(value=[1.0, 2.0]))})
    with pytest.raises(ValueError, match=r"feature 'k' has 2 values but shape \(4,\) needs 4"):
        rio.decode_raw([short], "k", (4,), np.float32)
    for flag in ("dim1_varying_length", "auto_zero_padding"):
        out = rio.decode_raw([short], "k", (2, 2), np.float32, **{flag: True})
        assert out.tolist() == [[[1.0, 2.0], [0.0, 0.0]]]
    long = pb.OFRecord(feature={"k": pb.Feature(float_list=pb.FloatList(value=[1.0] * 5))})
    with pytest.raises(ValueError, match="needs at most 4"):
        rio.decode_raw([long], "k", (4,), np.float32, auto_zero_padding=True)


def test_decode_raw_missing_or_empty_feature_names_the_key():
    with pytest.raises(KeyError, match="no feature 'labels'"):
        rio.decode_raw([_record(0)], "labels", (1,), np.int32)
    empty = pb.OFRecord()
    empty.feature["k"]
    with pytest.raises(ValueError, match="feature 'k' is empty"):
        rio.decode_raw([empty], "k", (1,), np.int32)


def test_decode_bytes():
    records = [pb.OFRecord(feature={"b": pb.Feature(bytes_list=pb.BytesList(value=[bytes([i]) * i]))})
               for i in range(3)]
    assert rio.decode_bytes(records, "b") == [b"", b"\x01", b"\x02\x02"]
    with pytest.raises(ValueError, match="must be a bytes_list with one value, got float_list of 6 values"):
        rio.decode_bytes([_record(0)], "pixels")
    with pytest.raises(KeyError, match="'b'"):
        rio.decode_bytes([_record(0)], "b")


def test_decode_image_without_pillow_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match="needs Pillow"):
        rio.decode_image(b"\x89PNG", "RGB")


def test_decode_image_png_color_spaces():
    Image = pytest.importorskip("PIL.Image")
    rgb = np.zeros((3, 4, 3), np.uint8)
    rgb[..., 0] = np.arange(12).reshape(3, 4) * 20     # R
    rgb[..., 1] = 100                                   # G
    rgb[..., 2] = np.arange(12).reshape(3, 4)[::-1] * 7  # B
    buffer = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buffer, format="PNG")
    encoded = buffer.getvalue()
    np.testing.assert_array_equal(rio.decode_image(encoded, "RGB"), rgb)
    np.testing.assert_array_equal(rio.decode_image(encoded, "BGR"), rgb[..., ::-1])
    gray = rio.decode_image(encoded, "GRAY")
    assert gray.shape == (3, 4, 1) and gray.dtype == np.uint8
    luma = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])   # ITU-R 601 as OpenCV/Pillow
    assert np.abs(gray[..., 0].astype(np.float64) - luma).max() <= 1.0
    with pytest.raises(ValueError, match="cannot decode image"):
        rio.decode_image(b"not an image", "RGB")
