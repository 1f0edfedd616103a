import os
import struct

import numpy as np
import pytest

from oneflow_compat.framework import checkpoint_format as cf
from oneflow_compat.ir import dtypes

NOT_EMPTY_MESSAGE = ("{} is a file or non-empty directory! Note that flow.save is different from torch.save. It saves "
                     "each weight as a separated file so that a directory instead of a file should be given.")


def _read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def _sample_tensors():
    return {
        "dense1-weight": np.array([[1.5, -2.0, 3.25], [0.0, 1e-3, -7.0]], dtype=np.float32),
        "System-Train-TrainStep-train_job": np.array([5], dtype=np.int64),
    }


def test_saved_bytes_are_exactly_oneflows(tmp_path):
    path = tmp_path / "ckpt"
    cf.save_tensors(str(path), _sample_tensors())

    assert sorted(os.listdir(path)) == ["System-Train-TrainStep-train_job", "dense1-weight", "snapshot_done"]
    assert _read(path / "snapshot_done") == b""
    assert _read(path / "dense1-weight" / "meta", "r") == "shape {\n  dim: 2\n  dim: 3\n}\ndata_type: kFloat\n"
    assert _read(path / "dense1-weight" / "out") == struct.pack("<6f", 1.5, -2.0, 3.25, 0.0, 1e-3, -7.0)
    assert _read(path / "System-Train-TrainStep-train_job" / "meta", "r") == \
        "shape {\n  dim: 1\n}\ndata_type: kInt64\n"
    assert _read(path / "System-Train-TrainStep-train_job" / "out") == struct.pack("<q", 5)
    assert [e for e in os.listdir(tmp_path) if e != "ckpt"] == []  # no temporary folder left


@pytest.mark.parametrize("np_dtype, enum_name", [
    (np.float64, "kDouble"), (np.int8, "kInt8"), (np.int32, "kInt32"), (np.uint8, "kUInt8"),
    (np.float16, "kFloat16"), (np.float32, "kFloat"), (np.int64, "kInt64"),
])
def test_meta_enum_names(tmp_path, np_dtype, enum_name):
    cf.save_tensors(str(tmp_path / "c"), {"x": np.zeros((4,), np_dtype)})
    assert _read(tmp_path / "c" / "x" / "meta", "r") == "shape {\n  dim: 4\n}\ndata_type: %s\n" % enum_name
    assert len(_read(tmp_path / "c" / "x" / "out")) == 4 * np.dtype(np_dtype).itemsize


def test_scalar_and_empty_shapes_round_trip(tmp_path):
    tensors = {"scalar": np.array(2.5, np.float64), "empty": np.zeros((0, 3), np.float32)}
    cf.save_tensors(str(tmp_path / "c"), tensors)
    assert _read(tmp_path / "c" / "scalar" / "meta", "r") == "shape {\n}\ndata_type: kDouble\n"
    loaded = cf.load_checkpoint_dir(str(tmp_path / "c"))
    assert loaded["scalar"].shape == () and loaded["scalar"].numpy() == 2.5
    assert loaded["empty"].numpy().shape == (0, 3)


def test_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "conv1-weight": rng.standard_normal((4, 1, 5, 5)).astype(np.float32),
        "conv1-bias": rng.standard_normal(4),
        "labels": rng.integers(-100, 100, size=(7,), dtype=np.int32),
        "mask": rng.integers(0, 255, size=(2, 2), dtype=np.uint8),
    }
    cf.save_tensors(str(tmp_path / "c"), tensors)
    loaded = cf.load_checkpoint_dir(str(tmp_path / "c"))
    assert sorted(loaded) == sorted(tensors)
    for name, value in tensors.items():
        blob = loaded[name]
        assert blob.name == name
        assert blob.shape == value.shape
        assert blob.dtype is dtypes.from_numpy(value.dtype)
        assert blob.file_path == os.path.join(str(tmp_path / "c"), name, "out")
        got = blob.numpy()
        assert got.dtype == value.dtype
        np.testing.assert_array_equal(got, value)


def test_non_contiguous_and_big_endian_inputs_are_written_little_endian_c_order(tmp_path):
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    big_endian = np.array([1, 256], dtype=">i4")
    cf.save_tensors(str(tmp_path / "c"), {"t": base.T, "b": big_endian})
    assert _read(tmp_path / "c" / "t" / "out") == struct.pack("<6f", 0, 3, 1, 4, 2, 5)
    assert _read(tmp_path / "c" / "b" / "out") == struct.pack("<2i", 1, 256)
    assert _read(tmp_path / "c" / "t" / "meta", "r") == "shape {\n  dim: 3\n  dim: 2\n}\ndata_type: kFloat\n"


