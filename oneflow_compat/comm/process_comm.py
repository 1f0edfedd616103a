"""Process-level communication: THE comm interface (`ProcessComm`), documented here once, and the single-process
backend.

A *process comm* connects the processes of one job (MPI rank r = machine r; in the global-tensor API a rank is one
device). The runtime's boxing (`runtime/boxing.py`) is built on it: where a process holds several devices of a
placement, their pieces are first combined by direct array work, then exactly one call of this interface moves
what crosses processes, issued in the same plan order on every member.

Implementations: `SingleProcessComm` (below: a world of one), `MPIComm` (`mpi_comm.py`: mpi4py on host buffers,
with timeouts and failure detection), `SimulatedComm` (`simulated.py`: N ranks as threads of one process, for tests
and `explain --ranks N`), and `RecordingComm` (`recording.py`: wraps any of them and counts the bytes each call
sends). A GPU comm (NCCL, issue 22) implements the same methods on device buffers; the runtime asks for it per
placement (`runtime/boxing.py`, `comm_for`).

The collectives (every one over a sub-group `ranks`, a sorted tuple of world ranks — e.g. the ranks along one axis
of an n-D mesh):

==============================================  ====================================================================
`allreduce_(buf, ranks)`                        elementwise sum, in place on every member
`iallreduce_(buf, ranks)`                       the same, started: returns a `Pending` (`test()`, `wait()` -> buf)
`shared_buffer(shape, dtype, ranks)`            a zeroed array for repeated all-reduces over `ranks` (MPI: in
                                                memory shared by the members of one host, summed in place)
`reduce_scatter(buf, ranks, axis, sizes)`       member i gets rows `sizes[i]` (default balanced) of the sum
`allgatherv(local, ranks, axis, sizes)`         every member gets the concatenation of all members' `local`
`alltoallv(pieces, ranks, axis, recv_sizes)`    `pieces[j]` goes to member j; returns what each member sent here
`reduce_(buf, root, ranks)`                     the sum lands in the root's `buf` (others' `buf` are unchanged)
`reduce(buf, root, ranks)`                      the same, the root's `buf` only read: its sum a new array
`bcast_(buf, root, ranks)`                      the root's `buf` overwrites every member's
`gatherv(local, root, ranks, axis, sizes)`      the root gets the concatenation (None elsewhere)
`send(buf, dst)` / `recv(buf_or_shape, src)`    one message; `send` may block until it is received
`exchange(sends, recvs)`                        many messages at once: every send and receive is posted, then all
                                                complete (the point-to-point batch of a placement change; a pair's
                                                messages match in list order); returns the received arrays: the
                                                given ones filled, or (MPI through shared memory) new arrays of
                                                their shapes and dtypes the senders wrote into
`barrier()`, `bcast_object`, `allgather_object`, `check_same`: control over the whole world (small pickled data)
==============================================  ====================================================================

Conventions shared by all collectives:
* Only members call a collective, and every member calls the collectives over a given subset in the same order.
* Array arguments are numpy arrays moved as raw buffers (never pickled). Methods whose name ends in `_`
  work in place on their argument and also return it; the others return new arrays.
* The split of a size `n` over `k` parts is the balanced one used everywhere in the project: the first
  `n % k` parts get one extra element (`balanced_sizes`).
* Booleans sum as logical or (numpy's `+` on bools).
* Picklable objects travel only in `bcast_object` / `allgather_object` / `check_same` (small control data).
* A started collective (`iallreduce_`) takes its place in the members' order when it starts: other collectives
  may run before its `wait()`, and its buffer must not be touched until then. Backends that cannot overlap
  complete it at once (the default).

Bytes a call sends (`accounting.py`, what `RecordingComm` counts and what the transition table's costs add up): the
*direct* schedule, in which every piece goes once from a member that has it straight to each member that needs
it, and sums are taken where they are received. For a member `i` of `k` with an array of `B` bytes:
all-reduce `B - c_i + (k - 1) c_i` (reduce-scatter, then all-gather, of balanced chunks `c` of the flat array;
2B(k-1)/k when even), reduce-scatter `B - s_i` (`s_i` its own share), all-gather(v) `(k - 1) |local_i|`,
all-to-all(v) the pieces it sends to others, reduce `B` (the root 0), broadcast `(k - 1) B` at the root (others
0), gather(v) `|local_i|` (the root 0), send / exchange the bytes of its messages. A member's own piece is never
counted: it does not cross the wire.
"""
import hashlib
from abc import ABC, abstractmethod

