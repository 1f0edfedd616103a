"""load_mnist: legacy batching/normalisation, file validation, download fallbacks (no network: the download
function is replaced)."""
import logging
import os
import re
import shutil

import numpy as np
import pytest

from oneflow_compat.datasets import mnist

SHARED_MNIST = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "mnist.npz")
if not os.path.isfile(SHARED_MNIST):
    SHARED_MNIST = "/work/shared/data/mnist.npz"


def _write_npz(path, n_train=200, n_test=100, seed=0, **overrides):
    rng = np.random.default_rng(seed)
    arrays = {
        "x_train": rng.integers(0, 256, size=(n_train, 28, 28), dtype=np.uint8),
        "y_train": rng.integers(0, 10, size=(n_train,), dtype=np.uint8),
        "x_test": rng.integers(0, 256, size=(n_test, 28, 28), dtype=np.uint8),
        "y_test": rng.integers(0, 10, size=(n_test,), dtype=np.uint8),
    }
    arrays.update(overrides)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez(path, **arrays)
    return arrays


@pytest.fixture
def no_network(monkeypatch):
    def refuse(url, destination):
        raise AssertionError("tests must not download (%s)" % url)
    monkeypatch.setattr(mnist, "_download", refuse)


def test_batches_and_normalisation_nchw(tmp_path, capsys, caplog, no_network):
    caplog.set_level(logging.DEBUG, logger="oneflow_compat")
    arrays = _write_npz(tmp_path / "mnist.npz")
    (x, y), (xt, yt) = mnist.load_mnist(50, 25, out_dir=str(tmp_path))
    assert x.shape == (4, 50, 1, 28, 28) and x.dtype == np.float32
    assert y.shape == (4, 50) and y.dtype == np.int32
    assert xt.shape == (4, 25, 1, 28, 28) and yt.shape == (4, 25)
    expected = (arrays["x_train"].astype(np.float32) / np.float32(255.0)).reshape(4, 50, 1, 28, 28)
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_array_equal(y.ravel(), arrays["y_train"].astype(np.int32))
    np.testing.assert_array_equal(xt[3, 24, 0], arrays["x_test"][99] / np.float32(255.0))
    out = capsys.readouterr().out.splitlines()  # OneFlow's own message, printed as OneFlow did
    assert out == ["File mnist.npz already exist, path: %s" % os.path.join(str(tmp_path), "mnist.npz")]
    # this project's record of a file that is not OneFlow's copy: DEBUG, never shown unless asked for
    notes = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "oneflow_compat"]
    assert len(notes) == 1 and notes[0][0] == logging.DEBUG and "is not OneFlow's copy" in notes[0][1]


def test_nhwc_for_any_other_format(tmp_path, no_network):
    arrays = _write_npz(tmp_path / "mnist.npz")
    (x, _), (xt, _) = mnist.load_mnist(100, 100, data_format="NHWC", out_dir=str(tmp_path))
    assert x.shape == (2, 100, 28, 28, 1) and xt.shape == (1, 100, 28, 28, 1)
    np.testing.assert_array_equal(x[1, 7, :, :, 0], arrays["x_train"][107] / np.float32(255.0))


def test_matching_hash_prints_no_note(tmp_path, capsys, no_network):
    _write_npz(tmp_path / "mnist.npz")
    digest = mnist._sha256(str(tmp_path / "mnist.npz"))
    mnist.load_mnist(100, 100, hash_check=digest, out_dir=str(tmp_path))
    assert capsys.readouterr().out.count("\n") == 1


def test_batch_size_not_dividing_count(tmp_path, no_network):
    _write_npz(tmp_path / "mnist.npz")
    with pytest.raises(ValueError, match=r"train_batch_size=128 does not divide the 200 train samples"):
        mnist.load_mnist(128, 100, out_dir=str(tmp_path))
    with pytest.raises(ValueError, match=r"test_batch_size=30 does not divide the 100 test samples"):
        mnist.load_mnist(100, 30, out_dir=str(tmp_path))


