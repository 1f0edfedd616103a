"""Bad user input is an explicit error naming what is wrong — also under `python -O`, and never a hang, a silent
skip, a MemoryError or a RecursionError."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.core.record import record_pb2
from oneflow_compat.datasets import ofrecord_io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _record(i):
    r = record_pb2.OFRecord()
    r.feature["x"].int64_list.value.append(i)
    return r


def _part(tmp_path, payloads):
    path = tmp_path / "part-0"
    with open(path, "wb") as f:
        for p in payloads:
            f.write(struct.pack("<q", len(p)) + p)
    return str(path)


def test_garbage_length_prefix_is_an_error_not_a_memory_error(tmp_path):
    path = tmp_path / "part-0"
    good = _record(0).SerializeToString()
    path.write_bytes(struct.pack("<q", len(good)) + good + struct.pack("<q", 1 << 62) + b"junk")
    with pytest.raises(ValueError) as e:
        list(ofrecord_io.iter_records(str(path)))
    assert str(path) in str(e.value) and "record #1" in str(e.value)


def test_deep_nesting_is_an_error_not_a_recursion_error(tmp_path):
    # field 7 as a group, opened 100000 times: a parser that recurses per level overflows the stack
    nested = b"\x3b" * 100000
    path = _part(tmp_path, [_record(0).SerializeToString(), nested])
    with pytest.raises(ValueError) as e:
        list(ofrecord_io.iter_records(path))
    assert path in str(e.value) and "record #1" in str(e.value)


def test_reader_names_file_and_record_and_keeps_failing(tmp_path):
    path = _part(tmp_path, [_record(0).SerializeToString(), b"\xff\xff\xff"])
    reader = ofrecord_io.RecordReader(str(tmp_path), batch_size=2)
    for _ in range(3):  # never StopIteration: a training loop must not run 0 steps silently
        with pytest.raises(ValueError) as e:
            next(reader)
        assert path in str(e.value) and "record #1" in str(e.value)


def test_shuffling_reader_names_file_and_record(tmp_path):
    path = _part(tmp_path, [_record(i).SerializeToString() for i in range(3)] + [b"\x0a\xff"])
    reader = ofrecord_io.RecordReader(str(tmp_path), batch_size=4, random_shuffle=True, shuffle_buffer_size=2,
                                      seed=1)
    with pytest.raises(ValueError) as e:
        for _ in range(50):  # the endless stream reaches the bad record within a few epochs
            next(reader)
    assert path in str(e.value) and "record #3" in str(e.value)


def test_narrowing_integer_feed_that_changes_a_value_is_an_error():
    @flow.global_function()
    def job(labels: tp.Numpy.Placeholder((2,), dtype=flow.int32)) -> tp.Numpy:
        return labels + 0

    np.testing.assert_array_equal(job(np.array([1, 2], np.int64)), [1, 2])  # fits: fine
    with pytest.raises(ValueError) as e:
        job(np.array([3, 2 ** 32 + 1], np.uint64))
    message = str(e.value)
    assert "labels" in message and "4294967297" in message


def _run_optimized(code):
    return subprocess.run([sys.executable, "-O", "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_too_few_arguments_is_an_error_under_python_O():
    code = """
import numpy as np
import oneflow_compat as flow
import oneflow_compat.typing as tp

@flow.global_function()
def job(a: tp.Numpy.Placeholder((2,)), b: tp.Numpy.Placeholder((2,))) -> tp.Numpy:
    return a + b

print(job(np.ones(2, np.float32), np.ones(2, np.float32)))
try:
    job(np.ones(2, np.float32))
except AssertionError as e:
    print("refused:", e)
else:
    print("ACCEPTED")
"""
    result = _run_optimized(code)
    assert result.returncode == 0, result.stderr
    assert "refused: job function 'job' takes 2 argument(s), 1 given" in result.stdout