import numpy as np

from oneflow_compat.backend.balanced_split import balanced_sizes


class CommError(RuntimeError):
    """Base class of the errors raised by the process comm."""


class PlanMismatchError(CommError):
    """Raised on every rank when `check_same` finds that the ranks disagree (e.g. on a compiled plan)."""


class CollectiveTimeout(CommError):
    """A collective did not complete in time; the message names the collective, its ranks and the missing ones."""


def balanced_offsets(n, k):
    """Start offsets of the balanced parts of `n` over `k` (length k + 1: the last entry is `n`)."""
    offsets = [0]
    for size in balanced_sizes(n, k):
        offsets.append(offsets[-1] + size)
    return offsets


def check_ranks(ranks, rank, size):
    """Normalise and validate a member list; returns it as a tuple of ints."""
    ranks = tuple(int(r) for r in ranks)
    if not ranks:
        raise ValueError("a collective needs at least one member rank")
    if list(ranks) != sorted(set(ranks)):
        raise ValueError("member ranks must be sorted and distinct, got %r" % (ranks,))
    if ranks[0] < 0 or ranks[-1] >= size:
        raise ValueError("member ranks %r out of range for world size %d" % (ranks, size))
    if rank not in ranks:
        raise ValueError("rank %d called a collective over ranks %r it is not a member of" % (rank, ranks))
    return ranks


def fingerprint_digest(items):
    """A short digest of a fingerprint list; equal lists give equal digests (used to compare plans cheaply)."""
    h = hashlib.sha256()
    for item in items:
        data = str(item).encode("utf-8")
        # Length-prefixed so that ['ab', 'c'] and ['a', 'bc'] differ.
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    h.update(len(items).to_bytes(8, "little"))
    return h.hexdigest()


def describe_mismatch(lists_by_rank, what, item_kind="item", max_chars=160):
    """The message for differing fingerprint lists (`lists_by_rank[r]` is rank r's list), or None if all equal.

    Names the first differing index and, grouped by value, which ranks hold what there.
    """
    lists_by_rank = [list(map(str, items)) for items in lists_by_rank]
    if all(items == lists_by_rank[0] for items in lists_by_rank):
        return None
    index = 0
    while all(index < len(items) for items in lists_by_rank) and \
            all(items[index] == lists_by_rank[0][index] for items in lists_by_rank):
        index += 1

    def shown(items):
        if index >= len(items):
            return "nothing (its list ends after %d %ss)" % (len(items), item_kind)
        text = items[index]
        if len(text) > max_chars:
            text = text[:max_chars - 1] + "\u2026"
        return repr(text)

    groups = {}
    for r, items in enumerate(lists_by_rank):
        groups.setdefault(shown(items), []).append(r)
    parts = []
    for value, group in groups.items():
        who = ("rank %d" % group[0]) if len(group) == 1 else ("ranks %s" % ",".join(map(str, group)))
        parts.append("%s %s %s" % (who, "has" if len(group) == 1 else "have", value))
    return "%s differs across ranks at %s #%d: %s" % (what, item_kind, index, ", ".join(parts))


class Pending:
    """A collective started by `iallreduce_`: `test()` advances it without waiting (True once complete), `wait()`
    completes it and returns its result. This one is complete from the start (backends without overlap)."""

    def __init__(self, result):
        self._result = result

    def test(self):
        return True

    def wait(self):
        return self._result


