"""`MPIComm`: the process comm on mpi4py, with raw numpy buffers and no way to hang forever.

Every operation is issued nonblocking and completed by a polling loop with a timeout
(`ONEFLOW_COMPAT_COMM_TIMEOUT` seconds, default 60, `inf` for none; `set_timeout()`; a warning at half of it).
While it polls, a rank answers "where are you?" queries that arrive on a second, private communicator (the
*control* communicator). When a collective times out, the rank asks every other member; members that answer within
`QUERY_WINDOW_S` are waiting somewhere (in this collective, or in another one: then the ranks issue collectives in
different orders), members that do not answer are busy outside any collective, stuck, or dead. `CollectiveTimeout`
reports all of it; uncaught, it ends the whole job through the failure handlers (`install_failure_handlers`).

A rank that leaves the program (its end, `sys.exit(0)`, a bare `raise SystemExit(n)`) says so first, on the control
communicator, with how far it got: the number of collectives it began over each subset and of messages it sent to
and received from each peer. A rank waiting in a collective that the departed rank never began raises `CommError`
naming it at once, instead of waiting for the timeout; one the departed rank did take part in is left to complete
(its data may still be in flight: messages on different communicators are not ordered), so a rank that simply
finishes first is never reported.

Sub-communicators for rank subsets are created once per subset with `Create_group`, which only the members call.
Because `Create_group` itself blocks, the members first meet in a polled, timed rendezvous, so a member that never
arrives is reported like a missing member of any other collective.
"""
import atexit
import functools
import itertools
import math
import os
import pickle
import socket
import sys
import threading
import time
import traceback
import weakref
import zlib

import numpy as np
from mpi4py import MPI

from .environment import DEFAULT_TIMEOUT_S, TIMEOUT_ENV, check_timeout, detect_local_size, usable_cores  # noqa: F401
from .environment import comm_timeout_from_env as timeout_from_env
from .output import unprefixed_stderr, wait_until_output_is_read
from .process_comm import (CollectiveTimeout, CommError, Pending, ProcessComm, balanced_offsets, balanced_sizes,
                           check_ranks)
from . import cross_memory
from .shm import CHECK_WORDS, PASSES, Board, SharedBlock, ShmAllreduce, add_into, copy_into, reading, signature

QUERY_WINDOW_S = 1.0      # how long a timed-out rank waits for the other members to say where they are
PEER_FAILURE_GRACE_S = 3.0  # how long the other ranks leave the launcher to act on a failed rank's MPI_Abort

# Tags on the data communicator (user-level send/recv and the subset rendezvous must not match each other).
_TAG_P2P = 1
_TAG_RENDEZVOUS = 2
_TAG_CREATE_GROUP = 3
_TAG_EXCHANGE = 4  # `exchange` (the boxing's point-to-point batches), apart from user-level send/recv
# Tags on the control communicator.
_TAG_QUERY = 11
_TAG_REPLY = 12
_TAG_FAILED = 13          # "this rank failed and is aborting the job", sent to every other member
_TAG_LEFT = 14            # "this rank leaves the program", with how far it got (`_Departure`)
LEAVE_NOTE_LIMIT_S = 0.5  # how long a leaving rank waits for its notes to go out

# Polling schedule: spin first (the common case completes in microseconds to milliseconds), then yield the
# core, then sleep. With at most one rank per core a waiting rank owns its core, so it spins for the whole
# first phase, like a blocking MPI call; with more ranks than cores, or more runnable processes than cores
# (the load average: a shared machine), it yields almost at once, so that the peer it waits for can run
# (measured on 2 cores at load 5: the data-parallel step's CPU spent waiting fell from 3.6 to 1.3 ms). MPI moves data only while a rank polls (each test advances the transfer by a
# chunk), so a call that moves many bytes keeps yielding — never sleeping — for as long as moving them may take
# at a slow `_YIELD_BYTES_PER_S` (16 MB: 0.4 s): sleeping between chunks made a 16 MB collective several times
# slower than a blocking one once the machine was loaded. Past that, the wait is for a late peer: sleep.
_SPIN_OWN_CORE_S = 0.05
_SPIN_SHARED_CORE_S = 0.0002
_YIELD_S = 0.05
_YIELD_BYTES_PER_S = 40e6
_SLEEP_S = 0.0005
# giving the core away for a moment: sched_yield, not time.sleep(0), which sleeps for the timer slack (~50 us) and so
# caps a waiting rank at ~20000 polls a second
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))
_SERVE_EVERY_S = 0.005
_LOAD_EVERY_S = 1.0


def _put(slot, array):
    """`array` copied into the start of a shared-memory slot (uint8), in C order (a strided array packed)."""
    copy_into(slot[:array.nbytes].view(array.dtype).reshape(array.shape), array)


class _Subset:
    """A communicator over a sorted tuple of world ranks, with this rank's index, a count of its collectives and its
    shared-memory board (`shm.Board`: None when the members are on several hosts or shared memory is off; `_UNSET`
    until the first collective that could use it)."""
    __slots__ = ("ranks", "comm", "index", "count", "board")

    def __init__(self, ranks, comm, index):
        self.ranks = ranks
        self.comm = comm
        self.index = index
        self.count = 0
        self.board = _UNSET


_UNSET = object()
SHM_ENV = "ONEFLOW_COMPAT_SHM"  # "0": every collective through MPI (shared memory off), e.g. to compare
_SHM_ALLREDUCE_MIN = 1 << 18  # bytes: smaller all-reduces stay MPI's (one latency)


class _Activity:
    """What this rank is waiting for: shown to other ranks that ask, and in timeout messages. `peer` and `index`
    place a send or receive among the messages exchanged with that peer (None for collectives); `needs` does the
    same for each peer of an `exchange`: {peer: ("recv" | "send", index of the last message with it)}; `where`: what
    the caller runs (an eager global op, an nn.Graph call), named after the collective's own number."""
    __slots__ = ("name", "ranks", "number", "peer", "index", "needs", "where")

    def __init__(self, name, ranks, number, peer=None, index=None, needs=None, where=None):
        self.name = name
        self.where = where
        self.ranks = ranks
        self.number = number
        self.peer = peer
        self.index = index
        self.needs = needs

    def key(self):
        return (self.name, self.ranks, self.number, self.where)

    def describe(self):
        text = "%s #%d over ranks %s" % (self.name, self.number, _ranks_text(self.ranks))
        return text + " in " + self.where if self.where else text


class _Departure:
    """What a rank that left the program said about itself: where it ran and how far it got."""
    __slots__ = ("rank", "pid", "host", "begun", "sent", "received")

    def __init__(self, rank, pid, host, begun, sent, received):
        self.rank, self.pid, self.host = rank, pid, host
        self.begun = begun          # {subset ranks: collectives begun over them}
        self.sent = sent            # {peer: messages sent to it}
        self.received = received    # {peer: messages received from it}

    def took_part_in(self, activity, me):
        """Whether the departed rank reached `activity` of rank `me` (then it may still complete)."""
        if activity.needs is not None:
            need = activity.needs.get(self.rank)
            if need is None:
                return True
            direction, index = need
            done = self.sent if direction == "recv" else self.received
            return done.get(me, 0) >= index
        if activity.peer is not None:
            done = self.sent if activity.name.startswith("recv") else self.received
            return done.get(me, 0) >= activity.index
        return self.begun.get(activity.ranks, -1) >= activity.number


def _one_world(comm):
    """Whether every process of `comm` is in this process's MPI_COMM_WORLD."""
    group, world = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    try:
        return MPI.UNDEFINED not in MPI.Group.Translate_ranks(group, list(range(group.Get_size())), world)
    finally:
        group.Free()
        world.Free()


def _ranks_text(ranks):
    return "(%s)" % ", ".join(map(str, ranks))


def _reduce_buffer(array):
    """The buffer and MPI op that sum `array` (bools sum as logical or, like numpy's `+`)."""
    if array.dtype == np.bool_:
        return array.view(np.uint8), MPI.BOR
    return array, MPI.SUM


def _contiguous(array):
    if not isinstance(array, np.ndarray):
        raise TypeError("process comm collectives take numpy arrays, got %s" % type(array).__name__)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


class _Blocks:
    """Consecutive blocks of an array along `axis` (sizes per member) and where each lies in a flat buffer of the
    blocks one after the other, each in C order: the wire layout of the collectives along an axis. Along axis 0 (or
    any axis after dimensions of size 1) the blocks of a C-contiguous array ARE that layout, and nothing is copied;
    along another axis, packing or unpacking is one strided copy per block (never a transpose of the whole)."""

    def __init__(self, shape, axis, sizes, dtype):
        self.shape, self.axis, self.sizes, self.dtype = tuple(shape), axis, [int(x) for x in sizes], np.dtype(dtype)
        # (Python's integer arithmetic: numpy's reductions cost microseconds each on lists this small)
        outer = math.prod(self.shape[:axis])
        self.row = math.prod(self.shape[axis + 1:]) * outer
        self.counts = [n * self.row for n in self.sizes]  # elements per block
        self.displs, self.total = _byte_layout(self.counts)
        self.leading = outer == 1
        starts = list(itertools.accumulate(self.sizes, initial=0))
        self.index = [(slice(None),) * axis + (slice(starts[q], starts[q + 1]),) for q in range(len(self.sizes))]

    def block_shape(self, q):
        return self.shape[:self.axis] + (self.sizes[q],) + self.shape[self.axis + 1:]

    def bytes(self):
        """(counts, displacements) in bytes, for an MPI.BYTE vector collective."""
        k = self.dtype.itemsize
        return [c * k for c in self.counts], [d * k for d in self.displs]

    def pack(self, array):
        """`array` (of `shape`) in the wire layout: itself when it already is one."""
        if self.leading and array.flags.c_contiguous:
            return array
        flat = np.empty(self.total, self.dtype)
        for q, index in enumerate(self.index):
            flat[self.displs[q]:self.displs[q] + self.counts[q]].reshape(self.block_shape(q))[...] = array[index]
        return flat

    def receiver(self):
        """(buffer to receive the wire layout into, function giving the array of `shape` from it)."""
        out = np.empty(self.shape, self.dtype)
        if self.leading:
            return out, lambda: out
        flat = np.empty(self.total, self.dtype)

        def unpack():
            for q, index in enumerate(self.index):
                out[index] = flat[self.displs[q]:self.displs[q] + self.counts[q]].reshape(self.block_shape(q))
            return out
        return flat, unpack


