"""OneFlow's on-disk checkpoint format (model IO v2, legacy-api.md §2.9), as pure file functions.

Layout written by `flow.checkpoint.save`::

    <path>/<variable name>/out     raw C-order little-endian bytes of the variable, no header
    <path>/<variable name>/meta    protobuf text format of VariableMetaInfo (shape + DataType enum name)
    <path>/snapshot_done           empty, written last

The legacy model IO (`enable_legacy_model_io`) writes the same tree without `meta` files; such variables get their
shape and dtype from the variable they are loaded into (`FileBackendVariableBlob.bind`).

Saving is atomic: everything goes into a hidden sibling folder that is renamed onto `path` only once complete,
so a crash mid-save never leaves a loadable-looking folder at `path`. Replacing a checkpoint (`replace_tensors`,
for the project's own examples and `flow.save` of state dicts) writes the new one completely first and then
exchanges the two folders, so the old one survives a crash at any point. Hidden folders of saves that were
killed are removed by the next save to the same path.

Reading trusts nothing: a folder without `snapshot_done`, a variable with `meta` but no `out`, an `out` that is
not a regular file (a directory, a FIFO that would block forever) or that a symlink takes outside the folder,
a file whose size disagrees with its meta, and a `meta` that is not text are errors naming the path.
"""
import contextlib
import ctypes
import errno
import fcntl
import os
import secrets
import shutil
import stat

import numpy as np
from google.protobuf import text_format

from oneflow_compat.core import variable_meta_pb2
from oneflow_compat.ir import dtypes

DATA_FILENAME = "out"
META_FILENAME = "meta"
SNAPSHOT_DONE_FILENAME = "snapshot_done"

# Hidden temporary folders of a save: `.<name>.partial-<pid>-<hex>` (being written, or complete and about to be
# swapped in) and `.<name>.old-<pid>-<hex>` (the replaced checkpoint, while the non-atomic fallback swap runs).
# Never listed as variables; those of dead processes are removed by the next save to `<name>`.
_PARTIAL_MARK = ".partial-"
_OLD_MARK = ".old-"


def _is_partial_save_dir(entry_name):
    return entry_name.startswith(".") and (_PARTIAL_MARK in entry_name or _OLD_MARK in entry_name)


def _temp_owner_pid(entry_name, base, mark):
    """The pid in a temp folder name of a save to `base`, or None if `entry_name` is not one."""
    prefix = "." + base + mark
    if not entry_name.startswith(prefix):
        return None
    pid = entry_name[len(prefix):].split("-", 1)[0]
    return int(pid) if pid.isdigit() else 0  # names of older versions (no pid) count as dead


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except (OverflowError, ValueError):
        return False
    return True


def _recover_interrupted_swap(target):
    """Put back the old checkpoint if a fallback swap was killed between its two renames."""
    if os.path.lexists(target):
        return
    parent, base = os.path.split(target)
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        return
    for entry in entries:
        if _temp_owner_pid(entry, base, _OLD_MARK) is not None:
            try:
                os.rename(os.path.join(parent, entry), target)
            except OSError:  # another process recovered it first
                pass
            return


def clean_interrupted_saves(target):
    """Remove the temp folders that killed saves to `target` left beside it (live writers' ones are kept)."""
    parent, base = os.path.split(os.path.abspath(target))
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        for mark in (_PARTIAL_MARK, _OLD_MARK):
            pid = _temp_owner_pid(entry, base, mark)
            if pid is not None and (pid == 0 or not _process_alive(pid)):
                shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------------
# meta files
# ---------------------------------------------------------------------------------------------------------------

def format_meta(shape, dtype):
    """The meta file's text: VariableMetaInfo{shape, data_type} in protobuf's text format (OneFlow wrote it with
    `text_format.MessageToString`)."""
    meta = variable_meta_pb2.VariableMetaInfo(data_type=dtypes.as_dtype(dtype).enum_name)
    meta.shape.SetInParent()  # a scalar's shape is present and empty ("shape {\n}")
    meta.shape.dim.extend(int(d) for d in shape)
    return text_format.MessageToString(meta)


