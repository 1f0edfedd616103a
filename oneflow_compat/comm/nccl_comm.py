"""NCCL behind the comm interface (`process_comm.ProcessComm`): the collectives of the boxing executors on device
arrays, without a trip through the host.

`NcclComm(host, xp)` moves CuPy arrays with NCCL and keeps the control calls (`barrier`, `bcast_object`,
`allgather_object`, `check_same`, `abort`) on `host`, the job's process comm (MPI), over which it also bootstraps:

* a communicator per rank set (the members of a collective, sorted world ranks), made on its first use: the first
  member draws the unique id (`nccl.get_unique_id()`: bytes in CuPy 14, a tuple of ints before), the members get
  it by a host broadcast over those ranks alone, and each joins as its index among them;
* every call is issued on CuPy's current stream and returns without waiting: the arrays it returns are ready in
  stream order;
* what has no NCCL primitive is a group of them (`groupStart`/`groupEnd`, one launch): reduce-scatter and
  all-gather with uneven (balanced) splits as a reduce / a broadcast per member, all-to-all, gather and the
  point-to-point batch (`exchange`) as sends and receives; an axis other than 0 is moved to the front first
  (one copy) so that every member's rows are contiguous;
* booleans sum as logical or (NCCL's max over their bytes);
* a watchdog: every call records an event after itself; a thread checks them, and a call not complete within the
  comm timeout (`ONEFLOW_COMPAT_COMM_TIMEOUT`, `set_timeout`) aborts its communicator (`ncclCommAbort`, so the
  stream is released), says which collective over which ranks, and ends the job through the host comm
  (`on_timeout`, default `host.abort(1)`): a failure on one rank ends the job in seconds instead of hanging.

NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA
device 3c", NCCL_ERROR_INVALID_USAGE, from ncclCommInitRank on every member). So each rank set is routed once, on its
first collective, where all its members are: they exchange who they are over the host comm (`Binding.member`: host,
process, the PCI bus id of the current GPU, as NCCL itself identifies a GPU), and NCCL is used only when every member
is a distinct process on a distinct GPU. Otherwise — ranks that share a GPU (2 MPI ranks on a one-GPU machine),
ranks that are threads of one process (simulated ranks) — the set's collectives go through the host comm with the
pieces staged down and back up: the same collectives, the same numbers, as the boxing's host path. N logical devices
on one GPU are one process's devices (runtime/boxing.py combines them by array work, no comm call).

`nccl` is the NCCL binding, CuPy's `cupy.cuda.nccl` by default; `Binding` adapts it (arrays to pointers, counts
and NCCL datatypes, the current stream). Tests give a fake binding with the same methods (tests/test_nccl_comm.py).
"""
import os
import socket
import threading
import time
import zlib

import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.backend.balanced_split import balanced_sizes
from .environment import comm_timeout_from_env
from .process_comm import CollectiveTimeout, CommError, ProcessComm, check_ranks


