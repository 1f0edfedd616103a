"""OFRecord part files: writing, reading, batching, and decoding features into arrays.

A part file is a plain sequence of `[int64 length, little-endian][serialized OFRecord]`. A dataset directory holds
`data_part_num` such files named `part_name_prefix + index`, the index zero-padded to `part_name_suffix_length`
digits (-1 or any length not above the index's own: no padding), e.g. `part-0` … or `part-00000` ….

These are pure functions over files, records and numpy arrays; the lazy ops (`flow.data.ofrecord_reader`,
`OFRecordRawDecoder`, …) are built on top of them elsewhere.
"""
import io
import os
import random
import struct

import numpy as np

from oneflow_compat.backend.balanced_split import balanced_ranges
from oneflow_compat.core.record import record_pb2
from oneflow_compat.kernels.random import derived_seed

__all__ = ["write_part", "iter_serialized", "iter_records", "parse_record", "part_name", "part_paths", "RecordReader",
           "decode_raw", "decode_bytes", "decode_image"]

_LENGTH = struct.Struct("<q")


def write_part(path, records):
    """Writes `records` (OFRecord messages, or their serialized bytes) as one part file; returns how many."""
    count = 0
    with open(path, "wb") as out:
        for record in records:
            payload = record if isinstance(record, (bytes, bytearray)) else record.SerializeToString()
            out.write(_LENGTH.pack(len(payload)))
            out.write(payload)
            count += 1
    return count


def iter_serialized(path):
    """Yields the serialized records of one part file, checking the length framing against the file's size (a
    garbage length is an error naming the file and record, never a huge allocation)."""
    for _, payload in _iter_indexed(path):
        yield payload


