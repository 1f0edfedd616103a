"""Before ranks communicate they agree on what they run and whose turn it is, so that collectives never pair up
across different operations: ranks that disagree fail at once, naming both sides.

Identity. Every global operation — an eager op on a placement of several ranks, its backward, `numpy()` of a
global tensor, `to_global` of local tensors, an nn.Graph call, a bucketed gradient all-reduce — has an identity
text (op type, attrs, input
shapes, dtypes, SBPs and placements; or the graph and its call number) with a 60-bit digest, computed once per
compiled op. Each thread chains the digests of its global operations (`chain = chain·P + digest mod 2^61-1`),
which costs one multiplication per op. Only before an operation that communicates do its member ranks compare
their chains — one allreduce of one fixed size over the members: the sums and the sums of squares of the 20-bit
parts, so that equal sums prove equal parts on every rank (Σ(x_i − a)² = Σx_i² − 2aΣx_i + na² = 0) and every
rank takes the same branch. The same message carries up to `PAYLOAD` numbers of the operation itself, summed over
the members: an operation whose communication is that small (a feed's shapes, the partial sums of a scalar
`numpy()`) makes no collective but its check. An op that does not communicate is caught at the next one that does. On a difference the
members exchange their recent identity texts and raise `AgreementError` naming both sides.

Carried checks. Where the comm can (`MPIComm` on one host: `carry_check`), the check needs no collective of its
own: its message rides in the header of a shared-memory collective (`comm/shm.Board.exchange`), and a standalone
check is an exchange on the same board — so every collective on the board compares what the members run, and
members in different operations fail naming both, whichever collective or check each is in. A `to_global` hands
its check to the comm (`global_op(carry=True)`): its first collective carries it when that one is over exactly the
check's members on their board; any other next communication (another subset, point to point, MPI's path) makes
the check on its own first, and so does the end of the turn (`in_turn`) when nothing carried it. The decision
rests on the operation and its collectives only, so every member takes the same path. A carried check that
finds another thread's turn raises `TurnOfAnother` from inside that collective, before the operation changed
anything (the chain is taken back and the operation runs again in its turn).

Turns. One process-wide lock (`LOCK`) serialises every eager global op, nn.Graph call and legacy job call: a
compiled plan has one register file, and an op's collectives must not interleave with another thread's. A lock
alone is not enough across ranks: two threads could take it in one order on rank 0 and in the other on rank 1, and
their collectives would pair up with each other's data. So the identity check also compares the threads (matched
across ranks by name: threads created in the same order get the same default names). When they differ, the
thread of the lowest member rank has the turn; on the other ranks the thread that holds the lock gives it back
and waits until that thread, once it arrives, has passed its own check (`in_turn`). Threads' operations then
follow one order on every rank, and each thread's results are those of a sequential run.
"""
import collections
import hashlib
import pickle
import threading
import weakref

import numpy as np

from oneflow_compat.comm import world
from oneflow_compat.comm.process_comm import CommError
from oneflow_compat.runtime import activity

RECENT = 16  # identity texts each thread keeps, to name the first difference in a mismatch report
_M61 = (1 << 61) - 1
_P = 0x5DEECE66D1F2B3  # the chain's multiplier
_PART = (1 << 20) - 1


class AgreementError(CommError):
    """Ranks about to communicate run different operations; raised on every member rank, naming both sides."""


def digest(text):
    """A 60-bit digest of `text` (the same on every rank, unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 4


def _parts(thread_tag, chain):
    return [thread_tag, chain & _PART, (chain >> 20) & _PART, (chain >> 40) & _PART]


class _Chain(threading.local):
    def __init__(self):
        self.name = threading.current_thread().name
        self.tag = digest(self.name) & _PART
        self.chain = 0
        self.count = 0  # global operations of this thread so far
        self.recent = collections.deque(maxlen=RECENT)  # (number, identity text)


_THREAD = _Chain()


# --- turns ---------------------------------------------------------------------------------------------------------
class Turns:
    """A re-entrant lock that can be handed to a named thread (the one whose turn the ranks agreed on)."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._owner = None
        self._depth = 0
        self._wanted = None  # tag of the thread that alone may take the lock, or None

    def acquire(self):
        me = threading.get_ident()
        if self._owner == me:  # only this thread sets the owner to itself, so reading it unlocked is safe
            self._depth += 1
            return
        tag = _THREAD.tag
        with self._cond:
            while self._owner is not None or (self._wanted is not None and self._wanted != tag):
                self._cond.wait()
            self._owner = me
        self._depth = 1

    def release(self):
        if self._depth > 1:
            self._depth -= 1
            return
        with self._cond:
            self._depth = 0
            self._owner = None
            self._cond.notify_all()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()
        return False

    def depth(self):
        """How many times this thread holds the lock (0 when it does not)."""
        return self._depth if self._owner == threading.get_ident() else 0

    def hand_to(self, tag):
        with self._cond:
            self._wanted = tag

    def taken(self, tag):
        """The thread `tag` passed its check: the turn it was handed is over."""
        if self._wanted == tag:
            with self._cond:
                self._wanted = None
                self._cond.notify_all()

    def wait_until_taken(self, tag, timeout):
        """Waits (not holding the lock) until the turn handed to `tag` is over; False after `timeout` seconds."""
        with self._cond:
            if self._cond.wait_for(lambda: self._wanted != tag, None if timeout == float("inf") else timeout):
                return True
            self._wanted = None
            self._cond.notify_all()
            return False


