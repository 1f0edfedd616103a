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
from .process_comm import CollectiveTimeout, CommError, ProcessComm, balanced_sizes, check_ranks

QUERY_WINDOW_S = 1.0      # how long a timed-out rank waits for the other members to say where they are
PEER_FAILURE_GRACE_S = 3.0  # how long the other ranks leave the launcher to act on a failed rank's MPI_Abort

# Tags on the data communicator (user-level send/recv and the subset rendezvous must not match each other).
_TAG_P2P = 1
_TAG_RENDEZVOUS = 2
_TAG_CREATE_GROUP = 3
# Tags on the control communicator.
_TAG_QUERY = 11
_TAG_REPLY = 12
_TAG_FAILED = 13          # "this rank failed and is aborting the job", sent to every other member
_TAG_LEFT = 14            # "this rank leaves the program", with how far it got (`_Departure`)
LEAVE_NOTE_LIMIT_S = 0.5  # how long a leaving rank waits for its notes to go out

# Polling schedule: spin first (the common case completes in microseconds to milliseconds), then yield the
# core, then sleep. With at most one rank per core a waiting rank owns its core, so it spins for the whole
# first phase, like a blocking MPI call; with more ranks than cores it yields almost at once, so that the
# peer it waits for can run.
_SPIN_OWN_CORE_S = 0.05
_SPIN_SHARED_CORE_S = 0.0002
_YIELD_S = 0.05
_SLEEP_S = 0.0005
_SERVE_EVERY_S = 0.005


class _Subset:
    """A communicator over a sorted tuple of world ranks, with this rank's index and a count of its collectives."""
    __slots__ = ("ranks", "comm", "index", "count")

    def __init__(self, ranks, comm, index):
        self.ranks = ranks
        self.comm = comm
        self.index = index
        self.count = 0


class _Activity:
    """What this rank is waiting for: shown to other ranks that ask, and in timeout messages. `peer` and `index`
    place a send or receive among the messages exchanged with that peer (None for collectives)."""
    __slots__ = ("name", "ranks", "number", "peer", "index")

    def __init__(self, name, ranks, number, peer=None, index=None):
        self.name = name
        self.ranks = ranks
        self.number = number
        self.peer = peer
        self.index = index

    def key(self):
        return (self.name, self.ranks, self.number)

    def describe(self):
        return "%s #%d over ranks %s" % (self.name, self.number, _ranks_text(self.ranks))


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
        if activity.peer is not None:
            done = self.sent if activity.name.startswith("recv") else self.received
            return done.get(me, 0) >= activity.index
        return self.begun.get(activity.ranks, -1) >= activity.number


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


def _axis_first(array, axis):
    """`array` with `axis` moved to the front, C-contiguous (no copy when axis is 0 and it already is)."""
    return _contiguous(np.moveaxis(array, axis, 0) if axis else array)


def _axis_back(front, axis):
    return np.ascontiguousarray(np.moveaxis(front, 0, axis)) if axis else front