def _iter_indexed(path):
    with open(path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        offset, index = 0, 0
        while True:
            header = stream.read(_LENGTH.size)
            if not header:
                return
            if len(header) < _LENGTH.size:
                raise ValueError("%s: record #%d: truncated record length at byte %d (%d of 8 bytes)"
                                 % (path, index, offset, len(header)))
            (length,) = _LENGTH.unpack(header)
            if length < 0:
                raise ValueError("%s: record #%d: negative record length %d at byte %d; not an OFRecord part file?"
                                 % (path, index, length, offset))
            remaining = size - offset - _LENGTH.size
            if length > remaining:
                raise ValueError("%s: record #%d at byte %d declares %d bytes but only %d remain"
                                 % (path, index, offset, length, max(remaining, 0)))
            payload = stream.read(length)
            if len(payload) < length:  # the file shrank while being read
                raise ValueError("%s: record #%d at byte %d declares %d bytes but only %d remain"
                                 % (path, index, offset, length, len(payload)))
            offset += _LENGTH.size + length
            yield index, payload
            index += 1


def parse_record(payload, path, index):
    """One serialized OFRecord, or a ValueError naming the file and the record's index in it."""
    try:
        return record_pb2.OFRecord.FromString(payload)
    except RecursionError:
        raise ValueError("%s: record #%d is not a valid OFRecord (nested too deeply)" % (path, index)) from None
    except Exception as error:  # any failure to parse untrusted bytes is this file's fault
        raise ValueError("%s: record #%d is not a valid OFRecord (%s)" % (path, index, error)) from None


def iter_records(path):
    """Yields the parsed OFRecord messages of one part file."""
    for index, payload in _iter_indexed(path):
        yield parse_record(payload, path, index)


def part_name(index, part_name_prefix="part-", part_name_suffix_length=-1):
    digits = str(index)
    return part_name_prefix + "0" * max(part_name_suffix_length - len(digits), 0) + digits


def part_paths(ofrecord_dir, data_part_num, part_name_prefix="part-", part_name_suffix_length=-1):
    """The `data_part_num` part file paths of a dataset directory; every one of them must exist."""
    if int(data_part_num) < 1:
        raise ValueError("data_part_num must be at least 1, got %r" % (data_part_num,))
    paths = [os.path.join(ofrecord_dir, part_name(i, part_name_prefix, part_name_suffix_length))
             for i in range(int(data_part_num))]
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(
                "OFRecord part file %s not found (data_part_num=%d, part_name_prefix=%r, "
                "part_name_suffix_length=%d)" % (path, data_part_num, part_name_prefix, part_name_suffix_length))
    return paths


class RecordReader:
    """Endless iterator of batches (lists of `batch_size` parsed OFRecords) over a dataset directory.

    As OneFlow's reader: the part files form one stream that restarts at the first part after the last (epochs
    are not batch-aligned: a batch may span two epochs). `shuffle_after_epoch` permutes the order of the part files
    for every epoch after the first; `random_shuffle` draws each record at random from a buffer of the next
    `shuffle_buffer_size` records. With several data-parallel readers, `parallel_num` > 1 gives reader
    `parallel_id` a contiguous balanced share of the part files (OneFlow needs parallel_num <= data_part_num) and
    `batch_size` is that reader's own (per-device) batch.
    """

    def __init__(self, ofrecord_dir, batch_size, data_part_num=1, part_name_prefix="part-",
                 part_name_suffix_length=-1, random_shuffle=False, shuffle_buffer_size=1024,
                 shuffle_after_epoch=False, seed=None, parallel_id=0, parallel_num=1):
        if int(batch_size) < 1:
            raise ValueError("batch_size must be at least 1, got %r" % (batch_size,))
        if random_shuffle and int(shuffle_buffer_size) < 1:
            raise ValueError("shuffle_buffer_size must be at least 1, got %r" % (shuffle_buffer_size,))
        if not 0 <= parallel_id < parallel_num:
            raise ValueError("parallel_id %r is not in [0, parallel_num=%r)" % (parallel_id, parallel_num))
        self._paths = part_paths(ofrecord_dir, data_part_num, part_name_prefix, part_name_suffix_length)
        if parallel_num > len(self._paths):
            raise ValueError("%d data-parallel readers need at least as many part files, but data_part_num=%d"
                             % (parallel_num, len(self._paths)))
        self.batch_size = int(batch_size)
        self._range = balanced_ranges(len(self._paths), parallel_num)[parallel_id]
        self._random_shuffle = bool(random_shuffle)
        self._buffer_size = int(shuffle_buffer_size)
        self._shuffle_after_epoch = bool(shuffle_after_epoch)
        # Part-order shuffles must agree between the data-parallel readers (each takes its share of the same
        # permutation), so they use their own generator, seeded identically everywhere (OneFlow: a fixed seed).
        self._epoch_rng = random.Random(0 if seed is None else seed)
        self._record_rng = random.Random(None if seed is None else derived_seed(seed, "reader-%d" % parallel_id))
        self._stream = self._record_stream()
        self._buffer = []
        self._error = None  # once reading failed, every later batch fails the same way (never a silent end)

    def _local_paths(self, paths):
        start, stop = self._range
        return paths[start:stop]

    def _serialized_stream(self):
        paths = list(self._paths)
        epoch = 0
        while True:
            if epoch > 0 and self._shuffle_after_epoch:
                self._epoch_rng.shuffle(paths)
            produced = False
            for path in self._local_paths(paths):
                for index, payload in _iter_indexed(path):
                    produced = True
                    yield path, index, payload
            if not produced:
                raise ValueError("OFRecord part files %s hold no records" % ", ".join(self._local_paths(paths)))
            epoch += 1

    def _record_stream(self):
        source = self._serialized_stream()
        if not self._random_shuffle:
            for entry in source:
                yield parse_record(entry[2], entry[0], entry[1])
        buffer = self._buffer
        for entry in source:
            if len(buffer) < self._buffer_size:
                buffer.append(entry)
                continue
            pick = self._record_rng.randrange(len(buffer))
            chosen, buffer[pick] = buffer[pick], entry
            yield parse_record(chosen[2], chosen[0], chosen[1])

    def __iter__(self):
        return self

    def __next__(self):
        if self._error is not None:
            raise ValueError("OFRecord reader failed earlier: %s" % self._error) from self._error
        try:
            return [next(self._stream) for _ in range(self.batch_size)]
        except StopIteration:  # the stream is endless: only a failure inside the generator ends it
            self._error = RuntimeError("the record stream ended")
            raise ValueError("OFRecord reader: the record stream ended") from None
        except Exception as error:
            self._error = error
            raise

    next_batch = __next__


def _feature(record, key, index):
    feature = record.feature.get(key)
    if feature is None:
        raise KeyError("OFRecord #%d of the batch has no feature %r (it has: %s)"
                       % (index, key, ", ".join(sorted(record.feature)) or "none"))
    return feature


def decode_raw(records, key, shape, np_dtype, dim1_varying_length=False, auto_zero_padding=False):
    """Feature `key` of every record as an array of shape (len(records),) + shape and dtype `np_dtype`.

    Numeric lists must hold exactly prod(shape) values, or at most that many (zero-padded) when
    `dim1_varying_length` or `auto_zero_padding` is set. A bytes_list must hold one value, read as int8 and
    truncated to prod(shape) elements (OneFlow's raw decoder rule).
    """
    shape = tuple(int(d) for d in shape)
    dtype = np.dtype(np_dtype)
    count = int(np.prod(shape, dtype=np.int64))
    out = np.zeros((len(records), count), dtype=dtype)
    allow_short = dim1_varying_length or auto_zero_padding
    for index, record in enumerate(records):
        feature = _feature(record, key, index)
        kind = feature.WhichOneof("kind")
        if kind is None:
            raise ValueError("OFRecord #%d: feature %r is empty (no list set)" % (index, key))
        if kind == "bytes_list":
            values = feature.bytes_list.value
            if len(values) != 1:
                raise ValueError("OFRecord #%d: feature %r is a bytes_list of %d values; the raw decoder needs 1"
                                 % (index, key, len(values)))
            data = np.frombuffer(values[0], dtype=np.int8)[:count]
        else:
            values = getattr(feature, kind).value
            if len(values) != count and not (allow_short and len(values) < count):
                raise ValueError("OFRecord #%d: feature %r has %d values but shape %s needs %s%d"
                                 % (index, key, len(values), shape, "at most " if allow_short else "", count))
            data = np.asarray(values[:], dtype=_LIST_DTYPES[kind])
        out[index, :data.size] = data.astype(dtype, copy=False) if data.dtype != dtype else data
    return out.reshape((len(records),) + shape)


_LIST_DTYPES = {"float_list": np.float32, "double_list": np.float64, "int32_list": np.int32,
                "int64_list": np.int64}


def decode_bytes(records, key):
    """Feature `key` (a bytes_list holding exactly one value) of every record, as a list of bytes."""
    result = []
    for index, record in enumerate(records):
        feature = _feature(record, key, index)
        if feature.WhichOneof("kind") != "bytes_list" or len(feature.bytes_list.value) != 1:
            raise ValueError("OFRecord #%d: feature %r must be a bytes_list with one value, got %s"
                             % (index, key, _describe(feature)))
        result.append(feature.bytes_list.value[0])
    return result


def _describe(feature):
    kind = feature.WhichOneof("kind")
    return "nothing" if kind is None else "%s of %d values" % (kind, len(getattr(feature, kind).value))


def decode_image(encoded, color_space="BGR"):
    """Decodes an encoded image (JPEG, PNG, …) into a uint8 HWC array: 3 channels in `color_space` order
    ("BGR", the OpenCV default of OneFlow, or "RGB"), or 1 channel for "GRAY". Needs Pillow."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("decoding OFRecord images needs Pillow, which is not installed "
                          "(pip install Pillow)") from None
    color_space = color_space.upper()
    if color_space not in ("BGR", "RGB", "GRAY"):
        raise ValueError("color_space must be 'BGR', 'RGB' or 'GRAY', got %r" % (color_space,))
    try:
        with Image.open(io.BytesIO(bytes(encoded))) as image:
            image = image.convert("L" if color_space == "GRAY" else "RGB")
            pixels = np.asarray(image, dtype=np.uint8)
    except Exception as error:  # Pillow raises several unrelated types for undecodable data
        raise ValueError("cannot decode image of %d bytes: %s" % (len(encoded), error)) from None
    if color_space == "GRAY":
        return pixels.reshape(pixels.shape[0], pixels.shape[1], 1).copy()
    if color_space == "BGR":
        pixels = pixels[:, :, ::-1]
    return np.ascontiguousarray(pixels)
