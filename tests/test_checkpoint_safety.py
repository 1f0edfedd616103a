"""Checkpoints are never lost and never half-read: killed saves, replacement by swap, cleaning of temp folders,
bad folders as errors naming the path, one writer whose outcome every rank learns."""
import os
import random
import signal
import time

import numpy as np
import pytest

from oneflow_compat.framework import checkpoint_format as cf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tensors(value, n=1 << 16):
    return {"a": np.full(n, value, np.float32), "b": np.full(7, value, np.int64)}


def _assert_intact(path):
    loaded = cf.load_checkpoint_dir(str(path))
    a, b = loaded["a"].numpy(), loaded["b"].numpy()
    assert a.shape == (1 << 16,) and b.shape == (7,)
    assert np.all(a == a[0]) and np.all(b == int(a[0])), "checkpoint mixes two saves"
    return int(a[0])


def test_kill_during_replace_leaves_a_whole_checkpoint(tmp_path):
    path = tmp_path / "ckpt"
    cf.save_tensors(str(path), _tensors(0))
    rng = random.Random(8)
    started = time.perf_counter()
    seen = set()
    for attempt in range(20):
        pid = os.fork()
        if pid == 0:  # the child replaces the checkpoint in a loop until killed
            try:
                i = 1 + attempt * 1000
                while True:
                    cf.replace_tensors(str(path), _tensors(i))
                    i += 1
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        seen.add(_assert_intact(path))
    assert time.perf_counter() - started < 20
    assert len(seen) > 1  # the saves did run between kills
    # the next save cleans what the killed ones left, and still finds a whole checkpoint to replace
    cf.replace_tensors(str(path), _tensors(-1))
    assert _assert_intact(path) == -1
    assert [e for e in os.listdir(tmp_path) if e != "ckpt"] == []


def test_replace_refuses_a_folder_that_is_not_a_checkpoint(tmp_path):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    with pytest.raises(AssertionError, match="is a file or non-empty directory"):
        cf.replace_tensors(str(other), _tensors(1))
    assert os.listdir(other) == ["notes.txt"]
    # and plain save still refuses an existing checkpoint, as OneFlow did
    cf.save_tensors(str(tmp_path / "c"), _tensors(1))
    with pytest.raises(AssertionError, match="is a file or non-empty directory"):
        cf.save_tensors(str(tmp_path / "c"), _tensors(2))
    assert _assert_intact(tmp_path / "c") == 1


def test_temp_folders_of_dead_saves_are_cleaned_live_ones_kept(tmp_path):
    dead = tmp_path / (".c" + cf._PARTIAL_MARK + "999999999-abc")
    unnamed = tmp_path / (".c" + cf._PARTIAL_MARK + "deadbeef")
    live = tmp_path / (".c" + cf._PARTIAL_MARK + "%d-abc" % os.getppid())
    other = tmp_path / (".d" + cf._PARTIAL_MARK + "999999999-abc")
    for d in (dead, unnamed, live, other):
        d.mkdir()
    cf.save_tensors(str(tmp_path / "c"), _tensors(3))
    assert not dead.exists() and not unnamed.exists()
    assert live.exists() and other.exists()


def test_fallback_swap_killed_between_renames_is_recovered(tmp_path, monkeypatch):
    path = tmp_path / "c"
    cf.save_tensors(str(path), _tensors(4))
    # as if the two-rename swap died after moving the old checkpoint aside
    os.rename(path, tmp_path / (".c" + cf._OLD_MARK + "999999999-abc"))
    assert _assert_intact(path) == 4
    monkeypatch.setattr(cf, "_exchange", lambda a, b: False)
    cf.replace_tensors(str(path), _tensors(5))
    assert _assert_intact(path) == 5
    assert os.listdir(tmp_path) == ["c"]


def _saved(tmp_path):
    path = tmp_path / "c"
    cf.save_tensors(str(path), _tensors(6, n=4))
    return path


def _load_error(path, kind=ValueError):
    with pytest.raises(kind) as e:
        loaded = cf.load_checkpoint_dir(str(path))
        for blob in (loaded.values() if isinstance(loaded, dict) else [loaded]):
            blob.numpy()
    return str(e.value)