def parse_meta(text, file_path="<meta>"):
    """(shape tuple, DType) from a meta file's text: protobuf's text format (any spacing, comments, numeric enums)."""
    def fail(what):
        raise ValueError("checkpoint meta file %s: %s" % (file_path, what))

    meta = variable_meta_pb2.VariableMetaInfo()
    try:
        text_format.Parse(text, meta)
    except text_format.ParseError as e:
        fail(str(e))
    missing = [name for name in ("shape", "data_type") if not meta.HasField(name)]
    if missing:
        fail("needs both shape and data_type (%s missing)" % " and ".join(missing))
    enum_name = variable_meta_pb2.DATA_TYPES[meta.data_type]
    try:
        dtype = dtypes.from_enum_name(enum_name)
    except KeyError:
        fail("data_type %s is not one this version reads" % enum_name)
    if dtype.np is None or dtype.np == np.dtype(object):
        fail("data_type %s cannot be stored as raw bytes" % dtype.enum_name)
    return tuple(int(d) for d in meta.shape.dim), dtype


# ---------------------------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------------------------

def _element_count(shape):
    count = 1
    for d in shape:
        count *= int(d)
    return count


class FileBackendVariableBlob:
    """One saved variable folder (`<dir>/out` [+ `<dir>/meta`]); reads the bytes only on `.numpy()`.

    A folder without `meta` (legacy model IO) has unknown shape/dtype (`None`) until `bind(shape, dtype)`
    returns a bound copy; `numpy(shape, dtype)` does the same in one step.
    """

    def __init__(self, var_dir, dtype=None, shape=None, name=None, root=None):
        self.var_dir = os.fspath(var_dir)
        self.name = name if name is not None else os.path.basename(os.path.normpath(self.var_dir))
        root = self.var_dir if root is None else os.fspath(root)
        self._root = root
        if not os.path.lexists(self.file_path):
            raise FileNotFoundError("checkpoint variable '%s': data file %s not found" % (self.name, self.file_path))
        _check_regular_inside(self.file_path, root)
        meta_path = os.path.join(self.var_dir, META_FILENAME)
        self.has_meta_info = os.path.lexists(meta_path)
        if self.has_meta_info:
            if dtype is not None or shape is not None:
                raise ValueError("checkpoint variable '%s' has a meta file: shape and dtype come from %s"
                                 % (self.name, meta_path))
            _check_regular_inside(meta_path, root)
            with open(meta_path, "rb") as f:
                raw = f.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError("checkpoint meta file %s is not text (%s)" % (meta_path, e)) from None
            self._shape, self._dtype = parse_meta(text, meta_path)
        elif (shape is None) != (dtype is None):
            raise ValueError("checkpoint variable '%s': give both or neither of shape and dtype" % self.name)
        else:
            self._shape = None if shape is None else tuple(int(d) for d in shape)
            self._dtype = dtypes.as_dtype(dtype)
        if self._shape is not None:
            self._check_file_size()

    @property
    def file_path(self):
        return os.path.join(self.var_dir, DATA_FILENAME)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def is_bound(self):
        return self._shape is not None

    def _check_file_size(self):
        expected = _element_count(self._shape) * self._dtype.np.itemsize
        actual = os.path.getsize(self.file_path)
        if actual != expected:
            raise ValueError(
                "checkpoint variable '%s': file %s has %d bytes, expected %d (shape %s, dtype %s): "
                "unexpected model snapshot size" % (self.name, self.file_path, actual, expected,
                                                    self._shape, self._dtype.name))

    def bind(self, shape, dtype):
        """This blob with the given shape/dtype (validated against the file size); blobs with meta must agree."""
        dtype = dtypes.as_dtype(dtype)
        shape = tuple(int(d) for d in shape)
        if self.is_bound:
            if shape != self._shape or dtype.np != self._dtype.np:
                raise ValueError("checkpoint variable '%s' is %s %s, not %s %s"
                                 % (self.name, self._shape, self._dtype.name, shape, dtype.name))
            return self
        return FileBackendVariableBlob(self.var_dir, dtype=dtype, shape=shape, name=self.name, root=self._root)

    def numpy(self, shape=None, dtype=None):
        blob = self if shape is None and dtype is None else self.bind(shape, dtype)
        if not blob.is_bound:
            raise RuntimeError("checkpoint variable '%s' (%s) has no meta file: its shape and dtype are unknown "
                               "until it is loaded into a variable" % (self.name, self.var_dir))
        stored = blob._dtype.np.newbyteorder("<")
        array = np.fromfile(blob.file_path, dtype=stored).reshape(blob._shape)
        return array.astype(blob._dtype.np, copy=False)

    def __repr__(self):
        return "FileBackendVariableBlob(%r, shape=%s, dtype=%s)" % (
            self.var_dir, self._shape, None if self._dtype is None else self._dtype.name)


