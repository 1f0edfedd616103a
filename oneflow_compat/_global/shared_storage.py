"""CPU tensor storage in POSIX shared memory: `Tensor.share_memory_()`, `Tensor.is_shared()` and the handles that
`oneflow.multiprocessing`'s pickler reductions send to other processes.

OneFlow 0.9 names the two sharing strategies (`python/oneflow/multiprocessing/__init__.py`, v0.9.0):
'file_descriptor' (the Linux default) and 'file_system' (the only one on macOS and Windows); its segments are named
`ofshm_` + random letters and digits (`oneflow/core/ipc/shared_memory.cpp`); here `ofshm_<creating pid>_<random>`.
What each strategy means here:

* 'file_descriptor': the segment's name is unlinked from /dev/shm the moment it is created; the memory lives as long
  as an open descriptor or a mapping of it does, in any process. Another process gets a duplicate of the descriptor
  (`multiprocessing.reduction.DupFd`: handed to a spawned child at start, or through the sender's resource sharer),
  so nothing can be left behind in /dev/shm, even by a process that is killed.
* 'file_system': the segment keeps its name while in use; a count of the holders (one per process that maps it,
  one per handle in flight) sits in 8 bytes after the data, changed under `flock`; the holder that brings it to
  zero unlinks the name. A handle that is pickled but never unpickled keeps the segment (as a message lost in a
  queue would); `oneflow.multiprocessing.unlink_all_shared_memory()` unlinks what this process created.

A storage is released when the last array of it — every tensor and view that reads it — is gone (a finalizer on the
base array: views hold their base), in the process that holds it.
"""
import fcntl
import mmap
import os
import secrets
import string
import struct
import sys
import threading
import weakref

import numpy as np

import _posixshmem

if sys.platform in ("darwin", "win32"):
    _ALL = frozenset({"file_system"})
    _strategy = "file_system"
else:
    _ALL = frozenset({"file_descriptor", "file_system"})
    _strategy = "file_descriptor"

_COUNT = struct.Struct("q")  # the holders' count of a 'file_system' segment, after the data
_ALNUM = string.ascii_letters + string.digits
_STORAGES = {}  # id(mmap) -> _Storage, while its base array lives
_THREADS = threading.Lock()
_CREATED = set()  # names of 'file_system' segments this process created (unlink_all_shared_memory)


def _after_fork_in_child():
    global _THREADS
    _CREATED.clear()  # a forked child created none of its parent's segments
    _THREADS = threading.Lock()  # (another thread of the parent may have held it at the fork)


os.register_at_fork(after_in_child=_after_fork_in_child)


def set_sharing_strategy(new_strategy):
    global _strategy
    if new_strategy not in _ALL:
        raise ValueError("set_sharing_strategy: unknown strategy %r; the strategies of this system are %s"
                         % (new_strategy, sorted(_ALL)))
    _strategy = new_strategy


def get_sharing_strategy():
    return _strategy


def get_all_sharing_strategies():
    return set(_ALL)


def _new_name():
    # OneFlow's prefix, then the creating process (which process left a segment behind, if one ever is), then chance
    return "ofshm_%d_%s" % (os.getpid(), "".join(secrets.choice(_ALNUM) for _ in range(12)))


def _open_new(size):
    while True:
        name = _new_name()
        try:
            fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
        except FileExistsError:
            continue
        try:
            os.ftruncate(fd, size)
        except BaseException:
            os.close(fd)
            _posixshmem.shm_unlink("/" + name)
            raise
        return name, fd


def _unlink(name):
    try:
        _posixshmem.shm_unlink("/" + name)
    except FileNotFoundError:
        pass
    _CREATED.discard(name)


def _add_count(fd, mm, nbytes, delta):
    """Adds `delta` to a 'file_system' segment's holder count under an exclusive lock; returns the new count. flock
    excludes other processes only (its lock belongs to the open file), the thread lock this process's threads (a
    Queue pickles in its feeder thread)."""
    with _THREADS:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            n = _COUNT.unpack_from(mm, nbytes)[0] + delta
            _COUNT.pack_into(mm, nbytes, n)
            return n
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