class Binding:
    """CuPy's NCCL calls on arrays: what NcclComm issues. Each method takes arrays (C-contiguous, of one dtype),
    issues on `xp`'s current stream and returns at once."""

    def __init__(self, xp, nccl=None):
        if nccl is None:
            from cupy.cuda import nccl  # noqa: F811 - the real binding
        self.xp, self.nccl = xp, nccl
        self._types = {}
        for dtype, name in ((np.float32, "NCCL_FLOAT32"), (np.float64, "NCCL_FLOAT64"), (np.float16, "NCCL_FLOAT16"),
                            (np.int32, "NCCL_INT32"), (np.int64, "NCCL_INT64"), (np.uint8, "NCCL_UINT8"),
                            (np.int8, "NCCL_INT8"), (np.uint32, "NCCL_UINT32"), (np.uint64, "NCCL_UINT64")):
            if hasattr(nccl, name):
                self._types[np.dtype(dtype)] = getattr(nccl, name)
        self.SUM, self.MAX = nccl.NCCL_SUM, nccl.NCCL_MAX

    def _type(self, a):
        code = self._types.get(np.dtype(a.dtype))
        if code is None:
            raise TypeError("NCCL moves no %s arrays" % a.dtype)
        return code

    def _stream(self):
        return self.xp.cuda.get_current_stream().ptr

    def unique_id(self):
        return self.nccl.get_unique_id()

    def member(self):
        """Who would join a communicator from this thread: (host, process, GPU) — the GPU by its PCI bus id, as NCCL
        compares its members' GPUs (two processes that see one GPU under different numbers are still refused)."""
        cuda = self.xp.cuda
        gpu = cuda.Device(cuda.runtime.getDevice()).pci_bus_id
        return socket.gethostname(), os.getpid(), gpu

    def communicator(self, members, uid, index):
        return self.nccl.NcclCommunicator(members, uid, index)

    def group_start(self):
        self.nccl.groupStart()

    def group_end(self):
        self.nccl.groupEnd()

    def all_reduce(self, comm, send, recv, op):
        comm.allReduce(send.data.ptr, recv.data.ptr, send.size, self._type(send), op, self._stream())

    def reduce(self, comm, send, recv, op, root):
        comm.reduce(send.data.ptr, recv.data.ptr, send.size, self._type(send), op, root, self._stream())

    def broadcast(self, comm, send, recv, root):
        comm.broadcast(send.data.ptr, recv.data.ptr, recv.size, self._type(recv), root, self._stream())

    def reduce_scatter(self, comm, send, recv, op):
        comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size, self._type(recv), op, self._stream())

    def all_gather(self, comm, send, recv):
        comm.allGather(send.data.ptr, recv.data.ptr, send.size, self._type(send), self._stream())

    def send(self, comm, buf, peer):
        comm.send(buf.data.ptr, buf.size, self._type(buf), peer, self._stream())

    def recv(self, comm, buf, peer):
        comm.recv(buf.data.ptr, buf.size, self._type(buf), peer, self._stream())

    def abort(self, comm):
        comm.abort()

    def event(self):
        """An event recorded on the current stream now (the watchdog asks it whether the work before is done)."""
        event = self.xp.cuda.Event(block=False, disable_timing=True)
        event.record()
        return event


def _stable_hash(text):
    """A 63-bit number of a string that is the same in every process (Python's hash() is salted per process)."""
    data = str(text).encode()
    return (zlib.crc32(data) << 31) ^ zlib.adler32(data)


def nccl_refusal(members, ranks):
    """Why NCCL cannot join these members into one communicator (None where it can): `members` is every member's
    (host, process, GPU), in the order of the world `ranks`. NCCL refuses two members on one GPU of one host,
    whatever their processes; members that are threads of one process (simulated ranks) share their process's
    comm and its memory, so they never take NCCL (on one GPU NCCL would refuse them too)."""
    seen_gpu, seen_process = {}, {}
    for rank, (host, process, gpu) in zip(ranks, members):
        if (host, process) in seen_process:
            return "ranks %d and %d are threads of one process" % (seen_process[(host, process)], rank)
        if (host, gpu) in seen_gpu:
            return "ranks %d and %d are on one GPU" % (seen_gpu[(host, gpu)], rank)
        seen_gpu[(host, gpu)] = seen_process[(host, process)] = rank
    return None


def uid_to_array(uid):
    """The unique id as uint8 bytes for a host broadcast, and how to rebuild it (bytes, or a tuple of ints)."""
    if isinstance(uid, (bytes, bytearray)):
        return np.frombuffer(bytes(uid), dtype=np.uint8).copy(), "bytes"
    return np.asarray(uid, dtype=np.int64), "tuple"


def uid_from_array(array, kind):
    return bytes(np.asarray(array, dtype=np.uint8).tobytes()) if kind == "bytes" else tuple(int(v) for v in array)