def test_folder_without_snapshot_done(tmp_path):
    path = _saved(tmp_path)
    os.remove(path / "snapshot_done")
    assert str(path) in _load_error(path) and "snapshot_done" in _load_error(path)


def test_missing_data_file(tmp_path):
    path = _saved(tmp_path)
    os.remove(path / "a" / "out")
    assert str(path / "a" / "out") in _load_error(path, FileNotFoundError)


def test_damaged_data_file(tmp_path):
    path = _saved(tmp_path)
    (path / "a" / "out").write_bytes(b"\0" * 3)
    assert str(path / "a" / "out") in _load_error(path)


def test_symlink_leaving_the_folder(tmp_path):
    path = _saved(tmp_path)
    secret = tmp_path / "secret"
    secret.write_bytes(b"\0" * 16)
    os.remove(path / "a" / "out")
    os.symlink(secret, path / "a" / "out")
    message = _load_error(path)
    assert str(path / "a" / "out") in message and "outside" in message
    # a whole variable folder linked from elsewhere
    elsewhere = tmp_path / "elsewhere"
    os.rename(path / "b", elsewhere)
    os.symlink(elsewhere, path / "b")
    os.remove(path / "a" / "out")
    (path / "a" / "out").write_bytes(b"\0" * 16)
    assert str(path / "b") in _load_error(path)


def test_symlink_inside_the_folder_is_fine(tmp_path):
    path = _saved(tmp_path)
    os.rename(path / "a" / "out", path / "a" / "data")
    os.symlink("data", path / "a" / "out")
    assert _assert_intact_small(path)


def _assert_intact_small(path):
    return np.all(cf.load_checkpoint_dir(str(path))["a"].numpy() == 6)


def test_out_that_is_a_directory(tmp_path):
    path = _saved(tmp_path)
    os.remove(path / "a" / "out")
    (path / "a" / "out").mkdir()
    message = _load_error(path)
    assert str(path / "a" / "out") in message and "directory" in message


def test_out_that_is_a_fifo_never_blocks(tmp_path):
    path = _saved(tmp_path)
    os.remove(path / "a" / "out")
    os.mkfifo(path / "a" / "out")
    message = _load_error(path)
    assert str(path / "a" / "out") in message and "FIFO" in message


def test_meta_without_out(tmp_path):
    path = _saved(tmp_path)
    (path / "z").mkdir()
    (path / "z" / "meta").write_text(cf.format_meta((2,), np.float32))
    assert str(path / "z" / "out") in _load_error(path, FileNotFoundError)


def test_binary_meta_names_the_file(tmp_path):
    path = _saved(tmp_path)
    (path / "a" / "meta").write_bytes(b"\xff\xfe\x00garbage\x80")
    message = _load_error(path)
    assert str(path / "a" / "meta") in message and "not text" in message


class _FakeComm:
    def __init__(self, rank, message=None):
        self.rank, self.size, self.timeout, self.timeouts, self._message = rank, 2, 2.0, [], message

    def set_timeout(self, seconds):
        self.timeouts.append(seconds)
        self.timeout = seconds

    def bcast_object(self, obj, root=0):
        assert self.timeout >= 3600  # waiting for a slow writer is not a lost peer
        return obj if self.rank == root else self._message


def test_one_writer_every_rank_learns_the_outcome(tmp_path):
    written = []
    comm = _FakeComm(rank=1)
    cf.write_on_rank0(comm, "p", lambda: written.append(1))
    assert written == [] and comm.timeout == 2.0  # not the writer; timeout restored
    with pytest.raises(RuntimeError, match="failed on rank 0: OSError: disk full"):
        cf.write_on_rank0(_FakeComm(rank=1, message="OSError: disk full"), "p", lambda: None)

    def fail():
        raise OSError("disk full")

    comm = _FakeComm(rank=0)
    with pytest.raises(OSError, match="disk full"):
        cf.write_on_rank0(comm, "p", fail)
    assert comm.timeout == 2.0


def test_examples_never_delete_a_checkpoint_before_saving():
    folder = os.path.join(ROOT, "examples")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name)) as f:
                assert "rmtree" not in f.read(), name