class _RankTurns:
    """`LOCK`: the process's `Turns`; in the thread of a simulated rank (`comm/world.simulated_rank`: the ranks of
    `explain --ranks N`, threads of one process), that rank's own, as each real rank is a process of its own."""

    def __init__(self):
        self._process = Turns()
        self._ranks = weakref.WeakKeyDictionary()  # simulated rank's comm -> its Turns

    def turns(self):
        comm = world.thread_comm()
        if comm is None:
            return self._process
        turns = self._ranks.get(comm)
        if turns is None:
            turns = self._ranks.setdefault(comm, Turns())
        return turns

    def acquire(self):
        self.turns().acquire()

    def release(self):
        self.turns().release()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.turns().release()
        return False

    def depth(self):
        return self.turns().depth()

    def hand_to(self, tag):
        self.turns().hand_to(tag)

    def taken(self, tag):
        self.turns().taken(tag)

    def wait_until_taken(self, tag, timeout):
        return self.turns().wait_until_taken(tag, timeout)


LOCK = _RankTurns()


class TurnOfAnother(Exception):
    """Raised out of an operation whose check found another thread's turn (caught by `in_turn`)."""

    def __init__(self, tag, name, where):
        super().__init__(name)
        self.tag, self.name, self.where = tag, name, where


def in_turn(fn, *args):
    """`fn(*args)` holding `LOCK`, as one turn; if its identity check hands the turn to another thread, the lock is
    given back, and `fn` runs again once that thread's operation has passed its check."""
    while True:
        LOCK.acquire()
        completed = False
        try:
            out = fn(*args)
            # a check that no collective carried is made now (it may still find another thread's turn: `fn`
            # then made no collective, and runs again in its turn)
            completed = True
            settle_carried(True)
            return out
        except TurnOfAnother as turn:
            handed = turn
            LOCK.hand_to(turn.tag)
        finally:
            if not completed:
                settle_carried(False)
            LOCK.release()
        comm = activity.installed_comm()
        timeout = getattr(comm, "timeout", float("inf"))
        if not LOCK.wait_until_taken(handed.tag, timeout):
            raise AgreementError(
                "rank %d: the ranks agreed that thread %r runs next (%s), but on this rank it did not reach that "
                "operation within %g s (threads are matched across ranks by name: name threads alike on every "
                "rank)" % (comm.rank, handed.name, handed.where, timeout))


# --- identity -----------------------------------------------------------------------------------------------------
def check_call(text, members):
    """A call every member rank must make together (a job call, an nn.Graph call), named by `text`: one global
    operation that communicates (see `global_op`)."""
    return global_op((digest(text), text), members)


def chain_only(identity):
    """Records a global operation of this thread that does not communicate, outside any frame and lock (an eager
    op on several ranks without boxing, `runtime/global_eager.py`): it joins the thread's chain, checked at the
    thread's next operation that communicates."""
    th = _THREAD
    th.chain = (th.chain * _P + identity[0]) % _M61
    th.count += 1
    th.recent.append((th.count, identity[1]))