class Watchdog:
    """A thread that aborts communicators whose calls are not done within the timeout (see the module docstring).

    `watch(key, what, event)`; `poll()` is one check (the thread calls it every `interval` seconds; tests call it
    directly). On a timeout: `abort(key)`, then `on_timeout(message)`."""

    def __init__(self, timeout, abort, on_timeout, interval=0.05, clock=time.monotonic, start=True):
        self.timeout, self._abort, self._on_timeout = timeout, abort, on_timeout
        self._clock, self.interval = clock, interval
        self._pending = []  # (deadline, key, what, event)
        self._lock = threading.Lock()
        self.failed = None
        self._thread = None
        self._stop = threading.Event()
        if start:
            self._thread = threading.Thread(target=self._loop, name="oneflow_compat-nccl-watchdog", daemon=True)
            self._thread.start()

    def watch(self, key, what, event):
        with self._lock:
            self._pending.append((self._clock() + self.timeout, key, what, event))

    def poll(self):
        now = self._clock()
        with self._lock:
            pending, self._pending = self._pending, []
        keep = []
        for item in pending:
            deadline, key, what, event = item
            if event.done:  # CuPy's Event: `done` is a property (cudaEventQuery); there is no query() method
                continue
            if now > deadline and self.failed is None:
                self.failed = "%s did not complete within %g s: its NCCL communicator was aborted" % (
                    what, self.timeout)
                self._abort(key)
                self._on_timeout(self.failed)
                continue
            keep.append(item)
        with self._lock:
            self._pending = keep + self._pending

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.poll()

    def stop(self):
        self._stop.set()