class ProcessComm(ABC):
    """The collectives among the processes of one job. See the module docstring for the conventions."""

    @property
    @abstractmethod
    def rank(self):
        """This process's world rank (= machine id)."""

    @property
    @abstractmethod
    def size(self):
        """Number of processes in the job (= number of machines)."""

    # whether the ranks are threads of this one process (simulated ranks): they share its memory and its GPU, so
    # no device comm (NCCL) joins them (runtime/runtime.py)
    ranks_are_threads = False

    @property
    def world_ranks(self):
        return tuple(range(self.size))

    def set_timeout(self, seconds):
        """Seconds a collective may wait before `CollectiveTimeout` (backends that cannot hang ignore it)."""

    @abstractmethod
    def barrier(self):
        """Wait until every rank of the world has reached the barrier."""

    @abstractmethod
    def allreduce_(self, buf, ranks):
        """Sum `buf` elementwise over the members, in place; returns `buf`."""

    def iallreduce_(self, buf, ranks):
        """`allreduce_` started now and completed by the returned `Pending` (see the conventions)."""
        return Pending(self.allreduce_(buf, ranks))

    def allreduce(self, buf, ranks):
        """The elementwise sum of every member's `buf` as a new array (`buf` is only read, any layout): what a
        comm that copies the addends anyway (MPI's shared memory: into the members' slots) does without the copy
        an in-place all-reduce of a buffer the caller may not overwrite needs first."""
        return self.allreduce_(buf.copy(), ranks)

    def shared_buffer(self, shape, dtype, ranks):
        """A zeroed array for repeated all-reduces over `ranks`; every member calls it alike. MPI places it in memory
        shared by the members of one host and sums it in place (`shm.py`); elsewhere it is an ordinary array."""
        check_ranks(ranks, self.rank, self.size)
        return np.zeros(tuple(shape), dtype)

    @abstractmethod
    def allgatherv(self, local, ranks, axis=0, sizes=None):
        """Concatenation along `axis` of every member's `local`, in member order (a new array).

        The members' arrays may differ only in their size along `axis`; pass `sizes` (one per member, e.g.
        from `balanced_sizes`) when the caller knows them, otherwise they are exchanged first.
        """

    @abstractmethod
    def reduce_scatter(self, buf, ranks, axis=0, sizes=None):
        """This member's slice along `axis` of the elementwise sum of every member's `buf` (a new array): member i
        gets `sizes[i]` consecutive rows (default: the balanced split of the axis over the members)."""

    @abstractmethod
    def alltoallv(self, pieces, ranks, axis=0, recv_sizes=None, concat=False):
        """Send `pieces[j]` to member j; returns the list of pieces received, `[j]` coming from member j.

        The pieces received all have the shape of `pieces[me]` (what this member keeps for itself) except
        along `axis`, where the piece from member j has size `recv_sizes[j]` (exchanged first when None).
        This is the shape pattern of an `S(i) -> S(j)` re-split with `axis = i`. The received pieces are views
        of one buffer; concatenated along `axis` they form this member's new block — which `concat=True` returns
        instead (one new array; MPI writes each piece straight into its place). The pieces sent may be strided
        views (the columns of a block): they are read in place.
        """

    @abstractmethod
    def bcast_(self, buf, root, ranks):
        """Overwrite `buf` on every member with the root's `buf` (`root` is a world rank); returns `buf`."""

    def bcast(self, buf, root, ranks):
        """`bcast_`, except that the root's `buf` is only read and the root gets a new array holding it (a copy of its
        own, as every other member has): what MPI's shared memory makes from the chunks the root writes anyway."""
        if self.rank == root:
            buf = buf.copy()
        return self.bcast_(buf, root, ranks)

    @abstractmethod
    def reduce_(self, buf, root, ranks):
        """The elementwise sum of every member's `buf`, written into the root's `buf` (`root` is a world rank);
        returns `buf` (on the other members unchanged)."""

    def reduce(self, buf, root, ranks):
        """`reduce_`, except that the root's `buf` is only read and the root gets the sum as a new array (the other
        members get their `buf` back): what a comm that copies the addends anyway (MPI's shared memory) does without
        the copy a reduction into a buffer the caller may not overwrite needs first."""
        return self.reduce_(buf.copy() if self.rank == root else buf, root, ranks)

    @abstractmethod
    def gatherv(self, local, root, ranks, axis=0, sizes=None):
        """On the root: the concatenation along `axis` of every member's `local`, in member order (a new array);
        None on the other members. `sizes` (one per member) as for `allgatherv`; exchanged first when None."""

    @abstractmethod
    def exchange(self, sends, recvs):
        """Point-to-point messages posted together and completed together: `sends` is [(dst rank, array)],
        `recvs` [(src rank, array to fill)]; the messages between two ranks match in the order they are listed.
        Returns the list of received arrays: the given ones, filled, or new arrays of their shapes and dtypes
        (MPI's shared memory: the senders copied straight into them; the given ones are then left alone). Nothing
        blocks on the order of the calls, so two ranks may send to each other in one exchange."""

    @abstractmethod
    def send(self, buf, dst):
        """Send the array `buf` to world rank `dst` (completes when the buffer may be reused)."""

    @abstractmethod
    def recv(self, buf_or_shape, src, dtype=np.float32):
        """Receive an array from world rank `src` into `buf_or_shape` (an array, or a shape to allocate)."""

    @abstractmethod
    def bcast_object(self, obj, root=0):
        """Rank `root`'s picklable `obj`, on every rank of the world."""

    @abstractmethod
    def allgather_object(self, obj):
        """List of every world rank's picklable `obj`, indexed by rank."""

    def check_same(self, items, what, item_kind="item"):
        """Raise `PlanMismatchError` on every rank unless every rank passes the same list of strings.

        Only a digest travels unless the lists differ; then the lists are gathered to name the first differing
        index and which ranks hold what there, e.g. with `what="plan of job 'train_job'"`, `item_kind="op"`:
        "plan of job 'train_job' differs across ranks at op #12: rank 0 has 'dense1-matmul …', rank 1 has '…'".
        """
        items = [str(item) for item in items]
        digests = self.allgather_object(fingerprint_digest(items))
        if all(d == digests[0] for d in digests):
            return
        message = describe_mismatch(self.allgather_object(items), what, item_kind)
        raise PlanMismatchError(message)

    @abstractmethod
    def abort(self, exit_code=1):
        """End every process of the job now with `exit_code`."""

    def collectives_issued(self):
        """How many collectives and point-to-point messages this process has issued so far (0 where nothing
        crosses processes): benchmarks print the difference over a step."""
        return 0