def global_op(identity, members, payload=None, carry=False):
    """Records a global operation of this thread, run inside `LOCK` and a frame (`activity.operation`), and returns
    its number. `identity` = (digest, text); `members` = the sorted ranks that communicate in it, this rank among
    them, or None when it does not communicate (it is then checked at the next operation that does).

    `payload`: up to `PAYLOAD` numbers of the operation itself (exact as float64: integers below 2^53) that ride
    in the check's message, summed over the members — what a small operation would otherwise send in a collective
    of its own (a feed's shapes, a scalar's partial sums). Then the member-wise sums are returned instead of the
    number (a float64 array, one per payload value).

    `carry`: the operation's first communication is a collective over exactly `members` made before anything it
    does has an effect (a `to_global`: its boxing), so the check may ride in that collective's own message (a comm
    with `carry_check`: the shared-memory collectives of `comm/mpi_comm.py` carry it in their headers) instead of
    an all-reduce of its own. Every member decides alike whether it rides (what the comm does is a function of the
    collective and its members); where it cannot, the comm makes the check on its own first. A mismatch then
    surfaces from inside that collective, before any member reads another's data: the same `AgreementError`, or
    `TurnOfAnother` (the operation has changed nothing yet, and runs again in its turn).

    `carry` with a `payload` (a gradient bucket's check carrying the partial sums of the backward's root, a loss:
    `runtime/buckets.py`): the payload's sums are known only once a collective carried the check, so the `Check`
    itself is returned; its `result` holds the sums after the carrying collective (or after the end of the turn,
    which makes a check no collective carried), and stays None if the operation failed first."""
    th = _THREAD
    number = th.count + 1
    chain = (th.chain * _P + identity[0]) % _M61
    frame = activity.top()
    if frame is not None:
        frame.number = number
    if members is None:
        if payload is not None:
            raise ValueError("a global operation that does not communicate has no payload to sum")
        th.chain, th.count = chain, number
        th.recent.append((number, identity[1]))
        return number
    comm = activity.installed_comm()
    check = Check(th, chain, number, identity[1], members, payload, comm)
    carrier = getattr(comm, "carry_check", None) if carry else None
    if carrier is not None:
        # the chain moves on now (a later op of this thread chains on it); `settle` takes it back if the turn is
        # another thread's
        check.rollback = (th.chain, th.count)
        th.chain, th.count = chain, number
        carrier(check)
        return number if payload is None else check
    if frame is not None:
        frame.checking = True
    run = getattr(comm, "run_check", None)
    if run is not None:
        run(check)  # (the comm's own way: the shared-memory board where the members have one)
    else:
        check.run_over_allreduce()
    if frame is not None:
        frame.checking = False
    th.chain, th.count = chain, number
    if payload is not None and carry:
        return check
    return number if payload is None else check.result


def settle_carried(completed):
    """The end of a turn (`in_turn`): a check still waiting for a collective to carry it is made now when the
    operation completed (it did not communicate after all, on every member alike), dropped when it failed."""
    comm = activity.installed_comm()
    end = getattr(comm, "end_carried_check", None)
    if end is not None:
        end(completed)


# The check's message: the thread tag and three 20-bit parts of the chain, their squares, and PAYLOAD slots for
# the operation's own numbers — one allreduce of one fixed size for every operation, so that ranks in different
# operations still pair their checks. float64 holds the sums exactly below 8192 members (squares of 20-bit parts
# are below 2^40); beyond, the message is int64 and a payload travels in an allreduce of its own.
PAYLOAD = 32
_EXACT_MEMBERS = 1 << 12
MESSAGE = 8 + PAYLOAD  # float64 numbers of a check's message (what a comm carrying it must have room for)