def test_values_with_numpy_method_are_saved(tmp_path):
    class Blob:
        def numpy(self):
            return np.ones((2,), np.float32)

    cf.save_tensors(str(tmp_path / "c"), {"v": Blob()})
    np.testing.assert_array_equal(cf.load_checkpoint_dir(str(tmp_path / "c"))["v"].numpy(), [1, 1])


def test_save_refuses_a_file_or_non_empty_directory(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_bytes(b"x")
    with pytest.raises(AssertionError) as e:
        cf.save_tensors(str(a_file), _sample_tensors())
    assert str(e.value) == NOT_EMPTY_MESSAGE.format(str(a_file))
    assert a_file.read_bytes() == b"x"

    full = tmp_path / "full"
    full.mkdir()
    (full / "keep").write_bytes(b"y")
    with pytest.raises(AssertionError) as e:
        cf.save_tensors(str(full), _sample_tensors())
    assert str(e.value) == NOT_EMPTY_MESSAGE.format(str(full))
    assert os.listdir(full) == ["keep"]


def test_save_into_an_existing_empty_directory_and_missing_parents(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    cf.save_tensors(str(empty), _sample_tensors())
    assert "snapshot_done" in os.listdir(empty)
    nested = tmp_path / "a" / "b" / "ckpt"
    cf.save_tensors(str(nested), _sample_tensors())
    assert sorted(cf.load_checkpoint_dir(str(nested))) == sorted(_sample_tensors())


def _leftovers(parent, expected=()):
    return sorted(e for e in os.listdir(parent) if e not in expected)


@pytest.mark.parametrize("fail_on_call", [1, 2])
def test_failure_mid_save_leaves_target_absent_and_no_partial(tmp_path, monkeypatch, fail_on_call):
    real_write_variable = cf._write_variable
    calls = []

    def failing_write_variable(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == fail_on_call:
            raise OSError("disk full (simulated)")
        return real_write_variable(*args, **kwargs)

    monkeypatch.setattr(cf, "_write_variable", failing_write_variable)
    with pytest.raises(OSError, match="simulated"):
        cf.save_tensors(str(tmp_path / "ckpt"), _sample_tensors())
    assert len(calls) == fail_on_call
    assert _leftovers(tmp_path) == []


def test_failure_before_snapshot_done_keeps_existing_empty_dir_empty(tmp_path, monkeypatch):
    target = tmp_path / "ckpt"
    target.mkdir()
    real_write_file = cf._write_file

    def failing_write_file(file_path, payload):
        if os.path.basename(file_path) == cf.SNAPSHOT_DONE_FILENAME:
            raise KeyboardInterrupt  # even an interrupt must clean up
        return real_write_file(file_path, payload)

    monkeypatch.setattr(cf, "_write_file", failing_write_file)
    with pytest.raises(KeyboardInterrupt):
        cf.save_tensors(str(target), _sample_tensors())
    assert os.listdir(target) == []
    assert _leftovers(tmp_path, expected=("ckpt",)) == []


def test_failure_of_the_final_rename_cleans_up(tmp_path, monkeypatch):
    def failing_rename(src, dst):
        raise OSError("rename failed (simulated)")

    monkeypatch.setattr(cf.os, "rename", failing_rename)
    with pytest.raises(OSError, match="simulated"):
        cf.save_tensors(str(tmp_path / "ckpt"), _sample_tensors())
    assert _leftovers(tmp_path) == []


def test_invalid_names_and_dtypes_are_rejected_before_writing(tmp_path):
    with pytest.raises(ValueError, match="a/b"):
        cf.save_tensors(str(tmp_path / "c"), {"ok": np.zeros(1, np.float32), "a/b": np.zeros(1, np.float32)})
    with pytest.raises(TypeError, match="'flags'.*bool"):
        cf.save_tensors(str(tmp_path / "c"), {"flags": np.zeros(2, bool)})
    assert _leftovers(tmp_path) == []


def test_get_semantics(tmp_path):
    with pytest.raises(AssertionError) as e:
        cf.load_checkpoint_dir(str(tmp_path / "missing"))
    assert str(e.value) == "Directory {} doesn't exist!".format(tmp_path / "missing")

    cf.save_tensors(str(tmp_path / "c"), _sample_tensors())
    # A folder with `out` is a single variable.
    single = cf.load_checkpoint_dir(str(tmp_path / "c" / "dense1-weight"))
    assert isinstance(single, cf.FileBackendVariableBlob)
    np.testing.assert_array_equal(single.numpy(), _sample_tensors()["dense1-weight"])
    # Leftover temporary folders of an interrupted save and folders without `out` are not variables.
    partial = tmp_path / "c" / ".c.partial-deadbeef"
    (partial / "x").mkdir(parents=True)
    (partial / "x" / "out").write_bytes(b"\0" * 4)
    (partial / "out").write_bytes(b"")
    (tmp_path / "c" / "not_a_variable").mkdir()
    assert sorted(cf.load_checkpoint_dir(str(tmp_path / "c"))) == sorted(_sample_tensors())


def test_wrong_file_size_names_file_and_sizes(tmp_path):
    cf.save_tensors(str(tmp_path / "c"), _sample_tensors())
    out = tmp_path / "c" / "dense1-weight" / "out"
    out.write_bytes(out.read_bytes()[:-4])
    with pytest.raises(ValueError) as e:
        cf.load_checkpoint_dir(str(tmp_path / "c"))
    message = str(e.value)
    assert str(out) in message and "20 bytes" in message and "expected 24" in message


def test_legacy_folders_without_meta(tmp_path):
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    cf.save_tensors(str(tmp_path / "c"), {"w": value}, write_legacy=True)
    assert sorted(os.listdir(tmp_path / "c" / "w")) == ["out"]
    assert os.path.exists(tmp_path / "c" / "snapshot_done")

    blob = cf.load_checkpoint_dir(str(tmp_path / "c"))["w"]
    assert blob.shape is None and blob.dtype is None and not blob.is_bound
    with pytest.raises(RuntimeError, match="no meta file"):
        blob.numpy()
    np.testing.assert_array_equal(blob.numpy((3, 4), np.float32), value)
    bound = blob.bind((4, 3), dtypes.float32)
    assert bound.shape == (4, 3) and bound.dtype is dtypes.float32
    with pytest.raises(ValueError) as e:
        blob.bind((3, 4), dtypes.float64)
    assert "has 48 bytes, expected 96" in str(e.value) and blob.file_path in str(e.value)


def test_check_assignable(tmp_path):
    w = np.zeros((500, 784), np.float32)
    assert cf.check_assignable("dense1-weight", (500, 784), np.float32, w) is w
    with pytest.raises(ValueError) as e:
        cf.check_assignable("dense1-weight", (500, 784), np.float32, np.zeros((784, 500), np.float32))
    assert str(e.value) == "variable 'dense1-weight': shape (500, 784) vs value shape (784, 500)"
    with pytest.raises(ValueError) as e:
        cf.check_assignable("dense1-weight", (500, 784), np.float32, np.zeros((500, 784)))
    assert str(e.value) == "variable 'dense1-weight': dtype float32 vs value dtype float64"
    with pytest.raises(TypeError, match="'x'.*list"):
        cf.check_assignable("x", (2,), np.float32, [1.0, 2.0])

    class VariableBlob:
        def numpy(self):
            return np.full((2,), 3, np.int32)

    np.testing.assert_array_equal(cf.check_assignable("x", (2,), np.int32, VariableBlob()), [3, 3])
    with pytest.raises(ValueError, match="dtype int64 vs value dtype int32"):
        cf.check_assignable("x", (2,), np.int64, VariableBlob())


def test_check_assignable_with_checkpoint_entries(tmp_path):
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    cf.save_tensors(str(tmp_path / "new"), {"w": value})
    cf.save_tensors(str(tmp_path / "old"), {"w": value}, write_legacy=True)
    with_meta = cf.load_checkpoint_dir(str(tmp_path / "new"))["w"]
    legacy = cf.load_checkpoint_dir(str(tmp_path / "old"))["w"]
    np.testing.assert_array_equal(cf.check_assignable("w", (2, 3), np.float32, with_meta), value)
    np.testing.assert_array_equal(cf.check_assignable("w", (2, 3), np.float32, legacy), value)
    # A legacy entry takes the variable's shape (same byte count, so it loads reshaped, as OneFlow did).
    np.testing.assert_array_equal(cf.check_assignable("w", (3, 2), np.float32, legacy), value.reshape(3, 2))
    with pytest.raises(ValueError, match="variable 'w': shape \\(3, 2\\) vs value shape \\(2, 3\\)"):
        cf.check_assignable("w", (3, 2), np.float32, with_meta)
    with pytest.raises(ValueError, match="variable 'w'.*expected 48"):
        cf.check_assignable("w", (2, 3), np.float64, legacy)


def test_parse_meta_accepts_text_format_variants():
    assert cf.parse_meta("shape { dim: 3 dim: 4 } data_type: 3") == ((3, 4), dtypes.float64)
    assert cf.parse_meta("# comment\nshape: {\n dim:1\n}\n\ndata_type:kInt8") == ((1,), dtypes.int8)
    assert cf.parse_meta("data_type: kChar\nshape {\n}\n") == ((), dtypes.char)
    for bad in ("shape { dim: 3 }", "shape { size: 3 } data_type: kFloat", "shape { dim: 3 } data_type: kNope",
                "shape { dim: 3 } data_type: kOFRecord"):
        with pytest.raises(ValueError, match="some/meta"):
            cf.parse_meta(bad, "some/meta")
    for shape, dtype in [((512, 784), dtypes.float32), ((), dtypes.int64), ((1,), dtypes.uint8)]:
        assert cf.parse_meta(cf.format_meta(shape, dtype)) == (shape, dtype)