def _check_regular_inside(file_path, root):
    """Refuse a checkpoint file that is not a regular file, or that a symlink takes outside `root`."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(file_path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise ValueError("checkpoint file %s is a link to %s, outside the checkpoint folder %s"
                         % (file_path, real, root))
    try:
        mode = os.stat(file_path).st_mode
    except OSError as e:
        raise FileNotFoundError("checkpoint file %s cannot be read: %s" % (file_path, e.strerror)) from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise ValueError("checkpoint file %s is %s, not a regular file" % (file_path, kind))


def load_checkpoint_dir(path):
    """`flow.checkpoint.get(path)`: a blob if `path/out` exists, else {sub-folder: blob} of sub-folders with `out`
    (or `meta`); a folder of variables must hold `snapshot_done`, written last by every save."""
    path = os.fspath(path)
    _recover_interrupted_swap(os.path.abspath(path))
    if not os.path.isdir(path):
        raise AssertionError("Directory {} doesn't exist!".format(path))
    if os.path.lexists(os.path.join(path, DATA_FILENAME)):
        return FileBackendVariableBlob(path)
    if not os.path.lexists(os.path.join(path, SNAPSHOT_DONE_FILENAME)):
        raise ValueError("checkpoint folder %s has no %s: it is not a complete checkpoint (an interrupted or "
                         "unfinished save?)" % (path, SNAPSHOT_DONE_FILENAME))
    blobs = {}
    for entry in sorted(os.listdir(path)):
        if _is_partial_save_dir(entry):
            continue
        var_dir = os.path.join(path, entry)
        if not os.path.isdir(var_dir):
            continue
        if os.path.islink(var_dir):
            real, real_root = os.path.realpath(var_dir), os.path.realpath(path)
            if not real.startswith(real_root.rstrip(os.sep) + os.sep):
                raise ValueError("checkpoint variable folder %s is a link to %s, outside the checkpoint folder %s"
                                 % (var_dir, real, path))
        has_data = os.path.lexists(os.path.join(var_dir, DATA_FILENAME))
        if has_data or os.path.lexists(os.path.join(var_dir, META_FILENAME)):
            blobs[entry] = FileBackendVariableBlob(var_dir, name=entry, root=path)
    return blobs


# ---------------------------------------------------------------------------------------------------------------
# assignment checks
# ---------------------------------------------------------------------------------------------------------------

def check_assignable(var_name, var_shape, var_np_dtype, value):
    """The ndarray to copy into variable `var_name`, after checking shape and dtype match exactly.

    `value`: ndarray, FileBackendVariableBlob (legacy blobs without meta take the variable's shape/dtype) or
    anything with `.numpy()`. Nothing is modified: callers validate every value first, then copy.
    """
    var_shape = tuple(int(d) for d in var_shape)
    var_np_dtype = np.dtype(var_np_dtype)
    if isinstance(value, FileBackendVariableBlob):
        if value.is_bound:
            _check_shape_dtype(var_name, var_shape, var_np_dtype, value.shape, value.dtype.np)
            return value.numpy()
        try:
            return value.numpy(var_shape, dtypes.from_numpy(var_np_dtype))
        except ValueError as e:
            raise ValueError("variable '%s': %s" % (var_name, e)) from None
    if not isinstance(value, np.ndarray):
        if not callable(getattr(value, "numpy", None)):
            raise TypeError("variable '%s': cannot assign a value of type %s (expected numpy.ndarray, a checkpoint "
                            "entry or a variable blob)" % (var_name, type(value).__name__))
        value = np.asarray(value.numpy())
    _check_shape_dtype(var_name, var_shape, var_np_dtype, value.shape, value.dtype)
    return value


def _check_shape_dtype(var_name, var_shape, var_np_dtype, value_shape, value_np_dtype):
    if tuple(value_shape) != var_shape:
        raise ValueError("variable '%s': shape %s vs value shape %s" % (var_name, var_shape, tuple(value_shape)))
    # Byte order is a storage detail, not a different type.
    if np.dtype(value_np_dtype).newbyteorder("=") != var_np_dtype.newbyteorder("="):
        raise ValueError("variable '%s': dtype %s vs value dtype %s"
                         % (var_name, var_np_dtype.name, np.dtype(value_np_dtype).name))


# ---------------------------------------------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------------------------------------------

_REFUSED_EXISTING = ("{} is a file or non-empty directory! Note that flow.save is different from torch.save. It saves "
                     "each weight as a separated file so that a directory instead of a file should be given.")


def _refuse_existing(path):
    if os.path.isfile(path) or (os.path.isdir(path) and len(os.listdir(path)) != 0):
        raise AssertionError(_REFUSED_EXISTING.format(path))


def is_refused_existing(error):
    """Whether `error` is the refusal of a save into an existing file or non-empty folder (OneFlow's message)."""
    head, tail = _REFUSED_EXISTING.split("{}")
    return isinstance(error, AssertionError) and str(error).endswith(tail)


def _check_variable_name(name):
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or os.sep in name or "\0" in name:
        raise ValueError("cannot save variable %r: a variable name must be a non-empty folder name without '/'"
                         % (name,))


def _as_host_array(name, value):
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dtypes.DType):
        # (array, DType): a dtype numpy cannot name, stored as its storage dtype (bfloat16: float32 bytes, meta
        # kBFloat16, as OneFlow 0.9's flow.save writes it)
        array, dtype = np.asarray(value[0]), value[1]
        if dtype.np is None or array.dtype.newbyteorder("=") != dtype.np:
            raise TypeError("cannot save variable '%s': a %s array is not %s storage" % (name, array.dtype, dtype))
        return array, dtype
    if not isinstance(value, np.ndarray):
        if not callable(getattr(value, "numpy", None)):
            raise TypeError("cannot save variable '%s': value of type %s has no .numpy()"
                            % (name, type(value).__name__))
        value = np.asarray(value.numpy())
    try:
        dtype = dtypes.from_numpy(value.dtype.newbyteorder("="))
    except TypeError:
        raise TypeError("cannot save variable '%s': dtype %s has no OneFlow DataType" % (name, value.dtype)) from None
    return value, dtype


def _write_file(file_path, payload):
    with open(file_path, "wb") as f:
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(dir_path):
    try:
        fd = os.open(dir_path, os.O_RDONLY)
    except OSError:  # platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _make_partial_dir(parent, base):
    while True:
        candidate = os.path.join(parent, ".%s%s%d-%s" % (base, _PARTIAL_MARK, os.getpid(), secrets.token_hex(6)))
        try:
            os.mkdir(candidate)
            return candidate
        except FileExistsError:
            continue


def _exchange(a, b):
    """Swap two paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _write_variable(root, name, array, dtype, write_meta):
    var_dir = os.path.join(root, name)
    os.mkdir(var_dir)
    # Raw bytes in little-endian C order; on little-endian hosts this is a view, not a copy.
    contiguous = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    _write_file(os.path.join(var_dir, DATA_FILENAME), memoryview(contiguous.reshape(-1)).cast("B"))
    if write_meta:
        _write_file(os.path.join(var_dir, META_FILENAME), format_meta(array.shape, dtype).encode())
    _fsync_dir(var_dir)


def _prepare(tensors):
    prepared = []
    for name, value in tensors.items():
        _check_variable_name(name)
        prepared.append((name,) + _as_host_array(name, value))
    return prepared


def _write_complete(parent, base, prepared, write_legacy, extra_files):
    """A hidden sibling folder holding the whole checkpoint, `snapshot_done` included, flushed to disk."""
    os.makedirs(parent, exist_ok=True)
    partial = _make_partial_dir(parent, base)
    try:
        for name, array, dtype in prepared:
            _write_variable(partial, name, array, dtype, write_meta=not write_legacy)
        for file_name, payload in (extra_files or {}).items():
            _write_file(os.path.join(partial, file_name), payload)
        _write_file(os.path.join(partial, SNAPSHOT_DONE_FILENAME), b"")
        _fsync_dir(partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return partial


def save_tensors(path, tensors, write_legacy=False, extra_files=None):
    """Write `tensors` ({variable name: ndarray}) as a checkpoint folder at `path`, atomically.

    `path` must not exist or be an empty directory. `write_legacy=True` omits the `meta` files (legacy model IO).
    `extra_files` ({file name: bytes}) are written beside the variable folders, inside the same atomic save.
    On any error the temporary folder is removed and `path` is left as it was.
    """
    path = os.fspath(path)
    _refuse_existing(path)
    prepared = _prepare(tensors)
    target = os.path.abspath(path)
    parent, base = os.path.split(target)
    clean_interrupted_saves(target)
    partial = _write_complete(parent, base, prepared, write_legacy, extra_files)
    try:
        # rename() replaces an absent or empty directory in one step; a non-empty one (created meanwhile) fails.
        os.rename(partial, target)
        _fsync_dir(parent)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def is_checkpoint_dir(path):
    """Whether `path` is a folder a save wrote (it holds `snapshot_done`)."""
    return os.path.isdir(path) and os.path.lexists(os.path.join(path, SNAPSHOT_DONE_FILENAME))


def replace_tensors(path, tensors, write_legacy=False, extra_files=None):
    """`save_tensors`, except that an earlier checkpoint at `path` is replaced: the new one is written completely
    beside it and then swapped in, so a crash at any point leaves either the old or the new checkpoint at `path`.
    A folder that is not a checkpoint (no `snapshot_done`) is refused as `save_tensors` refuses it."""
    path = os.fspath(path)
    target = os.path.abspath(path)
    _recover_interrupted_swap(target)
    if not is_checkpoint_dir(target):
        return save_tensors(path, tensors, write_legacy, extra_files)
    prepared = _prepare(tensors)
    parent, base = os.path.split(target)
    clean_interrupted_saves(target)
    fresh = _write_complete(parent, base, prepared, write_legacy, extra_files)
    try:
        if not _exchange(fresh, target):
            # two renames: a crash between them leaves the old one aside, put back by the next load or save
            old = os.path.join(parent, ".%s%s%d-%s" % (base, _OLD_MARK, os.getpid(), secrets.token_hex(6)))
            os.rename(target, old)
            os.rename(fresh, target)
            fresh = old
        _fsync_dir(parent)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)  # after the swap it holds the replaced checkpoint


# ---------------------------------------------------------------------------------------------------------------
# one writer under MPI
# ---------------------------------------------------------------------------------------------------------------

# How long the other ranks wait for rank 0 to finish writing a checkpoint: writing is not communication, so the
# comm timeout (meant to catch a lost peer) must not cut a slow save short.
SAVE_WAIT_ENV = "ONEFLOW_COMPAT_SAVE_TIMEOUT"
_DEFAULT_SAVE_WAIT_S = 3600.0


def _save_wait_s(comm_timeout):
    try:
        configured = float(os.environ.get(SAVE_WAIT_ENV, _DEFAULT_SAVE_WAIT_S))
    except ValueError:
        configured = _DEFAULT_SAVE_WAIT_S
    if not configured > 0:  # nan or negative: never disables the wait limit
        configured = _DEFAULT_SAVE_WAIT_S
    return max(configured, comm_timeout or 0.0)


@contextlib.contextmanager
def folder_lock(path):
    """Holds an exclusive lock on the folder that will hold `path` (created if missing): processes saving beside
    one another (every rank of a job writing its own save, maybe to one path) take turns, so that one never removes
    or swaps away what another is writing. A lock on the folder itself (flock on its descriptor) leaves no file."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    fd = os.open(parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


def write_on_rank0(comm, path, write, writer=0):
    """Run `write()` on rank `writer` (0) only; every rank then returns, or raises the error the writer met (its own
    exception on the writer, a RuntimeError naming it elsewhere). The agreement waits past the comm timeout for a
    slow save."""
    error = None
    if comm.rank == writer:
        try:
            write()
        except BaseException as e:  # every rank must learn of the failure, not only the writer
            error = e
    if comm.size > 1:
        timeout = getattr(comm, "timeout", None)
        if timeout is not None:
            comm.set_timeout(_save_wait_s(timeout))
        try:
            message = comm.bcast_object(None if error is None else "%s: %s" % (type(error).__name__, error),
                                        root=writer)
        finally:
            if timeout is not None:
                comm.set_timeout(timeout)
        if message is not None and error is None:
            raise RuntimeError("saving checkpoint %s failed on rank %d: %s" % (path, writer, message))
    if error is not None:
        raise error
