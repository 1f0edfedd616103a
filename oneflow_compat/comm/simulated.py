"""A job of N ranks simulated in ONE process: each rank is a thread with its own `SimulatedComm`, and the ranks'
collectives meet in shared memory. Same interface and semantics as the MPI comm (`process_comm.py` documents
them), so the runtime's boxing runs unchanged on it: the tests check every transition on 2, 3 and 4 ranks in one
process, and `explain --ranks N` can run a program's boxing without `mpiexec`.

    world = SimulatedWorld(4)
    results = world.run(lambda comm: comm.allgatherv(np.full(2, comm.rank), (0, 1, 2, 3)))

What is the same as MPI: a collective completes once every member has called it; every member calls the
collectives over a subset in the same order (a rank that calls another collective there fails at once, naming
both); arrays are copied as they would be sent (no rank ever sees another rank's array object); a `send` completes
only once it is received (MPI's synchronous mode, the strictest: a program that relies on buffering fails here
instead of hanging elsewhere). What never happens: a hang. Every wait ends after the world's timeout with
`CollectiveTimeout` naming the collective, the ranks that never came and what they were doing instead; a rank that
raises ends the waits of the others at once (`RankFailed`), and `run` re-raises the first error.
"""
import collections
import pickle
import threading
import time

import numpy as np

from .process_comm import CollectiveTimeout, CommError, ProcessComm, balanced_sizes, check_ranks

DEFAULT_TIMEOUT_S = 30.0


class RankFailed(CommError):
    """Raised in a simulated rank that waits for a rank that failed."""


class SimulationMismatch(CommError):
    """The members of a subset called different collectives at the same position (MPI would hang or mix data)."""


class _Meeting:
    __slots__ = ("name", "ranks", "number", "arrived", "results", "error", "left")

    def __init__(self, name, ranks, number):
        self.name, self.ranks, self.number = name, ranks, number
        self.arrived = {}   # rank: (name, payload)
        self.results = None  # rank: result, once every member came
        self.error = None
        self.left = 0


class _Message:
    __slots__ = ("data", "taken")

    def __init__(self, data):
        self.data = data
        self.taken = False


def _copy(array):
    return np.array(array, copy=True, order="C")


def _sum(arrays):
    total = _copy(arrays[0])
    for a in arrays[1:]:
        if total.dtype == np.bool_:
            np.logical_or(total, a, out=total)
        else:
            total += a
    return total


