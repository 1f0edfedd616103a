"""`oneflow.multiprocessing.shared_memory.SharedMemory` (OneFlow 0.9): a named POSIX shared-memory block
(`name`, `create`, `size`; `buf`, `close()`, `unlink()`), created with an `ofshm_` name as OneFlow's are. Pickled,
it reopens the block by name. Unlike Python's class, no resource tracker follows it: whoever creates it unlinks it."""
import mmap
import os

import _posixshmem

from oneflow_compat._global import shared_storage

__all__ = ["SharedMemory"]


class SharedMemory:
    def __init__(self, name=None, create=False, size=0):
        if not size >= 0:
            raise ValueError("'size' must be a non-negative integer")
        if create:
            if size == 0:
                raise ValueError("'size' must be a positive number different from zero")
            if name is None:
                name, fd = shared_storage._open_new(size)
            else:
                fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
                os.ftruncate(fd, size)
        else:
            if name is None:
                raise ValueError("'name' can only be None if create=True")
            fd = _posixshmem.shm_open("/" + name, os.O_RDWR, mode=0o600)
            size = os.fstat(fd).st_size
        try:
            self._mmap = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._name, self._size = name, size
        self._buf = memoryview(self._mmap)

    def __del__(self):
        try:
            self.close()
        except (OSError, BufferError):
            pass

    def __reduce__(self):
        return (self.__class__, (self.name, False, self.size))

    def __repr__(self):
        return "%s(%r, size=%d)" % (type(self).__name__, self.name, self.size)

    @property
    def buf(self):
        """A memoryview of the block's bytes."""
        return self._buf

    @property
    def name(self):
        return self._name

    @property
    def size(self):
        return self._size

    def close(self):
        """Ends this object's access to the block (the block stays)."""
        if getattr(self, "_buf", None) is not None:
            self._buf.release()
            self._buf = None
        if getattr(self, "_mmap", None) is not None:
            self._mmap.close()
            self._mmap = None

    def unlink(self):
        """Removes the block's name; the memory goes once every process has closed it."""
        try:
            _posixshmem.shm_unlink("/" + self._name)
        except FileNotFoundError:
            pass