@pytest.mark.parametrize("overrides, message", [
    ({"y_test": None}, r"lacks the array\(s\) y_test"),
    ({"x_train": np.zeros((200, 28, 28), np.float32)}, r"x_train must be uint8"),
    ({"x_test": np.zeros((100, 28, 27), np.uint8)}, r"x_test must be uint8 of shape \(N, 28, 28\)"),
    ({"y_train": np.zeros((199,), np.uint8)}, r"y_train must be integer labels of shape \(200,\)"),
    ({"y_train": np.zeros((200,), np.float32)}, r"y_train must be integer labels"),
])
def test_wrong_layout_is_a_value_error_naming_the_path(tmp_path, overrides, message, no_network):
    _write_npz(tmp_path / "mnist.npz", **overrides)
    with pytest.raises(ValueError, match=message) as info:
        mnist.load_mnist(100, 100, out_dir=str(tmp_path))
    assert str(tmp_path / "mnist.npz") in str(info.value)


def test_corrupt_files(tmp_path, no_network):
    path = tmp_path / "mnist.npz"
    path.write_bytes(b"<html>not found</html>")
    with pytest.raises(ValueError, match="is not an .npz"):
        mnist.load_mnist(out_dir=str(tmp_path))
    _write_npz(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=str(path)):
        mnist.load_mnist(100, 100, out_dir=str(tmp_path))


def test_missing_file_is_downloaded_then_used(tmp_path, monkeypatch, capsys):
    source = tmp_path / "source.npz"
    arrays = _write_npz(source, seed=3)
    calls = []

    def fake_download(url, destination):
        calls.append(url)
        assert os.path.dirname(destination) == str(tmp_path / "data")   # temp file beside the target
        assert not os.path.exists(tmp_path / "data" / "mnist.npz")       # target appears only when complete
        shutil.copyfile(source, destination)

    monkeypatch.setattr(mnist, "_download", fake_download)
    (x, y), _ = mnist.load_mnist(100, 100, out_dir=str(tmp_path / "data"), hash_check=mnist._sha256(str(source)))
    assert calls == [mnist.ONEFLOW_MNIST_URL]
    np.testing.assert_array_equal(y.ravel(), arrays["y_train"])
    assert sorted(os.listdir(tmp_path / "data")) == ["mnist.npz"]        # no temporary left behind
    # second call: file present, no download
    monkeypatch.setattr(mnist, "_download", lambda url, dest: pytest.fail("downloaded twice"))
    mnist.load_mnist(100, 100, out_dir=str(tmp_path / "data"))


def test_first_url_fails_then_mirror(tmp_path, monkeypatch):
    source = tmp_path / "source.npz"
    _write_npz(source)
    monkeypatch.setattr(mnist, "KERAS_MNIST_SHA256", mnist._sha256(str(source)))
    calls = []

    def fake_download(url, destination):
        calls.append(url)
        if url == mnist.ONEFLOW_MNIST_URL:
            with open(destination, "wb") as out:
                out.write(b"partial garbage")        # an invalid body must not be kept
            raise OSError("connection reset")
        shutil.copyfile(source, destination)

    monkeypatch.setattr(mnist, "_download", fake_download)
    (x, _), _ = mnist.load_mnist(100, 100, out_dir=str(tmp_path / "d"))
    assert calls == [mnist.ONEFLOW_MNIST_URL, mnist.KERAS_MNIST_URL]
    assert x.shape == (2, 100, 1, 28, 28)
    assert os.listdir(tmp_path / "d") == ["mnist.npz"]


def test_invalid_download_falls_back_too(tmp_path, monkeypatch):
    source = tmp_path / "source.npz"
    _write_npz(source)
    monkeypatch.setattr(mnist, "KERAS_MNIST_SHA256", mnist._sha256(str(source)))

    def fake_download(url, destination):
        if url == mnist.ONEFLOW_MNIST_URL:
            with open(destination, "wb") as out:
                out.write(b"<html>rate limited</html>")   # downloaded fine, but not an npz
        else:
            shutil.copyfile(source, destination)

    monkeypatch.setattr(mnist, "_download", fake_download)
    (x, _), _ = mnist.load_mnist(100, 100, out_dir=str(tmp_path))
    assert x.shape == (2, 100, 1, 28, 28)


def test_both_sources_fail(tmp_path, monkeypatch):
    def fake_download(url, destination):
        raise OSError("no route to host")

    monkeypatch.setattr(mnist, "_download", fake_download)
    with pytest.raises(OSError) as info:
        mnist.load_mnist(out_dir=str(tmp_path))
    message = str(info.value)
    assert str(tmp_path / "mnist.npz") in message
    assert mnist.ONEFLOW_MNIST_URL in message and mnist.KERAS_MNIST_URL in message
    assert "no route to host" in message
    assert os.listdir(tmp_path) == []