def _byte_layout(counts):
    displs, total = [], 0
    for count in counts:
        displs.append(total)
        total += count
    return displs, total


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
        oversubscribed = detect_local_size() > usable_cores()
        self._spin_s = _SPIN_SHARED_CORE_S if oversubscribed else _SPIN_OWN_CORE_S
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

    def _complete(self, request, activity, status=None):
        """Poll `request` (one Request, or a list of them) to completion; on timeout find out where the other
        members are and raise `CollectiveTimeout`."""
        if isinstance(request, list):
            test = functools.partial(MPI.Request.Testall, request)
        elif status is not None:
            test = functools.partial(request.Test, status)
        else:
            test = request.Test
        if test():
            return
        self._current = activity
        try:
            started = time.perf_counter()
            deadline = started + self._timeout
            warn_at = started + self._timeout / 2
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
                if waited >= _YIELD_S:
                    time.sleep(_SLEEP_S)
                elif waited >= self._spin_s:
                    time.sleep(0)
        finally:
            self._current = None

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

    def _begin(self, name, ranks):
        _exit_request.clear()  # a collective after sys.exit(n): the SystemExit was caught, the rank goes on
        subset = self._subset(ranks if isinstance(ranks, tuple) else tuple(ranks))
        subset.count += 1
        where = self.context() if self.context is not None else None
        if where:  # what the caller is running (an eager global op): timeout reports name it on every rank
            name = "%s in %s" % (name, where)
        return subset, _Activity(name, subset.ranks, subset.count)

    # ----- collectives over subsets ----------------------------------------------------------------------

    def barrier(self):
        subset, activity = self._begin("barrier", tuple(range(self._size)))
        self._complete(subset.comm.Ibarrier(), activity)

    def allreduce_(self, buf, ranks):
        subset, activity = self._begin("allreduce", ranks)
        work = _contiguous(buf)
        if len(subset.ranks) > 1:
            data, op = _reduce_buffer(work)
            self._complete(subset.comm.Iallreduce(MPI.IN_PLACE, data, op=op), activity)
            if work is not buf:
                buf[...] = work
        return buf

    def _exchange_counts(self, subset, activity, value):
        counts = np.empty(len(subset.ranks), np.int64)
        self._complete(subset.comm.Iallgather(np.array([value], np.int64), counts), activity)
        return [int(c) for c in counts]

    def allgatherv(self, local, ranks, axis=0, sizes=None):
        subset, activity = self._begin("allgatherv", ranks)
        local = np.asarray(local)
        axis = axis % local.ndim
        if sizes is None:
            sizes = self._exchange_counts(subset, activity, local.shape[axis])
        sizes = [int(s) for s in sizes]
        if len(sizes) != len(subset.ranks) or sizes[subset.index] != local.shape[axis]:
            raise ValueError("allgatherv on rank %d: sizes %r do not fit %d members and the local size %d"
                             % (self._rank, sizes, len(subset.ranks), local.shape[axis]))
        front = _axis_first(local, axis)
        rest = front.shape[1:]
        row_bytes = front.dtype.itemsize * int(np.prod(rest, dtype=np.int64))
        counts = [s * row_bytes for s in sizes]
        displs, _ = _byte_layout(counts)
        out = np.empty((sum(sizes),) + rest, front.dtype)
        self._complete(subset.comm.Iallgatherv([front, MPI.BYTE], [out, (counts, displs), MPI.BYTE]), activity)
        return _axis_back(out, axis)

    def reduce_scatter(self, buf, ranks, axis=0):
        subset, activity = self._begin("reduce_scatter", ranks)
        buf = np.asarray(buf)
        axis = axis % buf.ndim
        front = _axis_first(buf, axis)
        sizes = balanced_sizes(front.shape[0], len(subset.ranks))
        row_elems = int(np.prod(front.shape[1:], dtype=np.int64))
        out = np.empty((sizes[subset.index],) + front.shape[1:], front.dtype)
        if len(subset.ranks) == 1:
            out[...] = front
        else:
            send, op = _reduce_buffer(front)
            recv, _ = _reduce_buffer(out)
            counts = [s * row_elems for s in sizes]
            self._complete(subset.comm.Ireduce_scatter(send, recv, counts, op=op), activity)
        return _axis_back(out, axis)

    def alltoallv(self, pieces, ranks, axis=0, recv_sizes=None):
        subset, activity = self._begin("alltoallv", ranks)
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
        send_counts = [p.nbytes for p in pieces]
        send_displs, send_total = _byte_layout(send_counts)
        sendbuf = np.empty(send_total, np.uint8)
        for p, start, count in zip(pieces, send_displs, send_counts):
            sendbuf[start:start + count] = _contiguous(p).reshape(-1).view(np.uint8)
        shapes = []
        for size in recv_sizes:
            shape = list(own.shape)
            shape[axis] = size
            shapes.append(tuple(shape))
        recv_counts = [int(np.prod(s, dtype=np.int64)) * own.dtype.itemsize for s in shapes]
        recv_displs, recv_total = _byte_layout(recv_counts)
        recvbuf = np.empty(recv_total, np.uint8)
        self._complete(subset.comm.Ialltoallv([sendbuf, (send_counts, send_displs), MPI.BYTE],
                                              [recvbuf, (recv_counts, recv_displs), MPI.BYTE]), activity)
        return [recvbuf[start:start + count].view(own.dtype).reshape(shape)
                for start, count, shape in zip(recv_displs, recv_counts, shapes)]

    def bcast_(self, buf, root, ranks):
        subset, activity = self._begin("bcast", ranks)
        if root not in subset.ranks:
            raise ValueError("bcast_ root %r is not one of the member ranks %r" % (root, subset.ranks))
        work = _contiguous(buf)
        if len(subset.ranks) > 1:
            self._complete(subset.comm.Ibcast([work, MPI.BYTE], root=subset.ranks.index(root)), activity)
            if work is not buf:
                buf[...] = work
        return buf

    # ----- point to point -------------------------------------------------------------------------------------

    def _peer(self, peer, what):
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
        self._complete(self._data.Isend([work, MPI.BYTE], dest=dst, tag=_TAG_P2P), activity)

    def recv(self, buf_or_shape, src, dtype=np.float32):
        src, activity = self._peer(src, "recv from")
        if isinstance(buf_or_shape, np.ndarray):
            buf = buf_or_shape
        else:
            buf = np.empty(tuple(buf_or_shape), dtype)
        work = _contiguous(buf)
        status = MPI.Status()
        self._complete(self._data.Irecv([work, MPI.BYTE], source=src, tag=_TAG_P2P), activity, status)
        received = status.Get_count(MPI.BYTE)
        if received != work.nbytes:
            raise ValueError("recv on rank %d: expected %d bytes from rank %d for %s %s, got %d"
                             % (self._rank, work.nbytes, src, buf.dtype, buf.shape, received))
        if work is not buf:
            buf[...] = work
        return buf

    # ----- small control data over the world ------------------------------------------------------------

    def bcast_object(self, obj, root=0):
        subset, activity = self._begin("bcast_object", tuple(range(self._size)))
        if not 0 <= root < self._size:
            raise ValueError("bcast_object root %r out of range for world size %d" % (root, self._size))
        if self._size == 1:
            return obj
        payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL) if self._rank == root else b""
        length = np.array([len(payload)], np.int64)
        self._complete(subset.comm.Ibcast(length, root=root), activity)
        data = np.frombuffer(payload, np.uint8).copy() if self._rank == root else np.empty(int(length[0]), np.uint8)
        self._complete(subset.comm.Ibcast([data, MPI.BYTE], root=root), activity)
        return obj if self._rank == root else pickle.loads(data.tobytes())

    def allgather_object(self, obj):
        subset, activity = self._begin("allgather_object", tuple(range(self._size)))
        if self._size == 1:
            return [obj]
        payload = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        counts = self._exchange_counts(subset, activity, payload.size)
        displs, total = _byte_layout(counts)
        data = np.empty(total, np.uint8)
        request = subset.comm.Iallgatherv([payload, MPI.BYTE], [data, (counts, displs), MPI.BYTE])
        self._complete(request, activity)
        return [obj if r == self._rank else pickle.loads(data[displs[r]:displs[r] + counts[r]].tobytes())
                for r in range(self._size)]


def _describe_states(pairs):
    """(rank, readable text) for ranks that answered with a state other than the timed-out collective."""
    for rank, state in pairs:
        if state is None:
            yield rank, "outside any collective"
        else:
            name, ranks, number = state
            yield rank, _Activity(name, ranks, number).describe()


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