class _Storage:
    """One mapping of a segment in this process: its descriptor, its map, and (file_system) its name."""

    def __init__(self, fd, nbytes, strategy, name=None):
        self.fd = fd
        self.nbytes = nbytes
        self.strategy = strategy
        self.name = name
        self.pid = os.getpid()  # a forked child inherits the object, not this process's count
        self.mm = mmap.mmap(fd, nbytes + (_COUNT.size if strategy == "file_system" else 0))
        self.counted = strategy == "file_system"  # this mapping is one of the holders
        _hook_exit()

    def array(self, shape, dtype):
        base = np.frombuffer(self.mm, dtype=dtype, count=self.nbytes // np.dtype(dtype).itemsize)
        _STORAGES[id(self.mm)] = self
        weakref.finalize(base, _release, self)
        return base.reshape(shape)


_hooked_pid = None


def _hook_exit():
    """Once per process: at its exit (a multiprocessing child ends with os._exit, without finalizers) the
    'file_system' holders it still is let go, so that the last process out unlinks the name."""
    global _hooked_pid
    if _hooked_pid != os.getpid():
        _hooked_pid = os.getpid()
        from multiprocessing import util

        util.Finalize(None, _let_go_all, exitpriority=0)


def _let_go(storage):
    if storage.counted and os.getpid() == storage.pid:
        storage.counted = False
        if _add_count(storage.fd, storage.mm, storage.nbytes, -1) == 0:
            _unlink(storage.name)


def _let_go_all():
    for storage in list(_STORAGES.values()):
        _let_go(storage)


def _release(storage):
    _STORAGES.pop(id(storage.mm), None)
    if os.getpid() != storage.pid:
        return
    _let_go(storage)
    try:
        storage.mm.close()
    except BufferError:  # an array made outside of `array` still reads it: the map closes with that array
        pass
    os.close(storage.fd)


def new_shared_array(shape, dtype, strategy=None):
    """A zero-filled array of `shape` and `dtype` in a new segment (one byte at least: mmap refuses 0)."""
    strategy = strategy or _strategy
    nbytes = max(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize, 1)
    extra = _COUNT.size if strategy == "file_system" else 0
    name, fd = _open_new(nbytes + extra)
    if strategy == "file_descriptor":
        _posixshmem.shm_unlink("/" + name)  # the memory lives on through the descriptor and the maps
        storage = _Storage(fd, nbytes, strategy)
    else:
        _CREATED.add(name)
        storage = _Storage(fd, nbytes, strategy, name)
        _COUNT.pack_into(storage.mm, nbytes, 1)
    return storage.array(shape, dtype)


def storage_of(array):
    """The shared storage an array reads (through its chain of bases), or None."""
    a = array
    while isinstance(a, np.ndarray):
        a = a.base
    if isinstance(a, memoryview):  # np.frombuffer's base
        a = a.obj
    return _STORAGES.get(id(a)) if isinstance(a, mmap.mmap) else None


def _piece(tensor, what):
    if tensor.is_global:
        raise RuntimeError("%s: a global tensor (placement=%r, sbp=%r) cannot be moved to or shared through shared "
                           "memory between processes; share its local tensor (tensor.to_local()) instead"
                           % (what, tensor.placement, tensor.sbp))
    if tensor.is_lazy:
        raise RuntimeError("%s: a tensor of nn.Graph's build() has no memory to share" % what)
    return tensor._value.pieces[0]


def is_shared(self):
    """`Tensor.is_shared()`: whether this local tensor's memory is in shared memory."""
    piece = _piece(self, "Tensor.is_shared()")
    return isinstance(piece, np.ndarray) and storage_of(piece) is not None


def share_memory_(self):
    """`Tensor.share_memory_()`: moves this local CPU tensor's memory into shared memory (in place: the tensors
    sharing its storage, a Parameter and its data included, see the move; a view taken before keeps the old
    memory). A no-op when it is there already, and for a tensor on a GPU, as in PyTorch. Returns self."""
    piece = _piece(self, "Tensor.share_memory_()")
    if not isinstance(piece, np.ndarray) or storage_of(piece) is not None:
        return self
    shared = new_shared_array(piece.shape, piece.dtype)
    shared[...] = piece
    self._value.pieces[0] = shared
    return self


# --- the handles that cross processes --------------------------------------------------------------------------
def _base_array(array):
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def handle_of(array):
    """A picklable handle of the shared array `array` (a view of its segment): (strategy, reference, nbytes,
    byte offset, shape, strides, numpy dtype). The reference is a `DupFd` ('file_descriptor') or the segment's name
    ('file_system': the handle counts as one holder until it is opened by `open_handle`)."""
    from multiprocessing import context
    from multiprocessing.reduction import DupFd

    storage = storage_of(array)
    base = _base_array(array)
    offset = array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    view = (offset, tuple(array.shape), tuple(array.strides), array.dtype)
    if storage.strategy == "file_system":
        _add_count(storage.fd, storage.mm, storage.nbytes, +1)
        return ("file_system", storage.name, storage.nbytes) + view
    popen = context.get_spawning_popen()
    if popen is not None:
        # a spawned child gets the descriptor when it starts, after this returns: the storage must live till then
        popen.__dict__.setdefault("_oneflow_shared_arrays", []).append(base)
    return ("file_descriptor", DupFd(storage.fd), storage.nbytes) + view


def open_handle(handle):
    """The array a handle describes, mapped in this process."""
    strategy, ref, nbytes, offset, shape, strides, dtype = handle
    if strategy == "file_descriptor":
        storage = _Storage(ref.detach(), nbytes, strategy)
    else:
        fd = _posixshmem.shm_open("/" + ref, os.O_RDWR, mode=0o600)
        storage = _Storage(fd, nbytes, strategy, ref)  # adopts the count of the handle
    base = storage.array((nbytes,), np.uint8)
    return np.ndarray(shape, dtype=dtype, buffer=base, offset=offset, strides=strides)


def unlink_all_shared_memory():
    """Unlinks every 'file_system' segment this process created and still names (maps stay valid)."""
    for name in list(_CREATED):
        _unlink(name)