class SimulatedWorld:
    """The shared state of N simulated ranks: `comms[r]` is rank r's comm; `run(fn)` runs fn(comm) on every rank."""

    def __init__(self, size, timeout=DEFAULT_TIMEOUT_S):
        if int(size) < 1:
            raise ValueError("a simulated world needs at least one rank, got %r" % (size,))
        self.size = int(size)
        self.timeout = float(timeout)
        self._cond = threading.Condition()
        self._meetings = {}                      # (ranks, number): _Meeting
        self._mail = collections.defaultdict(collections.deque)  # (src, dst, channel): messages in order
        self._failed = None                      # (rank, exception) of the first rank that failed
        self._doing = {}                         # rank: what it waits for now (timeout reports)
        self.comms = [SimulatedComm(self, r) for r in range(self.size)]

    # ----- running the ranks ------------------------------------------------------------------------------------
    def run(self, fn, comms=None):
        """fn(comm) on every rank at once, one thread per rank (`comms`: the comm each rank gets, default
        `self.comms`, e.g. wrapped in `RecordingComm`); returns the list of results by rank. The first error any
        rank raised is raised here (the others then fail with `RankFailed`, which is not reported)."""
        comms = self.comms if comms is None else list(comms)
        results, errors = [None] * self.size, {}

        def rank_main(r):
            try:
                results[r] = fn(comms[r])
            except BaseException as e:  # noqa: BLE001 (reported by run, as MPI's failure handlers would)
                errors[r] = e
                self._fail(r, e)

        threads = [threading.Thread(target=rank_main, args=(r,), name="rank %d" % r, daemon=True)
                   for r in range(self.size)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 2 * self.timeout + 5
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        alive = [r for r, t in enumerate(threads) if t.is_alive()]
        if alive:  # waits are bounded, so only a rank busy outside the comm can still run
            raise CollectiveTimeout("simulated rank%s %s did not finish within %.0f s"
                                    % ("" if len(alive) == 1 else "s", ", ".join(map(str, alive)),
                                       2 * self.timeout + 5))
        if errors:
            first = self._failed[0] if self._failed is not None and self._failed[0] in errors else min(errors)
            e = errors[first]
            if hasattr(e, "add_note") and not getattr(e, "_simulated_rank_noted", False):
                e.add_note("(on simulated rank %d of %d)" % (first, self.size))
                e._simulated_rank_noted = True
            raise e
        return results

    def _fail(self, rank, error):
        with self._cond:
            if self._failed is None and not isinstance(error, RankFailed):
                self._failed = (rank, error)
            self._cond.notify_all()

    # ----- waiting ----------------------------------------------------------------------------------------------
    def _wait(self, rank, done, describe, missing):
        """Wait (holding the condition) until `done()`; raise `RankFailed` when another rank failed, and
        `CollectiveTimeout` after the world's timeout (`missing()` names the ranks it waits for)."""
        started = time.monotonic()
        deadline = started + self.timeout
        self._doing[rank] = describe
        try:
            while not done():
                if self._failed is not None and self._failed[0] != rank:
                    failed, error = self._failed
                    raise RankFailed("rank %d: %s cannot complete: rank %d failed (%s: %s)"
                                     % (rank, describe, failed, type(error).__name__, error))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CollectiveTimeout(self._timeout_message(rank, describe, missing(), time.monotonic() - started))
                self._cond.wait(min(left, 0.5))
        finally:
            self._doing.pop(rank, None)

    def _timeout_message(self, rank, describe, missing, waited):
        lines = ["rank %d: %s did not complete within %.1f s." % (rank, describe, waited)]
        idle = [r for r in missing if r not in self._doing]
        if idle:
            lines.append("Missing rank%s %s: not in any collective (busy elsewhere, stuck, or finished)."
                         % ("" if len(idle) == 1 else "s", ", ".join(map(str, idle))))
        for r in missing:
            if r in self._doing:
                lines.append("Rank %d is in a different operation: %s (the ranks issue collectives in different "
                             "orders)." % (r, self._doing[r]))
        return " ".join(lines)

    # ----- collectives meet ---------------------------------------------------------------------------------
    def meet(self, rank, name, ranks, number, payload, combine):
        """Rank `rank`'s part of collective `name` #`number` over `ranks`: returns its result once every member
        came (`combine({rank: payload})` -> {rank: result} runs once, in the last member to arrive)."""
        key = (ranks, number)
        describe = "%s #%d over ranks (%s)" % (name, number, ", ".join(map(str, ranks)))
        with self._cond:
            meeting = self._meetings.get(key)
            if meeting is None:
                meeting = self._meetings[key] = _Meeting(name, ranks, number)
            meeting.arrived[rank] = (name, payload)
            if len(meeting.arrived) == len(ranks):
                names = {r: n for r, (n, _) in meeting.arrived.items()}
                if len(set(names.values())) > 1:
                    meeting.error = SimulationMismatch(
                        "collective #%d over ranks (%s) differs across ranks: %s (the ranks issue collectives in "
                        "different orders)" % (number, ", ".join(map(str, ranks)),
                                               ", ".join("rank %d calls %s" % kv for kv in sorted(names.items()))))
                else:
                    try:
                        meeting.results = combine({r: p for r, (_, p) in meeting.arrived.items()})
                    except Exception as e:  # noqa: BLE001 (every member raises it)
                        meeting.error = e
                self._cond.notify_all()
            try:
                self._wait(rank, lambda: meeting.results is not None or meeting.error is not None, describe,
                           lambda: [r for r in ranks if r not in meeting.arrived])
            finally:
                meeting.left += 1
                if meeting.left == len(ranks):
                    del self._meetings[key]
            if meeting.error is not None:
                e = meeting.error  # every member raises its own copy, naming itself
                raise type(e)("rank %d: %s" % (rank, e.args[0]) if e.args else "rank %d" % rank, *e.args[1:])
            return meeting.results[rank]

    # ----- point to point -----------------------------------------------------------------------------------
    def post(self, src, dst, channel, data):
        message = _Message(data)
        with self._cond:
            self._mail[(src, dst, channel)].append(message)
            self._cond.notify_all()
        return message

    def wait_taken(self, src, dst, messages, describe):
        with self._cond:
            self._wait(src, lambda: all(m.taken for m in messages), describe, lambda: [dst])

    def take(self, src, dst, channel, describe):
        box = self._mail[(src, dst, channel)]
        with self._cond:
            self._wait(dst, lambda: bool(box), describe, lambda: [src])
            message = box.popleft()
            message.taken = True
            self._cond.notify_all()
            return message.data


class SimulatedComm(ProcessComm):
    """Rank `rank` of a `SimulatedWorld`: the process comm interface, met by the other ranks' threads."""

    ranks_are_threads = True

    def __init__(self, world, rank):
        self._world, self._rank = world, rank
        self._numbers = {}  # subset: collectives begun over it

    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._world.size

    @property
    def world(self):
        return self._world

    def set_timeout(self, seconds):
        self._world.timeout = float(seconds)

    def _meet(self, name, ranks, payload, combine):
        ranks = check_ranks(ranks, self._rank, self._world.size)
        number = self._numbers[ranks] = self._numbers.get(ranks, 0) + 1
        return self._world.meet(self._rank, name, ranks, number, payload, combine)

    # ----- collectives ------------------------------------------------------------------------------------------
    def barrier(self):
        self._meet("barrier", tuple(range(self.size)), None, lambda got: dict.fromkeys(got))

    def allreduce_(self, buf, ranks):
        def combine(got):
            _same_layout("allreduce", got)
            total = _sum([got[r] for r in sorted(got)])
            return dict.fromkeys(got, total)

        total = self._meet("allreduce", ranks, _copy(_array(buf)), combine)
        buf[...] = total
        return buf

    def reduce_(self, buf, root, ranks):
        _check_root("reduce_", root, ranks)

        def combine(got):
            _same_layout("reduce", got)
            return {r: (_sum([got[q] for q in sorted(got)]) if r == root else None) for r in got}

        total = self._meet("reduce", ranks, _copy(_array(buf)), combine)
        if self._rank == root:
            buf[...] = total
        return buf

    def bcast_(self, buf, root, ranks):
        _check_root("bcast_", root, ranks)
        value = self._meet("bcast", ranks, _copy(_array(buf)) if self._rank == root else None,
                           lambda got: dict.fromkeys(got, got[root]))
        if value.shape != buf.shape or value.dtype != buf.dtype:
            raise ValueError("bcast_ on rank %d: the root sends %s %s into %s %s"
                             % (self._rank, value.dtype, value.shape, buf.dtype, buf.shape))
        buf[...] = value
        return buf

    def allgatherv(self, local, ranks, axis=0, sizes=None):
        local = _array(local)
        axis = axis % local.ndim
        _check_own_size("allgatherv", self._rank, ranks, sizes, local.shape[axis])

        def combine(got):
            whole = _concatenate("allgatherv", got, axis)
            return {r: (whole if i == 0 else whole.copy()) for i, r in enumerate(sorted(got))}

        return self._meet("allgatherv", ranks, _copy(local), combine)

    def gatherv(self, local, root, ranks, axis=0, sizes=None):
        _check_root("gatherv", root, ranks)
        local = _array(local)
        axis = axis % local.ndim
        _check_own_size("gatherv", self._rank, ranks, sizes, local.shape[axis])
        return self._meet("gatherv", ranks, _copy(local),
                          lambda got: {r: (_concatenate("gatherv", got, axis) if r == root else None) for r in got})

    def reduce_scatter(self, buf, ranks, axis=0, sizes=None):
        buf = _array(buf)
        axis = axis % buf.ndim
        members = check_ranks(ranks, self._rank, self.size)
        if sizes is None:
            sizes = balanced_sizes(buf.shape[axis], len(members))
        sizes = [int(s) for s in sizes]
        if len(sizes) != len(members) or sum(sizes) != buf.shape[axis] or min(sizes) < 0:
            raise ValueError("reduce_scatter on rank %d: sizes %r do not split %d rows over %d members"
                             % (self._rank, sizes, buf.shape[axis], len(members)))

        def combine(got):
            _same_layout("reduce_scatter", got)
            total = _sum([got[r] for r in sorted(got)])
            out, start = {}, 0
            for r, size in zip(members, sizes):
                index = [slice(None)] * total.ndim
                index[axis] = slice(start, start + size)
                out[r] = _copy(total[tuple(index)])
                start += size
            return out

        return self._meet("reduce_scatter", members, _copy(buf), combine)

    def alltoallv(self, pieces, ranks, axis=0, recv_sizes=None, concat=False):
        members = check_ranks(ranks, self._rank, self.size)
        if len(pieces) != len(members):
            raise ValueError("alltoallv on rank %d: %d pieces for %d members" % (self._rank, len(pieces),
                                                                                   len(members)))
        pieces = [_copy(_array(p)) for p in pieces]
        me = members.index(self._rank)
        axis = axis % pieces[me].ndim

        def combine(got):
            out = {}
            for j, r in enumerate(members):
                received = [got[q][j] for q in members]
                own = got[r][j]
                for q, p in zip(members, received):
                    if p.dtype != own.dtype or p.ndim != own.ndim or \
                            p.shape[:axis] + p.shape[axis + 1:] != own.shape[:axis] + own.shape[axis + 1:]:
                        raise ValueError("alltoallv: rank %d sends %s %s to rank %d, which keeps %s %s"
                                         % (q, p.dtype, p.shape, r, own.dtype, own.shape))
                out[r] = received
            return out

        received = self._meet("alltoallv", members, pieces, combine)
        if recv_sizes is not None and [p.shape[axis] for p in received] != [int(s) for s in recv_sizes]:
            raise ValueError("alltoallv on rank %d: received sizes %r, expected %r"
                             % (self._rank, [p.shape[axis] for p in received], list(recv_sizes)))
        return np.concatenate(received, axis=axis) if concat else received

    # ----- point to point -----------------------------------------------------------------------------------
    def _peer(self, peer, what):
        peer = int(peer)
        if not 0 <= peer < self.size or peer == self._rank:
            raise ValueError("%s: rank %d cannot exchange with rank %r (world size %d)"
                             % (what, self._rank, peer, self.size))
        return peer

    def send(self, buf, dst):
        dst = self._peer(dst, "send to")
        message = self._world.post(self._rank, dst, "p2p", _copy(_array(buf)))
        self._world.wait_taken(self._rank, dst, [message], "send to rank %d" % dst)

    def recv(self, buf_or_shape, src, dtype=np.float32):
        src = self._peer(src, "recv from")
        buf = buf_or_shape if isinstance(buf_or_shape, np.ndarray) else np.empty(tuple(buf_or_shape), dtype)
        data = self._world.take(src, self._rank, "p2p", "recv from rank %d" % src)
        _fill("recv", self._rank, src, buf, data)
        return buf

    def exchange(self, sends, recvs):
        sends = [(self._peer(p, "exchange"), b) for p, b in sends]
        recvs = [(self._peer(p, "exchange"), b) for p, b in recvs]
        posted = [(dst, self._world.post(self._rank, dst, "exchange", _copy(_array(buf)))) for dst, buf in sends]
        peers = ", ".join(map(str, sorted({p for p, _ in sends + recvs})))
        out = []
        for src, buf in recvs:
            data = self._world.take(src, self._rank, "exchange", "exchange with ranks (%s): receive from rank %d"
                                    % (peers, src))
            _fill("exchange", self._rank, src, buf, data)
            out.append(buf)
        for dst, message in posted:
            self._world.wait_taken(self._rank, dst, [message], "exchange with ranks (%s): send to rank %d"
                                   % (peers, dst))
        return out

    # ----- control data -----------------------------------------------------------------------------------
    def bcast_object(self, obj, root=0):
        if not 0 <= root < self.size:
            raise ValueError("bcast_object root %r out of range for world size %d" % (root, self.size))
        payload = pickle.dumps(obj) if self._rank == root else None
        data = self._meet("bcast_object", tuple(range(self.size)), payload, lambda got: dict.fromkeys(got, got[root]))
        return pickle.loads(data)

    def allgather_object(self, obj):
        data = self._meet("allgather_object", tuple(range(self.size)), pickle.dumps(obj),
                          lambda got: dict.fromkeys(got, [got[r] for r in sorted(got)]))
        return [pickle.loads(d) for d in data]

    def abort(self, exit_code=1):
        error = CommError("rank %d aborted the simulated job (exit code %d)" % (self._rank, exit_code))
        self._world._fail(self._rank, error)
        raise error


# ----- helpers ---------------------------------------------------------------------------------------------
def _array(x):
    if not isinstance(x, np.ndarray):
        raise TypeError("process comm collectives take numpy arrays, got %s" % type(x).__name__)
    return x


def _check_root(what, root, ranks):
    if root not in tuple(ranks):
        raise ValueError("%s root %r is not one of the member ranks %r" % (what, root, tuple(ranks)))


def _check_own_size(what, rank, ranks, sizes, own):
    if sizes is None:
        return
    sizes = [int(s) for s in sizes]
    ranks = tuple(ranks)
    if len(sizes) != len(ranks) or rank not in ranks or sizes[ranks.index(rank)] != own:
        raise ValueError("%s on rank %d: sizes %r do not fit %d members and the local size %d"
                         % (what, rank, sizes, len(ranks), own))


def _same_layout(what, got):
    layouts = {r: (a.dtype, a.shape) for r, a in got.items()}
    if len(set(layouts.values())) > 1:
        raise ValueError("%s: the members' buffers differ: %s" % (
            what, ", ".join("rank %d has %s %s" % (r, d, s) for r, (d, s) in sorted(layouts.items()))))


def _concatenate(what, got, axis):
    parts = [got[r] for r in sorted(got)]
    first = parts[0]
    for r, p in sorted(got.items()):
        if p.dtype != first.dtype or p.ndim != first.ndim or \
                p.shape[:axis] + p.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:]:
            raise ValueError("%s: rank %d's piece %s %s does not concatenate with %s %s along axis %d"
                             % (what, r, p.dtype, p.shape, first.dtype, first.shape, axis))
    return np.concatenate(parts, axis=axis)


def _fill(what, rank, src, buf, data):
    if data.nbytes != buf.nbytes:
        raise ValueError("%s on rank %d: expected %d bytes from rank %d for %s %s, got %d"
                         % (what, rank, buf.nbytes, src, buf.dtype, buf.shape, data.nbytes))
    buf[...] = data.view(buf.dtype).reshape(buf.shape) if data.dtype != buf.dtype else data.reshape(buf.shape)