@functools.lru_cache(maxsize=256)
def _cached_blocks(shape, axis, sizes, dtype):
    return _Blocks(shape, axis, sizes, dtype)


def _blocks(shape, axis, sizes, dtype):
    """`_Blocks` (read only), made once per layout: a boxing moves the same layout call after call."""
    return _cached_blocks(tuple(shape), axis, tuple(sizes), np.dtype(dtype))


def _address(a):
    return a.__array_interface__["data"][0]


def _owner(a):
    return a if a.base is None else a.base


class _Typed:
    """Arrays described to MPI in place: one buffer and, per array, its byte displacement in it and a datatype
    walking its strides (nested hvectors of its contiguous rows). MPI reads or writes the strided elements itself,
    during the copy it makes anyway, so nothing is packed or unpacked here. Arrays holding no element take no type.
    Where the arrays are not views of one C-contiguous buffer (or walk backwards), they are first copied into one
    (`of(..., copy=True)`, for what is sent): whether a rank copies is its own business, the collective is the same."""

    def __init__(self, buffer, displs, types):
        self.buffer, self.displs, self.types = buffer, displs, types
        self.counts = [0 if t is None else 1 for t in types]

    @classmethod
    def of(cls, views, copy=False):
        owners = {id(_owner(v)): _owner(v) for v in views if v.size}
        if not owners:
            return cls(np.empty(0, np.uint8), [0] * len(views), [None] * len(views))
        (buffer,) = owners.values() if len(owners) == 1 else (None,)
        if buffer is None or not isinstance(buffer, np.ndarray) or not buffer.flags.c_contiguous \
                or any(st < 0 for v in views if v.size for st in v.strides):
            if not copy:
                raise ValueError("arrays to receive into must be views of one C-contiguous array")
            flat = [np.ascontiguousarray(v).reshape(-1).view(np.uint8) for v in views]
            buffer = np.concatenate(flat) if flat else np.empty(0, np.uint8)
            views = [buffer[d:d + f.size].view(v.dtype).reshape(v.shape)
                     for v, f, d in zip(views, flat, np.cumsum([0] + [f.size for f in flat]).tolist())]
        start = _address(buffer)
        displs, types = [], []
        for v in views:
            if v.size:
                displs.append(_address(v) - start)
                types.append(_strided_type(v))
            else:
                displs.append(0)
                types.append(None)
        return cls(buffer.reshape(-1).view(np.uint8), displs, types)

    def spec(self):
        return [self.buffer, (self.counts, self.displs), [MPI.BYTE if t is None else t for t in self.types]]

    def free(self):
        for t in self.types:
            if t is not None:
                t.Free()


def _strided_type(v):
    """A committed MPI datatype of the elements of the strided view `v`, from its first byte."""
    item = v.itemsize
    dims = [(n, st) for n, st in zip(v.shape, v.strides) if n != 1]
    run = item  # bytes of the innermost contiguous run
    while dims and dims[-1][1] == run:
        run *= dims[-1][0]
        dims.pop()
    t = MPI.BYTE.Create_contiguous(run)
    for n, st in reversed(dims):
        outer = t.Create_hvector(n, 1, st)
        t.Free()
        t = outer
    t.Commit()
    return t


def _byte_layout(counts):
    displs, total = [], 0
    for count in counts:
        displs.append(total)
        total += count
    return displs, total


class _MPIPending(Pending):
    """A collective of `MPIComm` in flight: `test()` advances it without waiting, `wait()` polls it to completion
    under the comm's timeout and failure reports (`_complete`)."""

    def __init__(self, comm, test, activity, nbytes, result, finish=None):
        self._comm, self._test, self._activity, self._nbytes = comm, test, activity, nbytes
        self._result, self._finish, self._done = result, finish, False

    def test(self):
        if not self._done and self._test():
            self._end()
        return self._done

    def wait(self):
        if not self._done:
            self._comm._complete(self._test, self._activity, nbytes=self._nbytes)
            self._end()
        return self._result

    def _end(self):
        self._done = True
        if self._finish is not None:
            self._finish()


_live_comms = weakref.WeakSet()  # every MPIComm of this process: each tells its members when this rank fails
# The communicator whose MPI_Abort ends the whole job (failure reports name ranks in it): MPI_COMM_WORLD, or the
# communicator joining several MPI worlds (join.py) — aborting MPI_COMM_WORLD there would end one world only.
_job = {"comm": MPI.COMM_WORLD}


def set_job_communicator(comm):
    _job["comm"] = comm