def _as_array(x):
    if not isinstance(x, np.ndarray):
        raise TypeError("process comm collectives take numpy arrays, got %s" % type(x).__name__)
    return x


class SingleProcessComm(ProcessComm):
    """The world of one process: every collective over `(0,)` is the identity (copies where a new array is due)."""

    @property
    def rank(self):
        return 0

    @property
    def size(self):
        return 1

    def _members(self, ranks):
        return check_ranks(ranks, 0, 1)

    def barrier(self):
        pass

    def allreduce_(self, buf, ranks):
        self._members(ranks)
        return _as_array(buf)

    def allgatherv(self, local, ranks, axis=0, sizes=None):
        self._members(ranks)
        local = _as_array(local)
        if sizes is not None and list(sizes) != [local.shape[axis]]:
            raise ValueError("allgatherv: sizes %r do not match the local size %d" % (sizes, local.shape[axis]))
        return local.copy()

    def reduce_scatter(self, buf, ranks, axis=0, sizes=None):
        self._members(ranks)
        buf = _as_array(buf)
        if sizes is not None and list(sizes) != [buf.shape[axis]]:
            raise ValueError("reduce_scatter: sizes %r do not match the size %d along axis %d"
                             % (sizes, buf.shape[axis], axis))
        return buf.copy()

    def alltoallv(self, pieces, ranks, axis=0, recv_sizes=None, concat=False):
        self._members(ranks)
        if len(pieces) != 1:
            raise ValueError("alltoallv over 1 member takes 1 piece, got %d" % len(pieces))
        piece = _as_array(pieces[0])
        if recv_sizes is not None and list(recv_sizes) != [piece.shape[axis]]:
            raise ValueError("alltoallv: recv_sizes %r do not match the piece's size %d"
                             % (recv_sizes, piece.shape[axis]))
        return piece.copy() if concat else [piece.copy()]

    def bcast_(self, buf, root, ranks):
        self._members(ranks)
        if root != 0:
            raise ValueError("bcast_ root %r is not a member of ranks (0,)" % (root,))
        return _as_array(buf)

    def reduce_(self, buf, root, ranks):
        self._members(ranks)
        if root != 0:
            raise ValueError("reduce_ root %r is not a member of ranks (0,)" % (root,))
        return _as_array(buf)

    def gatherv(self, local, root, ranks, axis=0, sizes=None):
        self._members(ranks)
        if root != 0:
            raise ValueError("gatherv root %r is not a member of ranks (0,)" % (root,))
        local = _as_array(local)
        if sizes is not None and list(sizes) != [local.shape[axis]]:
            raise ValueError("gatherv: sizes %r do not match the local size %d" % (sizes, local.shape[axis]))
        return local.copy()

    def exchange(self, sends, recvs):
        for peer, _ in list(sends) + list(recvs):
            raise ValueError("exchange with rank %r: a single-process world has no other rank" % (peer,))
        return []

    def send(self, buf, dst):
        raise ValueError("send to rank %r: a single-process world has no other rank" % (dst,))

    def recv(self, buf_or_shape, src, dtype=np.float32):
        raise ValueError("recv from rank %r: a single-process world has no other rank" % (src,))

    def bcast_object(self, obj, root=0):
        if root != 0:
            raise ValueError("bcast_object root %r out of range for world size 1" % (root,))
        return obj

    def allgather_object(self, obj):
        return [obj]

    def abort(self, exit_code=1):
        import os
        import sys
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)
