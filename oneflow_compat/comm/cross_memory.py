"""Reading another process's memory in one copy: Linux's cross-memory attach (`process_vm_readv(2)`, "CMA"), what
MPICH itself uses between ranks of one host for large messages (its `MPIR_CVAR_CH4_CMA_ENABLE`).

Why: where one rank sends to several (a 1 -> k split), the shared-memory board's push (`shm.Board.remote`) makes
the sender copy every receiver's piece one after the other while they wait; with a read, each receiver copies its
own piece out of the sender's memory, all at once, and the sender copies nothing. Still one copy of each byte, and
the source needs no shared memory (any numpy array of the sender's).

The kernel allows it between processes of one user that may trace each other (`ptrace_may_access`: Yama's
`ptrace_scope`, a container's seccomp profile, other users, or a kernel without it say no): `MPIComm` tries it once
per board between every pair of members (`probe`) and reads only where every member could; elsewhere nothing
changes. `ONEFLOW_COMPAT_SHM_READ=0` turns it off (every member alike: they agree on it in the probe).

Only whole contiguous runs are read (one `iovec` each): measured on 2 ranks of the CI machine, a strided piece read
as one iovec per row (4 KB runs) took 3x the time of the same bytes pushed by numpy, a contiguous 4 MB read the same
time as the push."""
import ctypes
import ctypes.util
import os
import sys

READ_ENV = "ONEFLOW_COMPAT_SHM_READ"  # "0": no cross-memory reads (every transfer pushed or sent as before)


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_READV = None  # the bound libc function once looked up; False when this platform has none


def _readv():
    global _READV
    if _READV is None:
        _READV = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
                fn = libc.process_vm_readv
            except (OSError, AttributeError):
                fn = None
            if fn is not None:
                fn.restype = ctypes.c_ssize_t
                fn.argtypes = [ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.POINTER(_Iovec),
                               ctypes.c_ulong, ctypes.c_ulong]
                _READV = fn
    return _READV


def wanted():
    """Whether this process would read others' memory (the platform has the call and the environment allows it)."""
    return os.environ.get(READ_ENV, "1").strip() not in ("0", "false", "no", "off") and bool(_readv())


def address(array):
    """The address of a C-contiguous numpy array's first byte (its public `__array_interface__`)."""
    return array.__array_interface__["data"][0]


def read(pid, remote_address, into):
    """Copies `into.nbytes` bytes of process `pid` from `remote_address` into `into` (a C-contiguous writeable numpy
    array); raises OSError (errno of the call) when the kernel refuses or the range is not mapped there. A short read
    (the kernel stops at a page it cannot pin, or a signal) goes on from where it stopped."""
    fn = _readv()
    if not fn:
        raise OSError(38, "process_vm_readv is not available on this platform")
    nbytes = into.nbytes
    base = address(into)
    done = 0
    while done < nbytes:
        here = _Iovec(base + done, nbytes - done)
        there = _Iovec(remote_address + done, nbytes - done)
        got = fn(pid, ctypes.byref(here), 1, ctypes.byref(there), 1, 0)
        if got < 0:
            err = ctypes.get_errno()
            raise OSError(err, "process_vm_readv from process %d: %s" % (pid, os.strerror(err)))
        if got == 0:
            raise OSError(14, "process_vm_readv from process %d read nothing at %#x" % (pid, remote_address + done))
        done += got
    return into