class MPIComm(ProcessComm):
    """The process comm over an MPI communicator (MPI_COMM_WORLD by default), which it duplicates twice."""

    context = None  # a callable naming what this rank runs (or None), shown in timeout reports

    def __init__(self, base_comm=None, timeout=None):
        base = MPI.COMM_WORLD if base_comm is None else base_comm
        self._timeout = timeout_from_env() if timeout is None else check_timeout(timeout)
        self._cores = usable_cores()
        self._oversubscribed = detect_local_size() > self._cores
        self._spin_s = _SPIN_SHARED_CORE_S if self._oversubscribed else _SPIN_OWN_CORE_S
        self._load_checked = -float("inf")
        self._rank = base.Get_rank()
        self._size = base.Get_size()
        self._current = None
        self._replies_in_flight = []
        self._query_serial = 0
        self._p2p_count = 0
        self._sent_to, self._received_from = {}, {}  # per peer: messages exchanged (a leaving rank reports them)
        self._departed = {}                           # rank: _Departure, for the ranks that left the program
        # Private duplicates: the job's traffic never matches user code on COMM_WORLD, and the control
        # queries never match data messages. Idup keeps even this first step under the timeout.
        self._data = self._idup(base, "data")
        self._ctrl = self._idup(base, "control")
        _live_comms.add(self)
        world = _Subset(tuple(range(self._size)), self._data, self._rank)
        self._subsets = {world.ranks: world}
        self._shared = {}  # address of a buffer `shared_buffer` handed out: its SharedBlock
        self._use_shm = os.environ.get(SHM_ENV, "1").strip() not in ("0", "false", "no", "off")
        self._carried = None  # an identity check waiting for the next collective to carry it (`carry_check`)
        self._probes = []  # the words other members read to learn whether they may read this process (`_probe_reads`)

    # ----- basics -------------------------------------------------------------------------------------------

    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    @property
    def timeout(self):
        return self._timeout

    def set_timeout(self, seconds):
        self._timeout = check_timeout(seconds)

    def collectives_issued(self):
        return sum(subset.count for subset in self._subsets.values()) + self._p2p_count

    def abort(self, exit_code=1):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        wait_until_output_is_read()
        _job["comm"].Abort(exit_code)

    # ----- waiting without hanging -------------------------------------------------------------------------

    def _idup(self, base, purpose):
        comm, request = base.Idup()
        started = time.perf_counter()
        while not request.Test():
            if time.perf_counter() - started > self._timeout:
                raise CollectiveTimeout(
                    "rank %d: creating the %s communicator did not complete within %.1f s: some rank never "
                    "started its process comm (the missing ranks cannot be named before the control "
                    "channel exists)" % (self._rank, purpose, self._timeout))
            time.sleep(_SLEEP_S)
        return comm

    def _complete(self, request, activity, status=None, nbytes=0):
        """Poll `request` (one Request, or a list of them) to completion; on timeout find out where the other
        members are and raise `CollectiveTimeout`. `status`: a Status (one request) or a list of them (a list);
        `nbytes`: about how many bytes the call moves here (it keeps polling while they may still be moving).
        `request` may also be a function returning True once the operation completed (a shared-memory all-reduce)."""
        if callable(request) and not isinstance(request, MPI.Request):
            test = request
        elif isinstance(request, list):
            test = functools.partial(MPI.Request.Testall, request, status) if status is not None else \
                functools.partial(MPI.Request.Testall, request)
        elif status is not None:
            test = functools.partial(request.Test, status)
        else:
            test = request.Test
        if test():
            return
        self._current = activity
        try:
            started = time.perf_counter()
            spin_s = self._spin_for(started)
            deadline = started + self._timeout
            warn_at = started + self._timeout / 2
            yield_s = _YIELD_S + nbytes / _YIELD_BYTES_PER_S
            next_serve = started + _SERVE_EVERY_S
            while not test():
                now = time.perf_counter()
                if now >= next_serve:
                    self._serve_queries()
                    next_serve = now + _SERVE_EVERY_S
                    if self._departed and self._completed_despite_departures(activity, test):
                        return
                    if now >= deadline:
                        raise CollectiveTimeout(self._timeout_message(activity, now - started))
                    if now >= warn_at:
                        warn_at = float("inf")
                        self._warn_slow(activity, now - started)
                waited = now - started
                if waited >= yield_s:
                    time.sleep(_SLEEP_S)
                elif waited >= spin_s:
                    _yield()
        finally:
            self._current = None

    def _spin_for(self, now):
        """How long a wait spins before it yields the core: long when this rank may own its core, short when the
        host has more runnable processes than cores (more ranks than cores, or other work: the load average, read
        at most once a second) — then the peer this rank waits for may be the one waiting for a core."""
        if self._oversubscribed:
            return _SPIN_SHARED_CORE_S
        if now - self._load_checked > _LOAD_EVERY_S:
            self._load_checked = now
            try:
                busy = os.getloadavg()[0] > self._cores + 0.5
            except OSError:
                busy = False
            self._spin_s = _SPIN_SHARED_CORE_S if busy else _SPIN_OWN_CORE_S
        return self._spin_s

    def _warn_slow(self, activity, waited):
        # half the timeout gone: say so while there is still time to look at the ranks (py-spy, gdb, top)
        try:
            stream = unprefixed_stderr()
            stream.write("[rank %d] warning: %s has waited %.0f s; the comm timeout (%s=%g s) ends the job at %.0f s\n"
                         % (self._rank, activity.describe(), waited, TIMEOUT_ENV, self._timeout, self._timeout))
            stream.flush()
        except (OSError, ValueError):
            pass

    def _serve_queries(self):
        """Answer every pending "where are you?" query with what this rank is waiting for (and end this rank if
        another one reported its failure)."""
        failed = self._ctrl.improbe(source=MPI.ANY_SOURCE, tag=_TAG_FAILED)
        if failed is not None:
            self._end_after_peer_failure(failed.recv())
        while True:
            left = self._ctrl.improbe(source=MPI.ANY_SOURCE, tag=_TAG_LEFT)
            if left is None:
                break
            departure = _Departure(*left.recv())
            self._departed[departure.rank] = departure
        while True:
            message = self._ctrl.improbe(source=MPI.ANY_SOURCE, tag=_TAG_QUERY)
            if message is None:
                break
            asker, serial = message.recv()
            state = None if self._current is None else self._current.key()
            self._replies_in_flight.append(self._ctrl.isend((serial, self._rank, state), dest=asker, tag=_TAG_REPLY))
        self._replies_in_flight = [r for r in self._replies_in_flight if not r.Test()]

    def _ask_where(self, members):
        """{rank: state} for the members that answer within QUERY_WINDOW_S; state = _Activity.key() or None."""
        self._query_serial += 1
        serial = self._query_serial
        for member in members:
            self._replies_in_flight.append(self._ctrl.isend((self._rank, serial), dest=member, tag=_TAG_QUERY))
        answers = {}
        deadline = time.perf_counter() + QUERY_WINDOW_S
        while len(answers) < len(members) and time.perf_counter() < deadline:
            self._serve_queries()  # the others may be timing out too and asking us
            message = self._ctrl.improbe(source=MPI.ANY_SOURCE, tag=_TAG_REPLY)
            if message is None:
                time.sleep(0.001)
                continue
            reply_serial, member, state = message.recv()
            if reply_serial == serial:  # late answers to an earlier question are dropped
                answers[member] = state
        return answers

    def _timeout_message(self, activity, waited):
        others = [r for r in activity.ranks if r != self._rank]
        answers = self._ask_where(others)
        missing = [r for r in others if r not in answers]
        same = [r for r in others if answers.get(r) == activity.key()]
        elsewhere = [(r, answers[r]) for r in others if r in answers and answers[r] != activity.key()]
        lines = ["rank %d: %s did not complete within %.1f s." % (self._rank, activity.describe(), waited)]
        if missing:
            lines.append("Missing rank%s %s: no answer within %.0f s (busy outside any collective, stuck, or dead)."
                         % ("" if len(missing) == 1 else "s", ", ".join(map(str, missing)), QUERY_WINDOW_S))
        if same:
            lines.append("Waiting in the same collective: rank%s %s."
                         % ("" if len(same) == 1 else "s", ", ".join(map(str, same))))
        for r, state in _describe_states(elsewhere):
            lines.append("Rank %d is in a different operation: %s (the ranks issue collectives in different "
                         "orders)." % (r, state))
        return " ".join(lines)

    # ----- failures ------------------------------------------------------------------------------------------

    def tell_others_this_rank_fails(self, limit_s=0.5):
        """Tell every other member that this rank is aborting the job (bounded wait for the sends)."""
        requests = [self._ctrl.isend(self._rank, dest=r, tag=_TAG_FAILED) for r in range(self._size) if r != self._rank]
        deadline = time.monotonic() + limit_s
        while requests and not MPI.Request.Testall(requests) and time.monotonic() < deadline:
            time.sleep(0.001)

    def _end_after_peer_failure(self, failed_rank):
        # The launcher normally kills this rank right after the failed rank's MPI_Abort; only if it has not
        # (a launcher that lost the abort), end this rank too, so that a failure never turns into a hang.
        time.sleep(PEER_FAILURE_GRACE_S)
        try:
            stream = unprefixed_stderr()
            stream.write("[rank %d] rank %d failed (its report is above) and the launcher has not ended this rank "
                         "within %.0f s; aborting\n" % (self._rank, failed_rank, PEER_FAILURE_GRACE_S))
            stream.flush()
        except (OSError, ValueError):
            pass
        self.abort(1)

    def _completed_despite_departures(self, activity, test):
        """False while no member of `activity` left the program without reaching it; then True if `activity`
        completed after all (nothing that rank owed it: `test` must not be called again), else `CommError`."""
        for rank in activity.ranks:
            departure = self._departed.get(rank)
            if departure is None or rank == self._rank or departure.took_part_in(activity, self._rank):
                continue
            if test():
                return True
            raise CommError(
                "rank %d: %s cannot complete: rank %d (pid %d on %s) left the program without taking part in it "
                "(it ended, or called sys.exit / raised SystemExit; its exit status is unknown here) — the ranks "
                "ran different numbers of collectives" % (self._rank, activity.describe(), rank, departure.pid,
                                                         departure.host))
        return False

    def tell_others_this_rank_leaves(self, limit_s=LEAVE_NOTE_LIMIT_S):
        """Tell every member that has not left yet that this rank leaves the program, and how far it got."""
        self._serve_queries()  # learn who has left already: they get no note
        subsets = {subset.ranks: subset.count for subset in self._subsets.values()}
        note = (self._rank, os.getpid(), socket.gethostname(), subsets, dict(self._sent_to),
                dict(self._received_from))
        requests = [self._ctrl.isend(note, dest=r, tag=_TAG_LEFT)
                    for r in range(self._size) if r != self._rank and r not in self._departed]
        deadline = time.monotonic() + limit_s
        while requests and not MPI.Request.Testall(requests) and time.monotonic() < deadline:
            time.sleep(0.001)

    # ----- subsets -------------------------------------------------------------------------------------------

    def _subset(self, ranks):
        subset = self._subsets.get(ranks)
        if subset is None:
            ranks = check_ranks(ranks, self._rank, self._size)
            subset = self._subsets.get(ranks)
        if subset is None:
            subset = self._create_subset(ranks)
            self._subsets[ranks] = subset
        return subset

    def _create_subset(self, ranks):
        activity = _Activity("communicator creation", ranks, 0)
        others = [r for r in ranks if r != self._rank]
        # The token names the subset, so members that create subsets in different orders get an error, not
        # a communicator over the wrong ranks.
        token = np.array([zlib.crc32(repr(ranks).encode())], np.int64)
        inbox = np.zeros(len(others), np.int64)
        requests = [self._data.Isend(token, dest=r, tag=_TAG_RENDEZVOUS) for r in others]
        requests += [self._data.Irecv(inbox[i:i + 1], source=r, tag=_TAG_RENDEZVOUS) for i, r in enumerate(others)]
        self._complete(requests, activity)
        wrong = [r for r, got in zip(others, inbox) if got != token[0]]
        if wrong:
            raise CommError("rank %d creates the communicator over ranks %s while rank%s %s create%s another one: "
                            "the ranks issue collectives over rank subsets in different orders"
                            % (self._rank, _ranks_text(ranks), "" if len(wrong) == 1 else "s",
                               ", ".join(map(str, wrong)), "s" if len(wrong) == 1 else ""))
        # Every member is now at this call, so the blocking Create_group cannot wait on an absent one.
        group = self._data.Get_group().Incl(list(ranks))
        comm = self._data.Create_group(group, tag=_TAG_CREATE_GROUP)
        group.Free()
        return _Subset(ranks, comm, ranks.index(self._rank))

    def _begin(self, name, ranks, carry=False):
        """The subset and activity of a collective; `carry`: it may carry the pending identity check (it is over
        the check's members and goes through their board, `_board_for`), which is made first otherwise."""
        _exit_request.clear()  # a collective after sys.exit(n): the SystemExit was caught, the rank goes on
        ranks = ranks if isinstance(ranks, tuple) else tuple(ranks)
        if self._carried is not None and not (carry and ranks == self._carried.members):
            self._flush_carried()
        subset = self._subset(ranks)
        subset.count += 1
        # what the caller is running (an eager global op): timeout reports name it on every rank
        where = self.context() if self.context is not None else None
        return subset, _Activity(name, subset.ranks, subset.count, where=where or None)

    # ----- identity checks (runtime/agreement.py), carried by the shared-memory collectives -------------------

    def carry_check(self, check):
        """Takes an identity check (`agreement.Check`: `members`, `message`, `settle(sums)`, `drop()`) to carry in
        the header of this rank's next collective when that one is over exactly `check.members` and goes through
        their shared-memory board (`Board.exchange`): then the check costs no collective of its own. Any other next
        communication (another subset, point to point, MPI's path) makes the check on its own first (`run_check`).
        Every member decides alike: the choice rests on the collective and its members, never on one rank's state."""
        if self._carried is not None:
            self._flush_carried()
        if not self._use_shm or not check.exact or len(check.message) > CHECK_WORDS:
            self.run_check(check)
            return
        self._carried = check

    def end_carried_check(self, completed):
        """The end of the operation that handed a check to `carry_check`: made now if no collective carried it and
        the operation `completed`; dropped if it failed."""
        check, self._carried = self._carried, None
        if check is not None:
            if completed:
                self.run_check(check)
            else:
                check.drop()

    def _flush_carried(self):
        check, self._carried = self._carried, None
        if check is not None:
            self.run_check(check)

    def _take_carried(self, board):
        """The pending check, taken by a collective on `board` (over its members): (message, settle) or Nones."""
        check = self._carried
        if check is None or check.members != board.ranks:
            if check is not None:  # (`_begin` made sure it is over these members: never here)
                self._flush_carried()
            return None, None
        self._carried = None
        return check.message, check.settle

    def run_check(self, check):
        """An identity check on its own: an exchange of its message on the members' board (one arrival; every
        collective on the board compares it, so ranks that run different operations fail naming them, whatever
        collective the others are in), or MPI's all-reduce of it (several hosts, shared memory off)."""
        members = check.members
        if self._use_shm and check.exact and len(check.message) <= CHECK_WORDS and len(members) > 1 and \
                self._subset(members).board is not None:
            subset, activity = self._begin("identity check", members)
            board = self._board(subset, activity)
            if board is not None:
                # (no bytes to move, no result: the board call of an `exchange` that carries a check, `_shm_exchange`)
                zeros = [0] * (len(members) + 1)
                board.exchange(self._waiter(activity, 0), "check", 0, 0, table=zeros, check=check.message,
                               settle=check.settle, places=zeros)
                return
        check.run_over_allreduce()

    def _board_for(self, subset, activity, usable):
        """The subset's board when this collective goes through shared memory (`usable`: its arguments allow it);
        else None, after making the pending identity check on its own."""
        board = self._board(subset, activity) if usable else None
        if board is None and self._carried is not None:
            self._flush_carried()
        return board

    def _exchange(self, board, wait, kind, sig, need, write=None, table=None, result=None, shape=(), places=None,
                  joined=False, sources=None):
        """`board.exchange`, carrying the pending identity check (`result`, `shape`: this member's result in its
        arena and the shape it expects of the results, `Board.pushing`)."""
        check, settle = self._take_carried(board)
        return board.exchange(wait, kind, sig, need, write, table, check, settle, result,
                              signature(tuple(int(d) for d in shape)), places, joined, sources)

    # ----- collectives over subsets ----------------------------------------------------------------------

    def barrier(self):
        subset, activity = self._begin("barrier", tuple(range(self._size)))
        self._complete(subset.comm.Ibarrier(), activity)

    def allreduce_(self, buf, ranks):
        return self.iallreduce_(buf, ranks).wait()

    def allreduce(self, buf, ranks):
        buf = np.asarray(buf)
        return self.iallreduce_(buf, ranks, out=np.empty(buf.shape, buf.dtype)).wait()

    def iallreduce_(self, buf, ranks, out=None):
        """(`out`: the sum goes there, `buf` is only read: `allreduce`.)"""
        subset, activity = self._begin("allreduce", ranks, carry=True)
        if len(subset.ranks) == 1:
            if out is not None:
                out[...] = buf
                return Pending(out)
            return Pending(buf)
        block = self._shared.get(_address(buf)) if isinstance(buf, np.ndarray) and out is None else None
        if block is not None and block.nbytes == buf.nbytes and block.ranks == subset.ranks and \
                buf.flags.c_contiguous:
            # a buffer this comm handed out (`shared_buffer`): summed in place through shared memory, no copies. A
            # pending identity check (a gradient bucket's, runtime/buckets.py) rides in an arrival on the members'
            # board that also says every addend is in its slot: the all-reduce's own first arrival
            board = self._board(subset, activity) if self._carried is not None else None
            if board is None:
                self._flush_carried()
                op = ShmAllreduce(block, buf)
            else:
                block.win.Sync()  # this member's addend visible before it arrives on the board
                self._exchange(board, self._waiter(activity, 0), "allreduce",
                               signature("shared allreduce", buf.dtype.str, buf.shape), 0)
                op = ShmAllreduce(block, buf, arrived=True)
            return _MPIPending(self, op.test, activity, buf.nbytes, buf)
        board = self._board_for(subset, activity, isinstance(buf, np.ndarray) and buf.nbytes >= _SHM_ALLREDUCE_MIN
                                and buf.dtype != object)
        if board is not None:
            self._shm_allreduce(board, activity, buf, out)
            return Pending(buf if out is None else out)
        if out is not None:
            out[...] = buf
            buf = out
        work = _contiguous(buf)
        data, op = _reduce_buffer(work)
        request = subset.comm.Iallreduce(MPI.IN_PLACE, data, op=op)
        finish = None if work is buf else (lambda: buf.__setitem__(Ellipsis, work))
        return _MPIPending(self, request.Test, activity, 2 * work.nbytes, buf, finish)

    # ----- through shared memory (members on this host: shm.py) ------------------------------------------------

    def _board(self, subset, activity):
        """The subset's shared-memory board, made at its first use (None: members on several hosts, or shared
        memory off). Every member decides alike: on the hosts of all of them, exchanged once."""
        if subset.board is _UNSET:
            subset.board = None
            if self._use_shm and len(subset.ranks) > 1:
                mine = np.array([zlib.crc32(MPI.Get_processor_name().encode())], np.int64)
                hosts = np.empty(len(subset.ranks), np.int64)
                self._complete(subset.comm.Iallgather(mine, hosts), activity)
                # every member is here (the gather completed): the allocation cannot wait forever. Ranks of one
                # host in different MPI worlds (joined by `join.py`) share no window: only members of this
                # process's MPI_COMM_WORLD do (every member sees the same: the subset is in one world or not)
                if (hosts == hosts[0]).all() and _one_world(subset.comm):
                    subset.board = Board(subset.comm, subset.ranks)
                    subset.board.reads = self._probe_reads(subset, activity)
        return subset.board

    def _probe_reads(self, subset, activity):
        """Whether every member of `subset` may read every other member's memory (`cross_memory`): each member
        offers a word of its own (its process id) and tries to read every other's; all of them read what the others
        found, so every member decides alike (two gathers, once per board). The word stays alive with the comm."""
        probe = np.array([os.getpid()], np.int64)
        self._probes.append(probe)
        mine = np.array([os.getpid(), cross_memory.address(probe), int(cross_memory.wanted())], np.int64)
        everyone = np.empty((len(subset.ranks), 3), np.int64)
        self._complete(subset.comm.Iallgather(mine, everyone), activity)
        ok = bool(everyone[:, 2].all())
        if ok:
            seen = np.zeros(1, np.int64)
            for j, (pid, where, _) in enumerate(everyone.tolist()):
                if j == subset.index:
                    continue
                try:
                    cross_memory.read(pid, where, seen)
                except OSError:
                    ok = False
                    break
                if int(seen[0]) != pid:
                    ok = False
                    break
        verdicts = np.empty(len(subset.ranks), np.int64)
        self._complete(subset.comm.Iallgather(np.array([int(ok)], np.int64), verdicts), activity)
        return bool(verdicts.all())

    def reads_between(self, ranks):
        """Whether the shared-memory collectives over `ranks` read each other's memory in one copy where that moves
        less or spreads the copying (`cross_memory`; decided once per board, alike on every member). For tests."""
        subset = self._subsets.get(tuple(int(r) for r in ranks))  # (None: no collective over them yet here)
        board = subset.board if subset is not None and subset.board is not _UNSET else None
        return bool(board is not None and board.reads)

    def _waiter(self, activity, nbytes):
        return functools.partial(self._complete, activity=activity, nbytes=nbytes)

    def _shm_allreduce(self, board, activity, buf, out=None):
        """Every member's `buf` copied into its slot, the balanced chunks summed over all slots (each member its
        own chunk, in member order, into member 0's slot only: the others' slots are not read again, so writing the
        sum there too would be k - 1 chunks of stores for nothing), then the sum copied back from member 0's slot
        (an ordinary buffer: `shared_buffer` saves both copies, and keeps the sum in every slot), into `out` when
        given (out of place: `buf` is only read)."""
        wait = self._waiter(activity, buf.nbytes)
        self._exchange(board, wait, "allreduce", signature("allreduce", buf.dtype.str, buf.shape), buf.nbytes,
                       lambda slot: _put(slot, buf))
        k, me = len(board.ranks), board.block.index
        slots = [board.slot(j)[:buf.nbytes].view(buf.dtype) for j in range(k)]
        offsets = balanced_offsets(buf.size, k)
        chunk = slice(offsets[me], offsets[me + 1])
        acc = slots[0][chunk]  # the same additions in the same order as `sum_into_all`: the same bits
        for slot in slots[1:]:
            add_into(acc, slot[chunk])
        board.publish(wait)
        copy_into(buf if out is None else out, slots[0].reshape(buf.shape))

    def shared_buffer(self, shape, dtype, ranks):
        """A zeroed array that `allreduce_` / `iallreduce_` over `ranks` sum in place through memory shared by the
        members when they all run on this host (`shm.py`: no copies, measured 3-5x less CPU than MPI's all-reduce
        for a gradient bucket); an ordinary array otherwise. Every member calls it, with the same shape and dtype
        (a collective: the members meet first, so a missing one is reported, not waited for forever). The memory
        lives as long as this comm (MPI frees shared windows collectively: at the end of the job)."""
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        subset, activity = self._begin("shared buffer", ranks)
        if len(subset.ranks) == 1 or nbytes == 0:
            return np.zeros(shape, dtype)
        mine = np.array([zlib.crc32(MPI.Get_processor_name().encode()), nbytes], np.int64)
        everyone = np.empty((len(subset.ranks), 2), np.int64)
        self._complete(subset.comm.Iallgather(mine, everyone), activity)
        if (everyone[:, 1] != nbytes).any():
            raise ValueError("shared_buffer on rank %d: the members %s ask for different sizes (%s bytes)"
                             % (self._rank, _ranks_text(subset.ranks), ", ".join(map(str, everyone[:, 1]))))
        if (everyone[:, 0] != everyone[0, 0]).any() or not _one_world(subset.comm):
            # members on several hosts, or in MPI worlds joined into one job (`join.py`: processes of one host in
            # different worlds share no window): MPI's all-reduce moves the bytes (every member decides alike)
            return np.zeros(shape, dtype)
        # every member is at this call (the gather above completed), so the blocking allocation cannot wait forever
        block = SharedBlock(subset.comm, nbytes)
        block.ranks = subset.ranks
        out = block.slot(dtype, shape)
        out[...] = 0
        self._shared[_address(out)] = block
        return out

    def _exchange_counts(self, subset, activity, value):
        counts = np.empty(len(subset.ranks), np.int64)
        self._complete(subset.comm.Iallgather(np.array([value], np.int64), counts), activity)
        return [int(c) for c in counts]

    def allgatherv(self, local, ranks, axis=0, sizes=None):
        subset, activity = self._begin("allgatherv", ranks, carry=sizes is not None)
        local = np.asarray(local)
        axis = axis % local.ndim
        if sizes is None:
            sizes = self._exchange_counts(subset, activity, local.shape[axis])
        sizes = [int(s) for s in sizes]
        if len(sizes) != len(subset.ranks) or sizes[subset.index] != local.shape[axis]:
            raise ValueError("allgatherv on rank %d: sizes %r do not fit %d members and the local size %d"
                             % (self._rank, sizes, len(subset.ranks), local.shape[axis]))
        shape = local.shape[:axis] + (sum(sizes),) + local.shape[axis + 1:]
        blocks = _blocks(shape, axis, sizes, local.dtype)
        board = self._board_for(subset, activity, local.dtype != object)
        if board is not None:
            wait = self._waiter(activity, local.nbytes)
            out = board.arena.output(shape, local.dtype)
            self._exchange(board, wait, "allgatherv", signature("allgatherv", axis, local.dtype.str, shape, sizes),
                           local.nbytes, result=out, shape=shape)
            me, k = subset.index, len(subset.ranks)
            own = blocks.index[me]
            if board.pushing():  # every result in its member's arena: this member's block copied straight into each
                for j in [(me + r) % k for r in range(1, k)]:
                    copy_into(board.remote(j, shape, local.dtype)[own], local)
                copy_into(out[own], local)
                board.done(wait, [j for j in range(k) if j != me])
                return out
            # else each member's block copied into its slot, then from every slot into its place
            if out is None:
                out = np.empty(shape, local.dtype)
            board.stream(wait, [(0, local, out[own])], [reading(q, 0, out[index]) for q, index
                                                         in enumerate(blocks.index) if q != me])
            return out
        send = _contiguous(local)
        if not blocks.leading:  # every member's block lands straight in its columns of the result
            out = np.empty(shape, local.dtype)
            self._typed_exchange(subset, activity, [send] * len(sizes), [out[i] for i in blocks.index])
            return out
        recv, result = blocks.receiver()
        counts, displs = blocks.bytes()
        self._complete(subset.comm.Iallgatherv([send, MPI.BYTE], [recv, (counts, displs), MPI.BYTE]),
                       activity, nbytes=recv.nbytes)
        return result()

    def _typed_exchange(self, subset, activity, sends, recvs):
        """An all-to-all of strided arrays without packing (`_Typed`, MPI_Alltoallw): `sends[j]` to member j, into
        its `recvs[me]` (views of one array). Every member takes this path or none: it is chosen on what all of
        them know (the collective and the shapes), never on one member's memory layout."""
        out = _Typed.of(sends, copy=True)
        try:
            into = _Typed.of(recvs)
        except Exception:
            out.free()
            raise
        try:
            self._complete(subset.comm.Ialltoallw(out.spec(), into.spec()), activity,
                           nbytes=sum(v.nbytes for v in sends) + sum(v.nbytes for v in recvs))
        finally:
            out.free()
            into.free()

    def reduce_scatter(self, buf, ranks, axis=0, sizes=None):
        subset, activity = self._begin("reduce_scatter", ranks, carry=True)
        buf = np.asarray(buf)
        axis = axis % buf.ndim
        if sizes is None:
            sizes = balanced_sizes(buf.shape[axis], len(subset.ranks))
        sizes = [int(s) for s in sizes]
        if len(sizes) != len(subset.ranks) or sum(sizes) != buf.shape[axis] or min(sizes) < 0:
            raise ValueError("reduce_scatter on rank %d: sizes %r do not split %d rows over %d members"
                             % (self._rank, sizes, buf.shape[axis], len(subset.ranks)))
        blocks = _blocks(buf.shape, axis, sizes, buf.dtype)
        me = subset.index
        if len(subset.ranks) == 1:
            return buf.copy()
        board = self._board_for(subset, activity, buf.dtype != object)
        if board is not None:
            return self._shm_reduce_scatter(board, activity, buf, blocks)
        out = np.empty(blocks.block_shape(me), buf.dtype)
        # along another axis the addend is packed (one strided copy) for MPI's reduce-scatter: measured faster than
        # each member's rows coming straight from their strided places (MPI_Alltoallw) and summed here (3x on 4 ranks)
        send, op = _reduce_buffer(blocks.pack(buf))
        recv, _ = _reduce_buffer(out)
        self._complete(subset.comm.Ireduce_scatter(send, recv, blocks.counts, op=op), activity, nbytes=buf.nbytes)
        return out

    def _shm_reduce_scatter(self, board, activity, buf, blocks):
        """Two members, blocks along another axis than the first (P -> S(1)): each member's block of its addend
        is strided, which numpy adds several times slower as the first operand of a sum than copied first, and
        copying it costs a pass of its own. Instead each member copies the other's block of its addend straight into
        the other's result (in its arena: `Board.pushing`), and once the other has done the same, adds its own block
        into its result in place: a1 + a0 is a0 + a1 bit for bit (one addition: commutative), so the bits are the
        same; each byte is copied once and summed once (the copy of the own block is gone).

        Else each member copies the other members' blocks of its addend into its slot (packing strided blocks in that
        copy), next member's first (member j's slot holds the blocks of members j + 1, j + 2, ... mod k), chunk by
        chunk, saying how far it got; meanwhile it sums its own block over every member's, chunk by chunk, in member
        order (the same additions in the same order as summing whole blocks: the same bits), as far as the others
        have written it (`Board.reduce_stream`): readers sum what writers have just written, still in cache."""
        k, me, itemsize = len(board.ranks), board.block.index, buf.dtype.itemsize

        def start(owner, q):  # where member `owner`'s slot holds block q
            return sum(blocks.counts[(owner + r) % k] for r in range(1, (q - owner) % k)) * itemsize

        need = (blocks.total - blocks.counts[me]) * itemsize
        wait = self._waiter(activity, buf.nbytes)
        # (every member decides alike: the call's signature holds the axis and shape, and `pushing` what all of
        # them published)
        swap = k == 2 and blocks.axis != 0
        out = board.arena.output(blocks.block_shape(me), buf.dtype) if swap else None
        self._exchange(board, wait, "reduce_scatter", signature("reduce_scatter", blocks.axis, buf.dtype.str,
                                                                buf.shape, blocks.sizes), need,
                       result=out, shape=buf.shape)
        if swap and board.pushing():
            other = 1 - me
            copy_into(board.remote(other, blocks.block_shape(other), buf.dtype), buf[blocks.index[other]])
            board.done(wait, [other])
            add_into(out, buf[blocks.index[me]])
            return out
        if out is None:
            out = np.empty(blocks.block_shape(me), buf.dtype)
        writes = [(start(me, q), buf[blocks.index[q]]) for q in ((me + r) % k for r in range(1, k))]
        parts = [buf[blocks.index[me]] if j == me else (j, start(j, me)) for j in range(k)]
        board.reduce_stream(wait, writes, parts, out)
        return out

    def alltoallv(self, pieces, ranks, axis=0, recv_sizes=None, concat=False):
        subset, activity = self._begin("alltoallv", ranks, carry=recv_sizes is not None)
        members = len(subset.ranks)
        if len(pieces) != members:
            raise ValueError("alltoallv on rank %d: %d pieces for %d members" % (self._rank, len(pieces), members))
        pieces = [np.asarray(p) for p in pieces]
        own = pieces[subset.index]
        axis = axis % own.ndim
        for p in pieces:
            if p.dtype != own.dtype or p.ndim != own.ndim:
                raise ValueError("alltoallv on rank %d: pieces differ in dtype or rank (%s %s vs %s %s)"
                                 % (self._rank, p.dtype, p.shape, own.dtype, own.shape))
        if recv_sizes is None:
            sent = np.array([p.shape[axis] for p in pieces], np.int64)
            got = np.empty(members, np.int64)
            self._complete(subset.comm.Ialltoall(sent, got), activity)
            recv_sizes = got
        recv_sizes = [int(s) for s in recv_sizes]
        shape = own.shape[:axis] + (sum(recv_sizes),) + own.shape[axis + 1:]
        blocks = _blocks(shape, axis, recv_sizes, own.dtype)
        board = self._board_for(subset, activity, own.dtype != object)
        if concat:  # what arrives lands straight in its place of the joined result (in the arena: pushed there)
            received = board.arena.output(shape, own.dtype) if board is not None else None
            if received is None:
                received = np.empty(shape, own.dtype)
            views = [received[index] for index in blocks.index]
        else:  # one after the other in one buffer
            flat = np.empty(blocks.total, own.dtype)
            views = [flat[d:d + c].reshape(blocks.block_shape(q))
                     for q, (d, c) in enumerate(zip(blocks.displs, blocks.counts))]
        if board is not None:
            self._shm_alltoallv(board, activity, pieces, views, axis,
                                (received, shape, list(itertools.accumulate(recv_sizes, initial=0))) if concat
                                else None)
            return received if concat else views
        # strided pieces are read in place, what arrives lands in place (MPI_Alltoallw): on every member alike
        self._typed_exchange(subset, activity, pieces, views)
        return received if concat else views

    def _shm_alltoallv(self, board, activity, pieces, views, axis, joined=None):
        """When every member's joined result lies in its arena (`joined`: (result, its shape, where each member's
        piece starts along `axis`)), each member copies its pieces straight into their places in the others'
        results (one copy: strided pieces are read or written in place). Else each member publishes where the
        pieces for the others will lie in its slot, then copies them there (strided pieces packed in that copy)
        while it copies its own pieces from the others' slots straight into its views, as far as their writers have
        got (`Board.stream`)."""
        me, k = board.block.index, len(board.ranks)
        table = [0]
        for j, p in enumerate(pieces):
            table.append(table[-1] + (0 if j == me else p.nbytes))
        wait = self._waiter(activity, table[-1])
        own = pieces[me]
        result, shape, starts = joined if joined is not None else (None, (), None)
        tables = self._exchange(board, wait, "alltoallv", signature("alltoallv", axis, own.dtype.str, own.ndim),
                                table[-1], None, table, result=result,
                                shape=shape[:axis] + shape[axis + 1:], places=starts)
        wrong = [j for j, sizes in enumerate(tables)  # what member j sends here must fill the view it lands in
                 if j != me and int(sizes[me + 1] - sizes[me]) != views[j].nbytes]
        if joined is not None and board.pushing():
            for j in [(me + r) % k for r in range(1, k)]:
                starts = board.places[j]
                there = board.remote(j, shape[:axis] + (int(starts[k]),) + shape[axis + 1:], own.dtype)
                place = there[(slice(None),) * axis + (slice(int(starts[me]), int(starts[me + 1])),)]
                if place.size == pieces[j].size:  # its bytes in C order, as through a slot (else member j raises)
                    copy_into(place, pieces[j].reshape(place.shape))
            copy_into(views[me], own)
            board.done(wait, [j for j in range(k) if j != me])
        else:  # what this member sends is written even when what it receives is wrong: the others' calls complete
            board.stream(wait, [(table[j], p) for j, p in enumerate(pieces) if j != me],
                         [reading(j, int(tables[j][me]), view) for j, view in enumerate(views)
                          if j != me and j not in wrong], meanwhile=lambda: copy_into(views[me], own))
        if wrong:
            j = wrong[0]
            raise ValueError("alltoallv on rank %d: rank %d sends %d bytes, %d expected for %s %s"
                             % (self._rank, board.ranks[j], int(tables[j][me + 1] - tables[j][me]), views[j].nbytes,
                                views[j].dtype, views[j].shape))

    def bcast(self, buf, root, ranks):
        if self._rank != root:
            return self.bcast_(buf, root, ranks)
        return self.bcast_(buf, root, ranks, copy=True)

    def bcast_(self, buf, root, ranks, copy=False):
        """(`copy`, on the root: a copy of `buf` is returned (`bcast`), made in the copy the others read from.)"""
        subset, activity = self._begin("bcast", ranks, carry=True)
        if root not in subset.ranks:
            raise ValueError("bcast_ root %r is not one of the member ranks %r" % (root, subset.ranks))
        board = self._board_for(subset, activity, len(subset.ranks) > 1 and isinstance(buf, np.ndarray) and
                                buf.dtype != object)
        out = None
        if copy:
            out = board.arena.output(buf.shape, buf.dtype) if board is not None else None
            if out is None:
                out = np.empty(np.shape(buf), np.asarray(buf).dtype)
        if board is not None:
            wait = self._waiter(activity, buf.nbytes)
            at_root = self._rank == root
            index = subset.ranks.index(root)
            self._exchange(board, wait, "bcast", signature("bcast", root, buf.dtype.str, buf.shape),
                           buf.nbytes if at_root else 0, result=out)
            others = [j for j in range(len(subset.ranks)) if j != index]
            if board.pushing([index]):  # the root's copy lies in its arena: the others read it from there
                if at_root:
                    board.serve(buf, out)
                    board.done(wait, others)  # (its copy is handed out only once nobody reads it any more)
                    return out
                board.stream(wait, [], [reading(index, 0, buf, board.remote_bytes(index, buf.nbytes))])
                board.done(wait)
                return buf
            # else the root's buffer copied into its slot, then into every member's buffer
            if at_root:
                board.stream(wait, [(0, buf) if out is None else (0, buf, out)], [])
                return buf if out is None else out
            board.stream(wait, [], [reading(index, 0, buf)])
            return buf
        if out is not None:
            out[...] = buf
            buf = out
        work = _contiguous(buf)
        if len(subset.ranks) > 1:
            self._complete(subset.comm.Ibcast([work, MPI.BYTE], root=subset.ranks.index(root)), activity,
                           nbytes=work.nbytes)
            if work is not buf:
                buf[...] = work
        return buf

    def reduce(self, buf, root, ranks):
        """(The root's sum a new array, in its arena where there is room: its own addend is read where it lies,
        summed with the first other one in one pass, never copied first.)"""
        return self._reduce(buf, root, ranks, fresh=True)

    def reduce_(self, buf, root, ranks):
        return self._reduce(buf, root, ranks, fresh=False)

    def _reduce(self, buf, root, ranks, fresh):
        subset, activity = self._begin("reduce", ranks, carry=True)
        if root not in subset.ranks:
            raise ValueError("reduce_ root %r is not one of the member ranks %r" % (root, subset.ranks))
        at_root = self._rank == root
        if len(subset.ranks) == 1:
            return buf.copy() if fresh else buf
        board = self._board_for(subset, activity, isinstance(buf, np.ndarray) and buf.dtype != object)
        if board is not None:
            # every other member's addend copied into its slot, chunk by chunk, while the root sums each chunk in
            # member order as soon as every member wrote it (`Board.reduce_stream`)
            wait = self._waiter(activity, buf.nbytes)
            total = None
            if at_root and fresh:  # (made before the call: a full arena grows at its end, alike on every member)
                total = board.arena.output(buf.shape, buf.dtype)
            self._exchange(board, wait, "reduce", signature("reduce", root, buf.dtype.str, buf.shape),
                           0 if at_root else buf.nbytes)
            if not at_root:
                board.stream(wait, [(0, buf)], [])
                return buf
            me, k = subset.index, len(subset.ranks)
            parts = [buf if j == me else (j, 0) for j in range(k)]
            if k == 2:  # a + b is b + a, bit for bit: the root's own addend first
                parts = [buf, (1 - me, 0)]
            if not fresh and parts[0] is buf and buf.flags.c_contiguous:  # summed in place
                board.reduce_stream(wait, [], parts, buf)
                return buf
            if total is None:
                total = np.empty(buf.shape, buf.dtype)
            board.reduce_stream(wait, [], parts, total)
            if fresh:
                return total
            copy_into(buf, total)
            return buf
        if at_root and fresh:
            buf = buf.copy()
        work = _contiguous(buf)
        data, op = _reduce_buffer(work)
        self._complete(subset.comm.Ireduce(MPI.IN_PLACE if at_root else data, data if at_root else None, op=op,
                                           root=subset.ranks.index(root)), activity, nbytes=work.nbytes)
        if at_root and work is not buf:
            buf[...] = work
        return buf

    def gatherv(self, local, root, ranks, axis=0, sizes=None):
        subset, activity = self._begin("gatherv", ranks, carry=True)
        if root not in subset.ranks:
            raise ValueError("gatherv root %r is not one of the member ranks %r" % (root, subset.ranks))
        local = np.asarray(local)
        axis = axis % local.ndim
        at_root = self._rank == root
        root_index = subset.ranks.index(root)
        board = self._board_for(subset, activity, len(subset.ranks) > 1 and local.dtype != object)
        if board is not None:
            return self._shm_gatherv(board, activity, local, root, axis, sizes)
        if sizes is None:
            counts = np.empty(len(subset.ranks), np.int64) if at_root else None
            self._complete(subset.comm.Igather(np.array([local.shape[axis]], np.int64), counts, root=root_index),
                           activity)
            sizes = [int(c) for c in counts] if at_root else None
        else:
            sizes = [int(s) for s in sizes]
            if len(sizes) != len(subset.ranks) or sizes[subset.index] != local.shape[axis]:
                raise ValueError("gatherv on rank %d: sizes %r do not fit %d members and the local size %d"
                                 % (self._rank, sizes, len(subset.ranks), local.shape[axis]))
        if not at_root:
            self._complete(subset.comm.Igatherv([_contiguous(local), MPI.BYTE], None, root=root_index), activity,
                           nbytes=local.nbytes)
            return None
        shape = local.shape[:axis] + (sum(sizes),) + local.shape[axis + 1:]
        blocks = _blocks(shape, axis, sizes, local.dtype)
        recv, result = blocks.receiver()
        if len(subset.ranks) == 1:
            return local.copy()
        counts, displs = blocks.bytes()
        self._complete(subset.comm.Igatherv([_contiguous(local), MPI.BYTE], [recv, (counts, displs), MPI.BYTE],
                                            root=root_index), activity, nbytes=recv.nbytes)
        return result()

    def _shm_gatherv(self, board, activity, local, root, axis, sizes):
        """The members publish their sizes along `axis`. With `sizes` given, the root's result lies in its arena
        (`shm.Arena`) and every member copies its piece straight into its place there. Else every member but the
        root copies its piece into its slot, chunk by chunk, while the root copies each chunk written so far
        straight into its place of the result (`Board.stream`), and its own piece meanwhile."""
        me, at_root = board.block.index, self._rank == root
        if sizes is not None:
            sizes = [int(s) for s in sizes]
            if len(sizes) != len(board.ranks) or sizes[me] != local.shape[axis]:
                raise ValueError("gatherv on rank %d: sizes %r do not fit %d members and the local size %d"
                                 % (self._rank, sizes, len(board.ranks), local.shape[axis]))
        wait = self._waiter(activity, local.nbytes)
        rest = local.shape[:axis] + local.shape[axis + 1:]
        # with the sizes known, the root's result is made first, in its arena: the others copy straight into it
        shape = local.shape[:axis] + (sum(sizes),) + local.shape[axis + 1:] if sizes is not None else None
        out = board.arena.output(shape, local.dtype) if at_root and sizes is not None else None
        index = board.ranks.index(root)
        tables = self._exchange(board, wait, "gatherv", signature("gatherv", root, axis, local.dtype.str, rest),
                                0 if at_root else local.nbytes, None, [local.shape[axis]] + [0] * len(board.ranks),
                                result=out, shape=shape or ())
        got = [int(t[0]) for t in tables]
        pushed = board.pushing([index])  # the root's result in its arena, and everyone expects its shape
        if pushed:  # each member's piece copied straight into its place there (in bounds: sizes[me] rows)
            place = _blocks(shape, axis, sizes, local.dtype).index[me]
            if at_root:
                copy_into(out[place], local)
                board.done(wait, [j for j in range(len(board.ranks)) if j != me])
            else:
                copy_into(board.remote(index, shape, local.dtype)[place], local)
                board.done(wait)
        if sizes is not None and got != sizes:
            raise ValueError("gatherv on rank %d: the members hold %r rows along axis %d, not the sizes %r"
                             % (self._rank, got, axis, sizes))
        if pushed:
            return out
        if not at_root:
            board.stream(wait, [(0, local)], [])
            return None
        shape = local.shape[:axis] + (sum(got),) + local.shape[axis + 1:]
        blocks = _blocks(shape, axis, got, local.dtype)
        out = np.empty(shape, local.dtype)
        own = blocks.index[me]
        board.stream(wait, [], [reading(q, 0, out[index]) for q, index in enumerate(blocks.index) if q != me],
                     meanwhile=lambda: copy_into(out[own], local))
        return out

    # ----- point to point -------------------------------------------------------------------------------------

    def _peer(self, peer, what):
        if self._carried is not None:
            self._flush_carried()
        peer = int(peer)
        if not 0 <= peer < self._size or peer == self._rank:
            raise ValueError("%s: rank %d cannot exchange with rank %r (world size %d)"
                             % (what, self._rank, peer, self._size))
        self._p2p_count += 1
        counts = self._sent_to if what.startswith("send") else self._received_from
        counts[peer] = counts.get(peer, 0) + 1
        return peer, _Activity("%s rank %d" % (what, peer), tuple(sorted((self._rank, peer))), self._p2p_count,
                               peer, counts[peer])

    def send(self, buf, dst):
        dst, activity = self._peer(dst, "send to")
        work = _contiguous(buf)
        self._complete(self._data.Isend([work, MPI.BYTE], dest=dst, tag=_TAG_P2P), activity, nbytes=work.nbytes)

    def recv(self, buf_or_shape, src, dtype=np.float32):
        src, activity = self._peer(src, "recv from")
        if isinstance(buf_or_shape, np.ndarray):
            buf = buf_or_shape
        else:
            buf = np.empty(tuple(buf_or_shape), dtype)
        work = _contiguous(buf)
        status = MPI.Status()
        self._complete(self._data.Irecv([work, MPI.BYTE], source=src, tag=_TAG_P2P), activity, status,
                       nbytes=work.nbytes)
        received = status.Get_count(MPI.BYTE)
        if received != work.nbytes:
            raise ValueError("recv on rank %d: expected %d bytes from rank %d for %s %s, got %d"
                             % (self._rank, work.nbytes, src, buf.dtype, buf.shape, received))
        if work is not buf:
            buf[...] = work
        return buf

    def exchange(self, sends, recvs):
        sends, recvs = list(sends), list(recvs)
        peers = set()
        for peer, _ in sends + recvs:
            peer = int(peer)
            if not 0 <= peer < self._size or peer == self._rank:
                raise ValueError("exchange: rank %d cannot exchange with rank %r (world size %d)"
                                 % (self._rank, peer, self._size))
            peers.add(peer)
        check = self._carried
        if check is not None:
            if self._use_shm and len(check.members) > 1 and self._rank in check.members and \
                    peers <= set(check.members):
                # the operation's identity check is over every rank taking part (a slice-boxing's): the exchange
                # goes on the members' board, carrying the check (members with nothing to move make the check on
                # its own there at the end of the operation: the same board call)
                subset, activity = self._begin("identity check", check.members, carry=True)
                board = self._board(subset, activity)
                if board is not None:
                    return self._shm_exchange(board, activity, sends, recvs)
            self._flush_carried()
        return self._mpi_exchange(sends, recvs, peers)

    def _shm_exchange(self, board, activity, sends, recvs):
        """`exchange` in one arrival on the board of the members of the operation's identity check, which rides in
        it: each member publishes the bytes it sends to each member (its table) and, as a receiver, one result in
        its arena holding what it receives, one sender after the other in member order, and where each sender's
        bytes start there (its places); where the members may read each other's memory (`board.reads`,
        `cross_memory`), also the address of each piece it sends that is one contiguous run. Then each byte moves in
        one copy: a receiver reads a piece offered that way straight out of its sender's memory (the receivers of
        one sender all at once, the sender copying nothing: a 1 -> k split no longer makes its sender copy every
        piece in turn); else each sender copies its pieces straight into the receivers' results (strided pieces
        read in place, `Board.remote`). Each says when it is done, and a member hands its result out, or lets its
        caller change what it sent, only once the members that read from it or wrote into it are done. Where a
        receiver's result found no room in its arena (or is small) and nothing may be read, and where a sender sends
        to several receivers that may not read it (they pull from it in parallel over MPI, where pushing would make
        one rank copy everything), those messages go over MPI after the arrival: every member decides alike, from
        the headers all of them read."""
        me, k = board.block.index, board.k
        index = {r: i for i, r in enumerate(board.ranks)}
        table, outgoing = [0] * (k + 1), [[] for _ in range(k)]
        for peer, buf in sends:
            outgoing[index[int(peer)]].append(np.asarray(buf))
        for j in range(k):
            table[j + 1] = table[j] + sum(a.nbytes for a in outgoing[j])
        incoming = [[] for _ in range(k)]
        for n, (peer, buf) in enumerate(recvs):
            incoming[index[int(peer)]].append(n)
        places = [0] * (k + 1)
        for j in range(k):
            places[j + 1] = places[j] + sum(recvs[n][1].nbytes for n in incoming[j])
        result = board.arena.output((places[k],), np.uint8) \
            if recvs and not any(buf.dtype.hasobject for _, buf in recvs) else None
        sources = None
        if board.reads:  # (the same on every member: decided once per board)
            sources = [os.getpid()] + [cross_memory.address(out[0]) if len(out) == 1 and out[0].nbytes and
                                       out[0].flags.c_contiguous and not out[0].dtype.hasobject else 0
                                       for out in outgoing]
        wait = self._waiter(activity, table[k] + places[k])
        tables = self._exchange(board, wait, "check", 0, 0, None, table, result=result, places=places, joined=True,
                                sources=sources)
        # A member whose operation made its check earlier (it communicated before this exchange: a reduce-scatter
        # over the source ranks first) made it on its own in this same board call, moving nothing: its messages go
        # over MPI, where it sends or receives them later. Between members that both move data in the call, a
        # receiver reads a pair's bytes where its sender offered them, else they go straight into the receiver's
        # result, unless the receiver's result found no room, or some sender sends to several receivers (they pull
        # from it over MPI, in parallel, where pushing would make one rank copy everything). Every member decides
        # alike, on the headers all of them read.
        joined = board.joined
        sizes = np.diff(tables, axis=1)  # [sender, receiver]: bytes (zeros for a member that moves nothing here)
        offered = board.sources
        # a sender's bytes must fill what its receiver expects (both moving data here): else the receiver raises,
        # and nothing moves between them
        expects = [[int(board.places[b][a + 1] - board.places[b][a]) for b in range(k)] for a in range(k)]
        reads = [[offered is not None and a != b and joined[a] and joined[b] and int(offered[a][1 + b]) != 0 and
                  sizes[a, b] > 0 and sizes[a, b] == expects[a][b] for b in range(k)] for a in range(k)]
        pushing = max(sum(1 for b in range(k) if sizes[a, b] > 0 and not reads[a][b]) for a in range(k)) <= 1
        by_board = [[not reads[a][b] and pushing and joined[a] and joined[b] and board.results[b] is not None
                     for b in range(k)] for a in range(k)]
        got = [buf for _, buf in recvs]
        wrong = [j for j in range(k) if j != me and joined[j] and sizes[j, me] != places[j + 1] - places[j]]
        fits = [j == me or not joined[j] or sizes[me, j] == expects[me][j] for j in range(k)]
        pushes = [j for j in range(k) if by_board[me][j] and outgoing[j] and fits[j]]
        for j in pushes:  # straight into receiver j's result, in the order the pieces are listed
            there = board.remote_bytes(j, int(board.places[j][k]))
            at = int(board.places[j][me])
            for a in outgoing[j]:
                copy_into(there[at:at + a.nbytes].view(a.dtype).reshape(a.shape), a)
                at += a.nbytes
        failed = None
        pulled = [j for j in range(k) if reads[j][me] and incoming[j]]
        for j in pulled:  # read out of sender j's memory: into this member's result, or the caller's buffer
            nbytes = int(sizes[j, me])
            only = recvs[incoming[j][0]][1] if len(incoming[j]) == 1 else None
            in_place = result is None and isinstance(only, np.ndarray) and only.flags.c_contiguous and \
                only.flags.writeable and not only.dtype.hasobject
            if result is not None:
                into = result[places[j]:places[j + 1]]
            elif in_place:
                into = only.reshape(-1).view(np.uint8)
            else:
                into = np.empty(nbytes, np.uint8)
            try:
                cross_memory.read(int(offered[j][0]), int(offered[j][1 + me]), into)
            except OSError as e:
                failed = (j, e)
                break
            PASSES["copied"] += nbytes
            PASSES["read"] += nbytes
            at = 0
            for n in incoming[j]:
                buf = recvs[n][1]
                if not in_place:
                    got[n] = into[at:at + buf.nbytes].view(buf.dtype).reshape(buf.shape)
                at += buf.nbytes
        senders = [j for j in range(k) if by_board[j][me] and incoming[j] and j not in wrong]
        readers = [b for b in range(k) if reads[me][b] and outgoing[b]]
        if pushes or senders or pulled or readers:
            board.done(wait, senders + readers)  # (a member that failed to read says so too: its sender goes on)
        if failed is not None:
            j, e = failed
            raise CommError("exchange on rank %d: reading the %d bytes rank %d offers failed (%s): the ranks may not "
                            "read each other's memory (set %s=0)" % (self._rank, int(sizes[j, me]), board.ranks[j], e,
                                                                    cross_memory.READ_ENV))
        for j in senders:
            at = places[j]
            for n in incoming[j]:
                buf = recvs[n][1]
                got[n] = result[at:at + buf.nbytes].view(buf.dtype).reshape(buf.shape)
                at += buf.nbytes
        if wrong:
            j = wrong[0]
            raise ValueError("exchange on rank %d: expected %d bytes from rank %d, got %d"
                             % (self._rank, places[j + 1] - places[j], board.ranks[j], sizes[j, me]))
        # the rest goes over MPI (the same pairs on both sides)
        mpi_sends = [(p, b) for p, b in sends if not by_board[me][index[int(p)]] and not reads[me][index[int(p)]]
                     and fits[index[int(p)]]]
        mpi_recvs = [(n, p, b) for n, (p, b) in enumerate(recvs) if not by_board[index[int(p)]][me]
                     and not reads[index[int(p)]][me]]
        if mpi_sends or mpi_recvs:
            done = self._mpi_exchange(mpi_sends, [(p, b) for _, p, b in mpi_recvs],
                                      {int(p) for p, _ in mpi_sends} | {int(p) for _, p, _ in mpi_recvs})
            for (n, _, _), buf in zip(mpi_recvs, done):
                got[n] = buf
        return got

    def _mpi_exchange(self, sends, recvs, peers):
        if not peers:
            return [buf for _, buf in recvs]
        _exit_request.clear()
        needs = {}
        for peer, _ in sends:  # a departed peer that received this many messages from us reached this exchange
            self._sent_to[peer] = self._sent_to.get(peer, 0) + 1
            needs[peer] = ("send", self._sent_to[peer])
        for peer, _ in recvs:  # ... or that sent us this many (the stronger sign: it wins over a send)
            self._received_from[peer] = self._received_from.get(peer, 0) + 1
            needs[peer] = ("recv", self._received_from[peer])
        self._p2p_count += 1
        ranks = tuple(sorted(peers | {self._rank}))
        activity = _Activity("exchange with ranks %s" % _ranks_text(sorted(peers)), ranks, self._p2p_count,
                             needs=needs)
        works = [_contiguous(buf) for _, buf in recvs]
        requests = [self._data.Irecv([work, MPI.BYTE], source=int(peer), tag=_TAG_EXCHANGE)
                    for (peer, _), work in zip(recvs, works)]
        outgoing = [_contiguous(np.asarray(buf)) for _, buf in sends]  # alive until every send completes
        requests += [self._data.Isend([data, MPI.BYTE], dest=int(peer), tag=_TAG_EXCHANGE)
                     for (peer, _), data in zip(sends, outgoing)]
        statuses = [MPI.Status() for _ in requests]
        self._complete(requests, activity, statuses, nbytes=sum(w.nbytes for w in works + outgoing))
        out = []
        for (peer, buf), work, status in zip(recvs, works, statuses):
            received = status.Get_count(MPI.BYTE)
            if received != work.nbytes:
                raise ValueError("exchange on rank %d: expected %d bytes from rank %d for %s %s, got %d"
                                 % (self._rank, work.nbytes, peer, buf.dtype, buf.shape, received))
            if work is not buf:
                buf[...] = work
            out.append(buf)
        return out

    # ----- small control data over the world ------------------------------------------------------------

    def bcast_object(self, obj, root=0):
        """(The object travels with the name of the function that broadcasts it, `_caller`: a rank that receives
        another function's object fails naming both, where the two would otherwise pair up silently.)"""
        subset, activity = self._begin("bcast_object", tuple(range(self._size)))
        if not 0 <= root < self._size:
            raise ValueError("bcast_object root %r out of range for world size %d" % (root, self._size))
        if self._size == 1:
            return obj
        here = _caller()
        payload = pickle.dumps((here, obj), protocol=pickle.HIGHEST_PROTOCOL) if self._rank == root else b""
        length = np.array([len(payload)], np.int64)
        self._complete(subset.comm.Ibcast(length, root=root), activity)
        data = np.frombuffer(payload, np.uint8).copy() if self._rank == root else np.empty(int(length[0]), np.uint8)
        self._complete(subset.comm.Ibcast([data, MPI.BYTE], root=root), activity)
        if self._rank == root:
            return obj
        there, received = pickle.loads(data.tobytes())
        if there != here:
            raise CommError("rank %d: bcast_object in %s received rank %d's bcast_object from %s: the ranks run "
                            "different operations" % (self._rank, here, root, there))
        return received

    def allgather_object(self, obj):
        """(Each object travels with the name of the function that gathers it, as in `bcast_object`.)"""
        subset, activity = self._begin("allgather_object", tuple(range(self._size)))
        if self._size == 1:
            return [obj]
        here = _caller()
        payload = np.frombuffer(pickle.dumps((here, obj), protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        counts = self._exchange_counts(subset, activity, payload.size)
        displs, total = _byte_layout(counts)
        data = np.empty(total, np.uint8)
        request = subset.comm.Iallgatherv([payload, MPI.BYTE], [data, (counts, displs), MPI.BYTE])
        self._complete(request, activity)
        out = []
        for r in range(self._size):
            if r == self._rank:
                out.append(obj)
                continue
            there, received = pickle.loads(data[displs[r]:displs[r] + counts[r]].tobytes())
            if there != here:
                raise CommError("rank %d: allgather_object in %s met rank %d's allgather_object in %s: the ranks "
                                "run different operations" % (self._rank, here, r, there))
            out.append(received)
        return out


def _caller():
    """The module and function that called the comm (`module.function`), skipping the comm package's own frames
    (wrappers such as the NCCL and recording comms): what every rank names alike when it runs the same code."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(__package__ + "."):
        frame = frame.f_back
    if frame is None:
        return "?"
    return "%s.%s" % (frame.f_globals.get("__name__", "?"), frame.f_code.co_name)


def _describe_states(pairs):
    """(rank, readable text) for ranks that answered with a state other than the timed-out collective."""
    for rank, state in pairs:
        if state is None:
            yield rank, "outside any collective"
        else:
            name, ranks, number, where = state
            yield rank, _Activity(name, ranks, number, where=where).describe()


_handlers_installed = False
# the status the main thread last passed to sys.exit (SystemExit itself never reaches an excepthook)
_exit_request = {}


def install_failure_handlers():
    """Make an uncaught exception on any rank (main thread or any other thread) end every rank within seconds.

    The traceback goes to stderr with every line prefixed `[rank r] `; once the launcher has read it (bounded
    wait), the other ranks are told (they end themselves should the launcher not act on the abort) and
    MPI_COMM_WORLD is aborted with exit code 1. A non-zero `sys.exit(n)` does the same with exit code n; any other
    exit tells the other ranks that this rank leaves (`MPIComm.tell_others_this_rank_leaves`). Idempotent.
    """
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    rank = _job["comm"].Get_rank()

    def report_and_abort(exc_type, exc_value, exc_traceback, where=""):
        prefix = "[rank %d] " % rank
        text = "".join(traceback.format_exception(exc_type, exc_value, exc_traceback))
        header = "%suncaught exception%s; aborting all ranks\n" % (prefix, where)
        lines = "".join(prefix + line + "\n" for line in text.rstrip("\n").split("\n"))
        say_and_abort(header + lines, 1)

    def say_and_abort(report, code):
        """`report` to stderr, read by the launcher (bounded wait), the other ranks told, then MPI_Abort(code)."""
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        try:
            stream = unprefixed_stderr()
            stream.write(report)
            stream.flush()
        except (OSError, ValueError):
            pass
        wait_until_output_is_read()
        for comm in list(_live_comms):
            try:
                comm.tell_others_this_rank_fails()
            except Exception:  # noqa: BLE001 (a broken comm must not keep this rank from aborting)
                pass
        _job["comm"].Abort(code)

    def excepthook(exc_type, exc_value, exc_traceback):
        report_and_abort(exc_type, exc_value, exc_traceback)

    def thread_excepthook(args):
        if args.exc_type is SystemExit:
            return  # a thread calling sys.exit ends only itself, as in plain Python
        name = getattr(args.thread, "name", "?")
        report_and_abort(args.exc_type, args.exc_value, args.exc_traceback, " in thread %r" % name)

    def recording_exit(status=None, _exit=sys.exit):
        if threading.current_thread() is threading.main_thread():
            _exit_request["status"] = status
        _exit(status)

    def on_exit():
        # Runs before MPI_Finalize (registered after mpi4py's own exit handler). Under plain mpiexec a rank
        # leaving with sys.exit(n) would finalize MPI and leave the others waiting until their timeout: a non-zero
        # exit of one rank ends the job now, like an uncaught exception. Any other exit (the end of the program,
        # sys.exit(0), a bare SystemExit whose status Python does not tell) is announced to the other ranks, so
        # that one still waiting for this rank in a collective fails at once naming it.
        status = _exit_request.get("status")
        code = 0 if status is None else status if isinstance(status, int) else 1
        if not code:
            for comm in list(_live_comms):
                try:
                    comm.tell_others_this_rank_leaves()
                except Exception:  # noqa: BLE001 (leaving must not fail on a broken comm)
                    pass
            return
        say_and_abort("[rank %d] exited with code %d (sys.exit(%r)); ending all ranks\n" % (rank, code, status), code)

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    sys.exit = recording_exit
    atexit.register(on_exit)