class Check:
    """One identity check of this thread's global operation over `members`: its `message` (summed over the members
    by an all-reduce, or by a comm that carries it in a collective's header) and `settle(sums)`, which decides on
    the sums alike on every member (see the module docstring)."""

    def __init__(self, th, chain, number, text, members, payload, comm):
        self.th, self.chain, self.number, self.text = th, chain, number, text
        self.members, self.payload, self.comm = tuple(members), payload, comm
        self.rollback = None  # (chain, count) before this op, when the chain moved on before the check (carried)
        n = len(self.members)
        self.parts = _parts(th.tag, chain)
        values = self.parts + [p * p for p in self.parts]
        self.agreed = [n * v for v in values]  # the sums when every member holds these values
        self.exact = n < _EXACT_MEMBERS
        if payload is not None and len(payload) > PAYLOAD:
            raise ValueError("a check carries at most %d payload values, got %d" % (PAYLOAD, len(payload)))
        self.message = np.zeros(MESSAGE, np.float64) if self.exact else np.zeros(len(values), np.int64)
        self.message[:len(values)] = values
        if self.exact and payload is not None:
            self.message[len(values):len(values) + len(payload)] = payload
        self.result = None

    def fill_payload(self, values):
        """Writes the payload's values into the message of a check still waiting for the collective that carries
        it (`global_op(..., payload=placeholder, carry=True)`: numbers the operation knows only once it ran up to
        that collective, e.g. a loss an nn.Graph call computed before its gradient bucket). False, writing
        nothing, when the check was made already (with the placeholder: its `result` is then not the values')."""
        if self.result is not None or not self.exact or self.payload is None or len(values) > len(self.payload):
            return False
        at = len(self.parts) * 2
        self.message[at:at + len(values)] = values
        return True

    def drop(self):
        """The operation failed before any collective carried its check: it stays in the chain, unchecked (the
        members compare it at the next check)."""
        self.th.recent.append((self.number, self.text))

    def run_over_allreduce(self):
        """The check as an all-reduce of its message over the members (again while this thread has the turn and
        the others' threads with it are not there yet)."""
        comm = self.comm
        while not self.settle(comm.allreduce_(self.message.copy(), self.members)):
            pass

    def settle(self, sums):
        """True when every member runs this operation (`result`: the payload's sums); False when this thread has the
        turn and the check must be made again; raises `AgreementError` or `TurnOfAnother` (on every member alike:
        the decision rests on the sums only, then on what the members exchange)."""
        th, comm, members, n = self.th, self.comm, self.members, len(self.members)
        k = len(self.parts) * 2
        head = [int(v) for v in sums[:k]]
        if head == self.agreed:
            LOCK.taken(th.tag)
            th.recent.append((self.number, self.text))
            if self.payload is not None:
                self.result = sums[k:k + len(self.payload)] if self.exact else \
                    comm.allreduce_(np.asarray(self.payload, np.float64).copy(), members)
            return True
        same = _same_everywhere(head, self.parts, n)
        before = list(th.recent)
        infos = _gather(comm, members, (th.name, self.text, self.number, before))
        if same[0]:
            message = _mismatch(comm.rank, members, infos)
            # every member raises; should the program catch it and go on, the members compare from here on
            th.chain, th.count = 0, max(info[2] for info in infos) - 1
            th.recent.clear()
            raise AgreementError(message)
        first_name, first_text, first_number, _ = infos[0]
        if first_name == th.name:
            return False  # this thread has the turn: check again once the other ranks' threads with it are here
        if self.rollback is not None:
            th.chain, th.count = self.rollback
        if LOCK.depth() != 1:
            raise AgreementError(
                "rank %d: thread %r reached %s inside another operation while rank %d runs thread %r: the threads' "
                "operations interleave differently on the ranks" % (comm.rank, th.name, self.text, members[0],
                                                                   first_name))
        raise TurnOfAnother(digest(first_name) & _PART, first_name,
                             "rank %d runs %s in it, as global op #%d" % (members[0], first_text, first_number))


def _same_everywhere(sums, parts, n):
    """Per part: whether all `n` members hold this member's value, from the sums of the parts and of their squares
    (all hold a iff Σx = na and Σx² = na², since then Σ(x − a)² = 0): every member decides alike."""
    return [int(sums[k]) == n * p and int(sums[len(parts) + k]) == n * p * p for k, p in enumerate(parts)]


def _gather(comm, members, obj):
    """Every member's picklable `obj`, in member order (the slow path: only after a difference)."""
    payload = np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
    sizes = [int(s) for s in comm.allgatherv(np.array([payload.size], np.int64), members, sizes=[1] * len(members))]
    data = comm.allgatherv(payload, members, sizes=sizes)
    out, start = [], 0
    for size in sizes:
        out.append(pickle.loads(data[start:start + size].tobytes()))
        start += size
    return out


def _mismatch(rank, members, infos):
    """The message for members that run different operations now, or ran different ones since they last compared
    (`infos`: each member's thread name, identity text, number and recent (number, text) pairs)."""
    current = {r: (text, number) for r, (_, text, number, _) in zip(members, infos)}
    text, number = current[rank]
    if any(t != text for t, _ in current.values()):
        others = "; ".join("rank %d runs %s (global op #%d)" % (r, t, k) for r, (t, k) in current.items() if t != text)
        return ("rank %d runs %s (global op #%d) while %s: the ranks run different global operations (every rank "
                "must run the same global ops and nn.Graph calls, in the same order)" % (rank, text, number, others))
    seqs = {r: dict(list(recent) + [(current[r][1], current[r][0])])
            for r, (_, _, _, recent) in zip(members, infos)}
    for k in range(max(min(s) for s in seqs.values()), max(max(s) for s in seqs.values()) + 1):
        seen = [(r, s.get(k)) for r, s in seqs.items()]
        if len({t for _, t in seen}) > 1:
            return ("rank %d runs %s as the other ranks do, but before it the ranks ran different global operations: "
                    "%s" % (rank, text, "; ".join("rank %d's global op #%d is %s" % (r, k, t if t is not None else
                                                                                     "still to come") for r, t in seen)))
    return ("rank %d runs %s as the other ranks do, but before it, more than %d operations back, the ranks ran "
            "different global operations" % (rank, text, RECENT))