def test_file_appearing_during_download_is_kept(tmp_path, monkeypatch):
    # Another rank finished first: its file stays, ours is discarded.
    theirs = tmp_path / "theirs.npz"
    ours = tmp_path / "ours.npz"
    theirs_arrays = _write_npz(theirs, seed=1)
    _write_npz(ours, seed=2)
    target = tmp_path / "d" / "mnist.npz"

    def fake_download(url, destination):
        shutil.copyfile(ours, destination)
        shutil.copyfile(theirs, target)

    monkeypatch.setattr(mnist, "_download", fake_download)
    (_, y), _ = mnist.load_mnist(100, 100, out_dir=str(tmp_path / "d"))
    np.testing.assert_array_equal(y.ravel(), theirs_arrays["y_train"])
    assert os.listdir(tmp_path / "d") == ["mnist.npz"]


@pytest.mark.skipif(not os.path.isfile(SHARED_MNIST), reason="shared MNIST copy not present")
def test_real_mnist_shapes(tmp_path, no_network):
    (x, y), (xt, yt) = mnist.load_mnist(out_dir=os.path.dirname(SHARED_MNIST))
    assert x.shape == (600, 100, 1, 28, 28) and x.dtype == np.float32
    assert y.shape == (600, 100) and y.dtype == np.int32
    assert xt.shape == (100, 100, 1, 28, 28) and yt.shape == (100, 100)
    assert x.min() == 0.0 and x.max() == 1.0
    assert np.bincount(yt.ravel()).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_real_downloader_on_a_file_url(tmp_path, capsys, caplog, monkeypatch):
    # urllib serves file:// URLs too, which exercises the real download path without any network.
    caplog.set_level(logging.INFO, logger="oneflow_compat")
    monkeypatch.setattr(mnist.notices, "progress_enabled", lambda: True)
    source = tmp_path / "source.npz"
    _write_npz(source)
    destination = tmp_path / "copy.part"
    mnist._download(source.as_uri(), str(destination))
    assert destination.read_bytes() == source.read_bytes()
    assert "Downloading file://" in caplog.text
    last = capsys.readouterr().err.split("\r")[-1]  # tqdm's bar, as last drawn: title, percentage, sizes, rate
    assert re.fullmatch(r"mnist\.npz: 100%\|\S+\| (\S+)/(\S+) \[\d\d:\d\d<\d\d:\d\d, +[\d.]+[kMGT]?B/s\]\n", last), last
    done, total = re.search(r"\| (\S+)/(\S+) \[", last).groups()
    assert done == total


def test_loader_downloads_through_urllib(tmp_path, monkeypatch):
    source = tmp_path / "source.npz"
    arrays = _write_npz(source)
    (_, y), _ = mnist.load_mnist(100, 100, url=source.as_uri(), hash_check=mnist._sha256(str(source)),
                                 out_dir=str(tmp_path / "d"))
    np.testing.assert_array_equal(y.ravel(), arrays["y_train"])
    assert os.listdir(tmp_path / "d") == ["mnist.npz"]


def test_download_with_the_wrong_hash_is_refused(tmp_path, monkeypatch):
    source = tmp_path / "source.npz"
    _write_npz(source)  # the right layout, but neither OneFlow's nor Keras's file
    monkeypatch.setattr(mnist, "_download", lambda url, destination: shutil.copyfile(source, destination))
    with pytest.raises(OSError) as info:
        mnist.load_mnist(100, 100, out_dir=str(tmp_path / "d"))
    message = str(info.value)
    assert mnist.ONEFLOW_MNIST_SHA256 in message and mnist.KERAS_MNIST_SHA256 in message
    assert os.listdir(tmp_path / "d") == []


def test_no_mirror_when_the_user_gave_a_url(tmp_path, monkeypatch):
    calls = []

    def fake_download(url, destination):
        calls.append(url)
        raise OSError("not found")

    monkeypatch.setattr(mnist, "_download", fake_download)
    with pytest.raises(OSError):
        mnist.load_mnist(100, 100, url="https://mine.invalid/mnist.npz", out_dir=str(tmp_path))
    assert calls == ["https://mine.invalid/mnist.npz"]