class NcclComm(ProcessComm):
    """The comm interface on device arrays through NCCL; see the module docstring."""

    def __init__(self, host, xp, nccl=None, timeout=None, on_timeout=None, watchdog=True):
        self.host, self.xp = host, xp
        if nccl is None:
            nccl = getattr(xp, "nccl_binding", None)  # a stand-in device module's own (tests/strict_device.py)
        self.nccl = nccl if isinstance(nccl, Binding) or (nccl is not None and hasattr(nccl, "all_reduce")) \
            else Binding(xp, nccl)
        self._comms = {}  # rank set -> NCCL communicator
        self.routes = {}  # rank set -> None (NCCL) or why its collectives go through the host comm
        self._identities = {}  # world rank -> (host, process, GPU) as numbers, as far as learned
        self._peer_routes = {}  # an exchange's peers -> None (NCCL) or why it goes through the host comm
        self._mine = None
        self._timeout = comm_timeout_from_env() if timeout is None else float(timeout)
        self._on_timeout = on_timeout if on_timeout is not None else self._end_job
        self.issued = 0
        self.watchdog = Watchdog(self._timeout, self._abort_comm, self._on_timeout, start=watchdog) \
            if np.isfinite(self._timeout) else None

    # --- the world, control calls on the host comm --------------------------------------------------------------
    @property
    def rank(self):
        return self.host.rank

    @property
    def size(self):
        return self.host.size

    def set_timeout(self, seconds):
        self._timeout = float(seconds)
        if self.watchdog is not None:
            self.watchdog.timeout = self._timeout

    def barrier(self):
        self.host.barrier()

    def bcast_object(self, obj, root=0):
        return self.host.bcast_object(obj, root)

    def allgather_object(self, obj):
        return self.host.allgather_object(obj)

    def abort(self, exit_code=1):
        self.host.abort(exit_code)

    def collectives_issued(self):
        return self.issued

    def _end_job(self, message):
        import sys

        sys.stderr.write("oneflow_compat: rank %d: %s\n" % (self.rank, message))
        sys.stderr.flush()
        self.host.abort(1)

    # --- communicators -----------------------------------------------------------------------------------------
    def route(self, ranks):
        """None where the rank set's collectives run on NCCL, else why they go through the host comm (see the
        module docstring). Decided on the set's first collective: every member sends (host, process, GPU) to every
        other over the host comm (3 numbers), so that all of them decide alike."""
        ranks = check_ranks(ranks, self.rank, self.size)
        if ranks in self.routes:
            return self.routes[ranks]
        every = np.asarray(self.host.allgatherv(self._identity(), ranks, sizes=[3] * len(ranks)))
        members = [tuple(int(v) for v in row) for row in every.reshape(len(ranks), 3)]
        self._identities.update(zip(ranks, members))
        why = nccl_refusal(members, ranks)
        self.routes[ranks] = why
        return why

    def _identity(self):
        """This rank's (host, process, GPU) as 3 numbers that travel (the same strings give the same numbers); asked
        of the binding once (the process's GPU is current from its first device array on)."""
        if self._mine is None:
            host, process, gpu = self.nccl.member()
            self._mine = np.array([_stable_hash(host), _stable_hash(process), _stable_hash("%s|%s" % (host, gpu))],
                                  dtype=np.int64)
        return self._mine.copy()

    def _peers_refused(self, peers):
        """Why NCCL cannot join this rank with `peers` (None where it can), learning the identities it does not know
        yet from the peers themselves, point to point: an exchange is not a collective of the world (a rank with
        nothing to send or receive does not take part), so no world-wide step may decide it."""
        peers = tuple(peers)
        if peers in self._peer_routes:
            return self._peer_routes[peers]
        unknown = [p for p in peers if p not in self._identities]
        if unknown:
            got = self.host.exchange([(p, self._identity()) for p in unknown],
                                     [(p, np.empty(3, dtype=np.int64)) for p in unknown])
            for p, row in zip(unknown, got):
                self._identities[p] = tuple(int(v) for v in np.asarray(row).reshape(-1))
        mine, why = tuple(int(v) for v in self._identity()), None
        for p in peers:
            pair = sorted([(self.rank, mine), (p, self._identities[p])])
            why = nccl_refusal([m for _, m in pair], [r for r, _ in pair])
            if why is not None:
                break
        self._peer_routes[peers] = why
        return why

    def communicator(self, ranks):
        """The NCCL communicator of a rank set, made (and bootstrapped over the host comm) on its first use; None
        where the set's collectives go through the host comm (`route`)."""
        ranks = check_ranks(ranks, self.rank, self.size)
        found = self._comms.get(ranks)
        if found is not None:
            return found
        if self.watchdog is not None and self.watchdog.failed:
            raise CollectiveTimeout(self.watchdog.failed)
        if self.route(ranks) is not None:
            return None
        uid = self.nccl.unique_id() if self.rank == ranks[0] else None
        array, kind = uid_to_array(uid) if uid is not None else (None, None)
        # every member learns the id's length and kind, then its bytes, over these ranks alone
        meta = np.array([array.size if array is not None else 0, 1 if kind == "bytes" else 0], dtype=np.int64)
        meta = self.host.bcast_(meta, ranks[0], ranks)
        if array is None:
            array = np.zeros(int(meta[0]), dtype=np.uint8 if meta[1] else np.int64)
        array = self.host.bcast_(array, ranks[0], ranks)
        uid = uid_from_array(array, "bytes" if meta[1] else "tuple")
        comm = self._comms[ranks] = self.nccl.communicator(len(ranks), uid, ranks.index(self.rank))
        return comm

    def _abort_comm(self, ranks):
        comm = self._comms.pop(ranks, None)
        if comm is not None:
            self.nccl.abort(comm)

    def _issued(self, ranks, what):
        self.issued += 1
        if self.watchdog is not None:
            self.watchdog.watch(ranks, "NCCL %s over ranks %s" % (what, ",".join(map(str, ranks))), self.nccl.event())

    def _check(self):
        if self.watchdog is not None and self.watchdog.failed:
            raise CollectiveTimeout(self.watchdog.failed)

    # --- helpers -----------------------------------------------------------------------------------------------
    def _rows_first(self, x, axis):
        """x with `axis` moved to the front, C-contiguous (one copy unless it already is)."""
        xp = self.xp
        return xp.ascontiguousarray(xp.moveaxis(x, axis, 0) if axis else x)

    def _back(self, rows, axis):
        xp = self.xp
        return xp.ascontiguousarray(xp.moveaxis(rows, 0, axis)) if axis else rows

    def _summable(self, a):
        """(array to reduce, op): booleans as their bytes under max (logical or)."""
        if a.dtype == np.bool_:
            return a.view(np.uint8), self.nccl.MAX
        return a, self.nccl.SUM

    def _sizes(self, n, ranks, sizes):
        """Every member's size along the axis: given, or gathered over the host comm (a few bytes)."""
        if sizes is not None:
            return [int(s) for s in sizes]
        return [int(v) for v in self.host.allgatherv(np.array([n], dtype=np.int64), ranks)]

    @staticmethod
    def _offsets(sizes):
        out = [0]
        for s in sizes:
            out.append(out[-1] + s)
        return out

    def _group(self, issue):
        self.nccl.group_start()
        try:
            issue()
        finally:
            self.nccl.group_end()

    # --- the host route: the pieces staged down, the host comm's collective, the results back up ---------------
    def _down(self, x):
        """A C-contiguous host copy of a device array that the host comm may overwrite."""
        return np.array(devices.to_host(x), order="C", copy=True)

    def _up(self, x):
        return None if x is None else self.xp.asarray(x)

    def _into(self, buf, host):
        """`buf` (a device array) overwritten with `host`'s values."""
        buf[...] = self.xp.asarray(host)
        return buf

    # --- collectives -------------------------------------------------------------------------------------------
    def allreduce_(self, buf, ranks):
        self._check()
        comm = self.communicator(ranks)
        if comm is None:
            return self._into(buf, self.host.allreduce_(self._down(buf), ranks))
        work = buf if buf.flags.c_contiguous else self.xp.ascontiguousarray(buf)
        flat, op = self._summable(work.reshape(-1))
        self.nccl.all_reduce(comm, flat, flat, op)
        self._issued(tuple(ranks), "all-reduce")
        if work is not buf:
            buf[...] = work
        return buf

    def reduce_scatter(self, buf, ranks, axis=0, sizes=None):
        self._check()
        ranks = check_ranks(ranks, self.rank, self.size)
        comm, k, me = self.communicator(ranks), len(ranks), ranks.index(self.rank)
        if comm is None:
            return self._up(self.host.reduce_scatter(self._down(buf), ranks, axis=axis, sizes=sizes))
        rows = self._rows_first(buf, axis)
        sizes = [int(s) for s in sizes] if sizes is not None else balanced_sizes(rows.shape[0], k)
        offsets = self._offsets(sizes)
        out = self.xp.empty((sizes[me],) + rows.shape[1:], dtype=buf.dtype)
        src, op = self._summable(rows)
        dst = self._summable(out)[0]
        if len(set(sizes)) == 1:
            self.nccl.reduce_scatter(comm, src.reshape(-1), dst.reshape(-1), op)
        else:
            def issue():
                for j in range(k):
                    if sizes[j]:
                        chunk = src[offsets[j]:offsets[j + 1]].reshape(-1)
                        self.nccl.reduce(comm, chunk, dst.reshape(-1) if j == me else chunk, op, j)
            self._group(issue)
        self._issued(ranks, "reduce-scatter")
        return self._back(out, axis)

    def allgatherv(self, local, ranks, axis=0, sizes=None):
        self._check()
        ranks = check_ranks(ranks, self.rank, self.size)
        comm, k, me = self.communicator(ranks), len(ranks), ranks.index(self.rank)
        if comm is None:
            return self._up(self.host.allgatherv(self._down(local), ranks, axis=axis, sizes=sizes))
        rows = self._rows_first(local, axis)
        sizes = self._sizes(rows.shape[0], ranks, sizes)
        if sizes[me] != rows.shape[0]:
            raise ValueError("allgatherv: sizes %r do not match the local size %d" % (sizes, rows.shape[0]))
        offsets = self._offsets(sizes)
        out = self.xp.empty((offsets[-1],) + rows.shape[1:], dtype=local.dtype)
        if len(set(sizes)) == 1:
            self.nccl.all_gather(comm, rows.reshape(-1), out.reshape(-1))
        else:
            def issue():
                for j in range(k):
                    if sizes[j]:
                        chunk = out[offsets[j]:offsets[j + 1]].reshape(-1)
                        self.nccl.broadcast(comm, rows.reshape(-1) if j == me else chunk, chunk, j)
            self._group(issue)
        self._issued(ranks, "all-gather")
        return self._back(out, axis)

    def alltoallv(self, pieces, ranks, axis=0, recv_sizes=None, concat=False):
        self._check()
        ranks = check_ranks(ranks, self.rank, self.size)
        comm, k, me = self.communicator(ranks), len(ranks), ranks.index(self.rank)
        if len(pieces) != k:
            raise ValueError("alltoallv over %d members takes %d pieces, got %d" % (k, k, len(pieces)))
        if comm is None:
            got = self.host.alltoallv([self._down(p) for p in pieces], ranks, axis=axis, recv_sizes=recv_sizes,
                                      concat=concat)
            return self._up(got) if concat else [self._up(g) for g in got]
        rows = [self._rows_first(p, axis) for p in pieces]
        if recv_sizes is None:
            got = self.host.alltoallv([np.array([r.shape[0]], dtype=np.int64) for r in rows], ranks)
            recv_sizes = [int(np.asarray(g).reshape(-1)[0]) for g in got]
        offsets = self._offsets(recv_sizes)
        out = self.xp.empty((offsets[-1],) + rows[me].shape[1:], dtype=rows[me].dtype)

        def issue():
            for j in range(k):
                if j != me and rows[j].shape[0]:
                    self.nccl.send(comm, rows[j].reshape(-1), j)
                if j != me and recv_sizes[j]:
                    self.nccl.recv(comm, out[offsets[j]:offsets[j + 1]].reshape(-1), j)
        self._group(issue)
        out[offsets[me]:offsets[me + 1]] = rows[me]
        self._issued(ranks, "all-to-all")
        if concat:
            return self._back(out, axis)
        return [self._back(out[offsets[j]:offsets[j + 1]], axis) for j in range(k)]

    def bcast_(self, buf, root, ranks):
        self._check()
        ranks = check_ranks(ranks, self.rank, self.size)
        if root not in ranks:
            raise ValueError("bcast_ root %r is not a member of ranks %r" % (root, ranks))
        comm = self.communicator(ranks)
        if comm is None:
            return self._into(buf, self.host.bcast_(self._down(buf), root, ranks))
        work = buf if buf.flags.c_contiguous else self.xp.ascontiguousarray(buf)
        flat = work.reshape(-1)
        self.nccl.broadcast(comm, flat, flat, ranks.index(root))
        self._issued(ranks, "broadcast")
        if work is not buf:
            buf[...] = work
        return buf

    def reduce_(self, buf, root, ranks):
        self._check()
        ranks = check_ranks(ranks, self.rank, self.size)
        if root not in ranks:
            raise ValueError("reduce_ root %r is not a member of ranks %r" % (root, ranks))
        comm = self.communicator(ranks)
        if comm is None:
            got = self.host.reduce_(self._down(buf), root, ranks)
            return self._into(buf, got) if self.rank == root else buf
        work = buf if buf.flags.c_contiguous else self.xp.ascontiguousarray(buf)
        flat, op = self._summable(work.reshape(-1))
        if self.rank == root:
            self.nccl.reduce(comm, flat, flat, op, ranks.index(root))
        else:  # the others' buffers stay as they were: their addend goes from a copy
            self.nccl.reduce(comm, flat, self.xp.empty_like(flat), op, ranks.index(root))
        self._issued(ranks, "reduce")
        if work is not buf and self.rank == root:
            buf[...] = work
        return buf

    def gatherv(self, local, root, ranks, axis=0, sizes=None):
        self._check()
        ranks = check_ranks(ranks, self.rank, self.size)
        if root not in ranks:
            raise ValueError("gatherv root %r is not a member of ranks %r" % (root, ranks))
        comm, k, me = self.communicator(ranks), len(ranks), ranks.index(self.rank)
        if comm is None:
            return self._up(self.host.gatherv(self._down(local), root, ranks, axis=axis, sizes=sizes))
        rows = self._rows_first(local, axis)
        sizes = self._sizes(rows.shape[0], ranks, sizes)
        r = ranks.index(root)
        if me != r:
            if rows.shape[0]:
                self.nccl.send(comm, rows.reshape(-1), r)
            self._issued(ranks, "gather")
            return None
        offsets = self._offsets(sizes)
        out = self.xp.empty((offsets[-1],) + rows.shape[1:], dtype=local.dtype)

        def issue():
            for j in range(k):
                if j != me and sizes[j]:
                    self.nccl.recv(comm, out[offsets[j]:offsets[j + 1]].reshape(-1), j)
        self._group(issue)
        out[offsets[me]:offsets[me + 1]] = rows
        self._issued(ranks, "gather")
        return self._back(out, axis)

    def exchange(self, sends, recvs):
        """Point-to-point messages as one NCCL group over the world's communicator (a pair's messages match in
        list order, as NCCL matches sends and receives between two ranks in issue order)."""
        self._check()
        sends, recvs = list(sends), list(recvs)
        for peer, _ in sends + recvs:
            if not 0 <= peer < self.size or peer == self.rank:
                raise ValueError("exchange with rank %r: not another rank of a world of %d" % (peer, self.size))
        # ranks that share a GPU (or a process) exchange through the host, pair by pair; the others over NCCL's
        # world communicator, which every rank joins
        peers = sorted({peer for peer, _ in sends + recvs})
        comm = None if self._peers_refused(peers) is not None else self.communicator(self.world_ranks)
        if comm is None:
            got = self.host.exchange([(dst, self._down(a)) for dst, a in sends],
                                     [(src, np.empty(a.shape, dtype=a.dtype)) for src, a in recvs])
            return [self._into(a, g) for (_, a), g in zip(recvs, got)]
        staged = [(dst, self.xp.ascontiguousarray(a)) for dst, a in sends]
        targets = [(src, a if a.flags.c_contiguous else self.xp.empty(a.shape, dtype=a.dtype), a)
                   for src, a in recvs]

        def issue():
            for dst, a in staged:
                self.nccl.send(comm, a.reshape(-1), dst)
            for src, work, _ in targets:
                self.nccl.recv(comm, work.reshape(-1), src)
        self._group(issue)
        out = []
        for _, work, a in targets:
            if work is not a:
                a[...] = work
            out.append(a)
        self._issued(self.world_ranks, "exchange")
        return out

    def send(self, buf, dst):
        self.exchange([(dst, buf)], [])

    def recv(self, buf_or_shape, src, dtype=np.float32):
        buf = buf_or_shape if hasattr(buf_or_shape, "dtype") else self.xp.empty(buf_or_shape, dtype=dtype)
        return self.exchange([], [(src, buf)])[0]

    def close(self):
        if self.watchdog is not None:
            self.watchdog.stop()


class NcclUnavailable(CommError):
    """NCCL cannot run here (CuPy without NCCL, no GPU)."""


def available(xp):
    """Whether CuPy's NCCL binding is loadable with `xp` (CuPy), or `xp` is a stand-in with its own
    (`xp.nccl_binding`: the strict fake device's fake NCCL)."""
    if getattr(xp, "nccl_binding", None) is not None:
        return True
    try:
        from cupy.cuda import nccl
    except Exception:  # noqa: BLE001 - any failure to load means no NCCL
        return False
    return bool(getattr(nccl, "available", False)) and xp is not np and hasattr(xp, "cuda")
