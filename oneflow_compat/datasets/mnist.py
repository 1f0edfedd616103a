"""`flow.data.load_mnist`: MNIST from a Keras-layout `mnist.npz`, batched the legacy way.

Differences from the legacy loader, all in the direction of working offline and never crashing half-way:
* a local file with the right layout is used whatever its sha256 (a DEBUG record of the `oneflow_compat` logger
  when it is not OneFlow's copy), but a download must match its source's sha256 (`hash_check` for `url`, Keras's
  hash for the Keras mirror);
* downloads go through urllib with a tqdm bar (OneFlow used requests + tqdm), fall back to the Keras mirror only
  when `url` was left at OneFlow's, land in a temporary file in the same folder and are renamed into place only
  once complete and valid, so concurrent ranks never read a partial file;
* a wrong file is a ValueError naming the path and the problem, not a numpy traceback.
"""
import hashlib
import os
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile

import numpy as np

from oneflow_compat.backend import notices

__all__ = ["load_mnist", "ONEFLOW_MNIST_URL", "ONEFLOW_MNIST_SHA256", "KERAS_MNIST_URL", "KERAS_MNIST_SHA256"]

ONEFLOW_MNIST_URL = "https://oneflow-public.oss-cn-beijing.aliyuncs.com/datasets/mnist.npz"
ONEFLOW_MNIST_SHA256 = "63d4344077849053dc3036b247fa012b2b381de53fd055a66b539dffd76cf08e"
KERAS_MNIST_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
KERAS_MNIST_SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"

_KEYS = ("x_train", "y_train", "x_test", "y_test")
_DOWNLOAD_TIMEOUT_S = 60


def load_mnist(train_batch_size=100, test_batch_size=100, data_format="NCHW", url=ONEFLOW_MNIST_URL,
               hash_check=ONEFLOW_MNIST_SHA256, out_dir="."):
    """Returns ((train_images, train_labels), (test_images, test_labels)).

    Images are x / 255 as float32, shaped (-1, batch, 1, 28, 28) for "NCHW" and (-1, batch, 28, 28, 1) for any
    other `data_format`; labels are int32, shaped (-1, batch). No shuffling.
    """
    path = os.path.join(out_dir, "mnist.npz")
    if not os.path.isfile(path):
        sources = [(url, hash_check)]
        if url == ONEFLOW_MNIST_URL and hash_check in (ONEFLOW_MNIST_SHA256, None, ""):
            sources.append((KERAS_MNIST_URL, KERAS_MNIST_SHA256 if hash_check else None))
        _fetch(path, sources)
    print("File mnist.npz already exist, path: %s" % path)
    arrays = _read_mnist_npz(path)
    if hash_check:
        digest = _sha256(path)
        if digest != hash_check:
            notices.detail("%s is not OneFlow's copy (sha256 %s); it has the right layout and is used as is",
                           path, digest)
    train = _batched(arrays["x_train"], arrays["y_train"], train_batch_size, data_format, "train", path)
    test = _batched(arrays["x_test"], arrays["y_test"], test_batch_size, data_format, "test", path)
    return train, test


def _batched(images, labels, batch_size, data_format, split, path):
    count = images.shape[0]
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError("%s_batch_size must be a positive int, got %r" % (split, batch_size))
    if count % batch_size:
        raise ValueError("%s_batch_size=%d does not divide the %d %s samples of %s (cannot reshape into batches)"
                         % (split, batch_size, count, split, path))
    images = images.astype(np.float32) / 255.0
    labels = labels.astype(np.int32)
    if data_format == "NCHW":
        images = images.reshape((-1, batch_size, 1, 28, 28))
    else:
        images = images.reshape((-1, batch_size, 28, 28, 1))
    return images, labels.reshape((-1, batch_size))


def _read_mnist_npz(path):
    """Loads and checks the Keras layout; any problem is a ValueError naming `path`."""
    if not zipfile.is_zipfile(path):
        raise ValueError("%s is not an .npz (zip) archive; remove it or replace it with a Keras-layout mnist.npz"
                         % path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            names = list(npz.files)
            arrays = {key: npz[key] for key in _KEYS if key in names}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError("%s cannot be read as an .npz archive: %s" % (path, error)) from None
    missing = [key for key in _KEYS if key not in arrays]
    if missing:
        raise ValueError("%s lacks the array(s) %s (it has: %s)"
                         % (path, ", ".join(missing), ", ".join(names) or "none"))
    for split in ("train", "test"):
        images, labels = arrays["x_" + split], arrays["y_" + split]
        if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
            raise ValueError("%s: x_%s must be uint8 of shape (N, 28, 28), got %s %s"
                             % (path, split, images.dtype, images.shape))
        if labels.dtype.kind not in "iu" or labels.shape != (images.shape[0],):
            raise ValueError("%s: y_%s must be integer labels of shape (%d,) to match x_%s, got %s %s"
                             % (path, split, images.shape[0], split, labels.dtype, labels.shape))
    return arrays


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch(path, sources):
    """Downloads the first (url, sha256 or None) source that yields a valid file with that hash, and moves it to
    `path` atomically."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    failures = []
    for url, expected in dict.fromkeys((u, h) for u, h in sources if u):
        if os.path.isfile(path):
            return  # another process finished meanwhile
        handle, partial = tempfile.mkstemp(prefix=".mnist.npz.", suffix=".part", dir=folder)
        os.close(handle)
        try:
            _download(url, partial)
            if expected:
                digest = _sha256(partial)
                if digest != expected:
                    raise ValueError("downloaded file has sha256 %s, expected %s" % (digest, expected))
            _read_mnist_npz(partial)
        except Exception as error:  # network, HTTP and validation errors alike: try the next source
            failures.append("%s: %s" % (url, error))
            _remove_quietly(partial)
            continue
        if os.path.isfile(path):
            _remove_quietly(partial)  # someone else's copy landed first; use it
        else:
            os.replace(partial, path)
        return
    raise OSError("could not get mnist.npz into %s; tried %s. Put a Keras-layout mnist.npz there by hand."
                  % (path, "; ".join(failures) or "no URL"))


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _bar_title(url):
    host = urllib.parse.urlsplit(url).netloc
    return "mnist.npz from %s" % host if host else "mnist.npz"


def _download(url, destination):
    """Writes the body of `url` to `destination`, with a progress bar (rate, ETA) on stderr on the first rank."""
    from tqdm import tqdm

    notices.notice("Downloading %s", url)
    with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as response, open(destination, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0)
        done = 0
        with tqdm(total=total or None, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr,
                  desc=_bar_title(url),
                  disable=not notices.progress_enabled()) as bar:
            while True:
                chunk = response.read(1 << 16)
                if not chunk:
                    break
                out.write(chunk)
                done += len(chunk)
                bar.update(len(chunk))
        if total and done != total:
            raise OSError("download of %s ended after %d of %d bytes" % (url, done, total))
