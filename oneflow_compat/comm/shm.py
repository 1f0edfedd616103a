"""Collectives through memory shared by the ranks of one host: what `MPIComm` runs instead of MPI's own collectives
when every member of a subset runs on this host.

Why: MPI's shared-memory transport copies a message into its cells and out of them in small chunks, one handshake
per chunk, and its derived datatypes (strided pieces) go through a slower packing engine still. Measured on 2 ranks
of this project's CI machine: MPI's all-reduce of a 2.7 MB gradient bucket 1.4-1.9 ms of CPU per rank (0.33 ms
here); an all-to-all of 4 MB pieces 3.8-4.4 ms where a memcpy of them takes 0.5 ms, and 11-15 ms with the strided
pieces of an S(0) -> S(1) re-split described by MPI vector types. Here a member writes what it sends into its
slot of a shared window once (packing strided pieces in that copy) and every receiver copies what it needs
straight from the sender's slot into its place in the result (a strided place included): the two copies every
transport between processes makes, and nothing else.

`SharedBlock`: one MPI shared-memory window (`MPI_Win_allocate_shared`) over the members of a subset on one host:
every member's segment holds a header of int64 words (word 0: its arrival epoch, alone on its cache line; then
what the collective publishes: the bytes it needs, a signature of the call, offsets of its pieces) and its slot.
The members meet at *arrivals* (epoch + 1; everyone waits until every epoch reached it), which cost no MPI call:
`MPIComm` waits in its polled loop, with its timeout and its reports of missing or departed ranks. `MPI_Win_sync`
orders the memory accesses around each arrival (the MPI standard's rule for shared windows).

`ShmAllreduce`: an in-place all-reduce of buffers `MPIComm.shared_buffer` handed out (gradient buckets): each
member sums its balanced chunk over every member's slot and writes the sum into every slot (the project's *direct*
schedule, `process_comm.py`: a reduce-scatter of balanced chunks, then an all-gather of the reduced chunks), so
every member's buffer holds the sum in place, with no copy. It is started, then completed by `test()` calls
(nonblocking: gradient buckets start one as soon as a bucket is complete). Each such buffer has its own block, so
all-reduces in flight side by side never mix.

`Board`: the scratch block of one subset for the collectives that move arrays between members (all-gather,
all-to-all, reduce-scatter, all-reduce of an ordinary buffer of 256 KB or more, broadcast, reduce, gather, and the
point-to-point exchange of a slice-boxing whose identity check is over the ranks taking part). Its
slots and the words each call publishes come in two halves that calls use in turn, so that one call is ONE arrival
(the all-reduce: two): a member writes its data into its half of this call, and its header (the bytes it needs, a
signature of the call, offsets of its pieces), then arrives; once everyone arrived, every member reads what it
needs. Members in different collectives fail naming both and never read each other's data; when a member's data
did not fit, everyone sees it, the slots grow (collectively) and the call is made again. A member writes a half
again two calls later, after the next call's arrival, which every member reaches only once it has finished
reading that half: no member overwrites what another still reads.

A call's header also carries an identity check (`runtime/agreement.py`: the message of the members' agreement on
what they run): every member settles on the same member-wise sums before anything else is compared or read, so
a `to_global` needs no separate collective for its check (`MPIComm.carry_check`; a slice-boxing's point-to-point
exchange rides in the check's own board call: each sender copies straight into its receiver's result in the
arena, `MPIComm._shm_exchange`). Streamed calls (`stream`,
`reduce_stream`) move their data after the arrival in chunks, readers (or the summing member) following the
writers' progress words: an all-gather, all-to-all, broadcast and gather copy each chunk out as soon as it is
written, a reduce-scatter and a reduce sum it (in member order: the same bits as whole arrays).

`Arena`: where a subset's collectives put their results once it exists (each member's results in its own segments
of shared windows), so that a byte moves in ONE copy: an all-gather, a joined all-to-all and a gather with known
sizes copy each member's piece straight into its place in the receivers' results (`Board.remote`: strided pieces
read or written in place), and a broadcast's root makes its own copy there while the others read it behind it
(`Board.serve`). Measured on 2 ranks of the CI machine (bench_boxing, 16 MB): S(0) -> B 3.2 -> 2.4 ms, S(0) -> S(1)
2.3 -> 1.3 ms.
A slice-boxing's receiver may instead read its piece straight out of its sender's memory, where the members may
(`cross_memory.py`: the header then carries each member's process id and the addresses it offers, `sources`).
A member hands its result out, or lets its caller change what the others read, only once every member is through
with the call's data (`Board.done`), so no member ever touches a result that its owner may use or reuse. Whether a
call pushes rests on what every member published before the arrival (each result's place, the shape each member
expects): all decide alike, and a result that found no room (the first call of a subset, or a full arena) sends
everyone through the slots for that call while every arena grows at its end.
"""
import bisect
import collections
import math
import os
import weakref
import zlib

import numpy as np
from mpi4py import MPI

from .process_comm import CommError, balanced_offsets

_LINE = 64  # bytes: a header rounds up to cache lines
_EPOCH = 0  # header word 0: the arrival epoch, alone on its cache line
_NEED, _SIGNATURE, _KIND, _WRITTEN, _PROGRESS, _HALF = 0, 1, 2, 3, 4, 5  # a Board's words of one call (then its table)
_SEQ_SHIFT = 40  # the progress word: the call's sequence number above this bit, the bytes written so far below
CHUNK = 1 << 20  # bytes a streamed copy moves between two progress reports
KINDS = ("allgatherv", "alltoallv", "reduce_scatter", "allreduce", "bcast", "reduce", "gatherv", "check")
CHECK_WORDS = 40  # float64 words of an identity check's message a call's header carries (`Board.exchange`)
_DONE = (1 << _SEQ_SHIFT) - 1  # a progress word's bytes saying "through with this call's data" (`Board.done`)
ARENA_MIN = 1 << 18  # bytes: smaller results stay in private memory (a push saves little; the arena stays small)
ARENA_FIRST = 16 << 20  # bytes: the least a member's segment of an arena window holds
SHM_DIR = "/dev/shm"  # where MPICH's shared windows live: an arena grows only while this has room for it
_PAGE = 4096
# What the collectives of this module did in this process, for the tests that pin it (tests/test_boxing_passes.py):
# bytes written by copies of array data ("copied") and by sums ("summed"), and arrivals ("arrivals": meetings of a
# block's members); "read": the bytes of "copied" read out of another process's memory (`cross_memory.read`).
# Counted per chunk or per call: one dict update per MB moved.
PASSES = collections.Counter()


def _round(nbytes):
    return -(-int(nbytes) // _LINE) * _LINE


class SharedBlock:
    """A shared window over the `k` members of `comm` (all on this host): member j's header of `header_words` int64
    words and its slot of `nbytes` bytes.

    Creating or freeing it is a collective over `comm` that blocks (MPI has no nonblocking window allocation): the
    caller makes sure every member is at the call first (a polled rendezvous, or an arrival of another block)."""

    def __init__(self, comm, nbytes, header_words=8):
        self.k, self.index, self.nbytes = comm.Get_size(), comm.Get_rank(), int(nbytes)
        header = _round(8 * max(header_words, 8))
        size = header + _round(self.nbytes)
        self.win = MPI.Win.Allocate_shared(size, 1, comm=comm)
        self.words, self.slots = [], []
        for j in range(self.k):
            memory, _ = self.win.Shared_query(j)
            raw = np.frombuffer(memory, np.uint8, count=size)
            self.words.append(raw[:header].view(np.int64))
            self.slots.append(raw[header:header + self.nbytes])
        self.words[self.index][:] = 0
        self.win.Lock_all()  # a passive-target epoch for the window's whole life: Win_sync is valid in it
        self.epoch = 0
        self.busy = False

    def slot(self, dtype, shape):
        """This member's slot as an array (the buffer `MPIComm.shared_buffer` hands out)."""
        return self.slots[self.index].view(dtype).reshape(shape)

    def arrive(self):
        """Says that this member reached the next meeting (its writes before it are visible to the others)."""
        self.epoch += 1
        PASSES["arrivals"] += 1
        self.win.Sync()
        self.words[self.index][_EPOCH] = self.epoch

    def everyone_arrived(self):
        epoch = self.epoch
        for words in self.words:
            if words[_EPOCH] < epoch:
                return False
        self.win.Sync()  # what the others wrote before arriving is visible from here on
        return True

    def free(self):
        """(Collective, blocking: every member must be at the call.)"""
        self.win.Unlock_all()
        self.win.Free()
        self.words = self.slots = None


class ShmAllreduce:
    """One in-place all-reduce of the members' slots of `block` (every member passes its own slot as `buf`)."""

    def __init__(self, block, buf, arrived=False):
        """`arrived`: every member has already said that its addend is in its slot, in an arrival elsewhere (the
        members' board, carrying an identity check: `MPIComm.iallreduce_`), so this all-reduce makes one arrival
        of its own instead of two (every member alike)."""
        if block.busy:
            raise RuntimeError("an all-reduce of this shared buffer is still in flight")
        self.block, self.buf = block, buf
        self.data = [s.view(buf.dtype) for s in block.slots]
        offsets = balanced_offsets(buf.size, block.k)
        self.chunk = slice(offsets[block.index], offsets[block.index + 1])
        self.phase = 1
        self.arrived = arrived
        block.busy = True
        if arrived:
            block.win.Sync()  # what the others wrote before their arrival elsewhere is visible from here on
        else:
            block.arrive()  # this member's addend is in its slot

    def test(self):
        """Advances the all-reduce as far as the other members allow; True once it is complete here."""
        block = self.block
        if self.phase == 1:
            if not self.arrived and not block.everyone_arrived():
                return False
            sum_into_all([d[self.chunk] for d in self.data])
            self.phase = 2
            block.arrive()
        if self.phase == 2:
            if not block.everyone_arrived():
                return False
            self.phase = 3
            block.busy = False
        return True


class Arena:
    """Memory for the results of one subset's collectives that the other members write into (or read from) while
    the collective runs: each member's results lie in its own segments of shared windows, so a member pushes what
    it sends straight into the receiver's result (one copy where a slot makes two: `Board.remote`).

    The segments come in windows that only grow (`grow`: collective, made by every member at the same point of a
    call, `Board.exchange`); a window is never freed while the job runs (a result may live in it). A result is an
    ordinary array whose memory is a block of a segment: the block returns to this member's free list when the
    last view of the array is gone. No other member touches a block after the call that made it returned: a
    member hands its result out only once every member is through with it (`Board.done`)."""

    def __init__(self, comm):
        self.comm, self.index = comm, comm.Get_rank()
        self.windows = []  # SharedBlock
        self.bases = []  # the address of this member's segment of each window
        self.spans = []  # the [start, end) bytes of each segment that blocks are cut from (page-aligned)
        self.free = []  # per window: sorted [start, end) byte ranges of this member's segment that are free
        self.want = 0  # bytes a result did not find room for since the last growth
        self.handed = None  # (a weak reference to the last result `output` made, its (window, offset))
        # blocks whose arrays are gone, to merge into the free lists: a block comes back from whatever thread drops
        # the last view, at any moment (the garbage collector may run inside `output` itself), so it only queues
        self.returned = collections.deque()

    def output(self, shape, dtype):
        """A C-contiguous array of `shape` in this member's segments, or None (too small, or no room: then `want`
        says so in the header of the call, at whose end every arena of the subset grows, while shared memory has
        room for it)."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(int(d) for d in shape) * dtype.itemsize
        if nbytes < ARENA_MIN or dtype.hasobject:
            return None
        size = -(-nbytes // _PAGE) * _PAGE
        self.take_back()
        for w, ranges in enumerate(self.free):
            for i, (start, end) in enumerate(ranges):
                if end - start >= size:
                    if end - start == size:
                        del ranges[i]
                    else:
                        ranges[i] = (start + size, end)
                    break
            else:
                continue
            break
        else:
            if _room_for(self._window_size(size) * self.comm.Get_size()):
                self.want = max(self.want, size)
            return None
        # a block of its own for the array's base: numpy's views of it keep this holder (not the window) as their
        # base, so the block is free exactly when no view of it is left
        holder = np.frombuffer(memoryview(self.windows[w].slots[self.index])[start:start + size], np.uint8)
        weakref.finalize(holder, self.returned.append, (w, start, size))
        out = holder[:nbytes].view(dtype).reshape(shape)
        self.handed = (weakref.ref(out), (w, start))  # `locate` finds it without reading its address
        return out

    def take_back(self):
        """Merges the blocks whose arrays are gone into the free lists (each a sorted list of disjoint ranges)."""
        while self.returned:
            w, start, size = self.returned.popleft()
            ranges = self.free[w]
            i = bisect.bisect(ranges, (start, start))
            end = start + size
            if i < len(ranges) and ranges[i][0] == end:  # joined with the free range after it
                end = ranges.pop(i)[1]
            if i and ranges[i - 1][1] == start:  # ... and the one before it
                start = ranges.pop(i - 1)[0]
                i -= 1
            ranges.insert(i, (start, end))

    def locate(self, array):
        """(window, byte offset) of `array` in this member's segments (C-contiguous), or None."""
        if array is None or not array.flags.c_contiguous:
            return None
        if self.handed is not None and self.handed[0]() is array:
            return self.handed[1]
        address = array.__array_interface__["data"][0]
        for w, base in enumerate(self.bases):
            if base <= address and address + array.nbytes <= base + self.windows[w].nbytes:
                return w, address - base
        return None

    def grow(self, want):
        """(Collective: every member at the same point of a call, with the same `want`.) One more window, large
        enough for `want` bytes and at least twice the last one."""
        size = self._window_size(want)
        block = SharedBlock(self.comm, size + _PAGE)
        self.windows.append(block)
        base = block.slots[self.index].__array_interface__["data"][0]
        self.bases.append(base)
        skip = -base % _PAGE  # blocks start on page bounds (the same offset in every member's mapping)
        self.spans.append((skip, skip + size))
        self.free.append([self.spans[-1]])
        self.want = 0

    def _window_size(self, want):
        last = self.spans[-1][1] - self.spans[-1][0] if self.spans else 0
        return -(-max(2 * want, 2 * last, ARENA_FIRST) // _PAGE) * _PAGE

    def remote(self, j, where, shape, dtype):
        """Member j's result at `where` (window, offset) as an array of `shape` (only during the call)."""
        w, offset = where
        return np.ndarray(shape, dtype, buffer=self.windows[w].slots[j], offset=offset)


def _room_for(nbytes):
    """Whether the shared-memory file system has twice `nbytes` free: a window's pages are only reserved when
    touched, and touching one past a full tmpfs (a container's 64 MB /dev/shm) kills the process with SIGBUS, so an
    arena grows only with room to spare; its results stay private otherwise. (The members of an arena share one
    host, hence this file system: they see alike.)"""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return True
    return st.f_bavail * st.f_frsize >= 2 * nbytes


def _chunks(array):
    """[(first byte, end byte, rows)] of `array` in C order, runs of its leading index of about `CHUNK` bytes."""
    if array.ndim == 0:
        array = array.reshape(1)
    if array.nbytes == 0:
        return []
    row = array.nbytes // array.shape[0]
    step = max(1, CHUNK // max(row, 1))
    return [(r * row, min(r + step, array.shape[0]) * row, array[r:r + step]) for r in range(0, array.shape[0], step)]


def reading(j, offset, array, source=None):
    """A read for `Board.stream`: member j's bytes from `offset` on, into `array`: of its slot in this call, or of
    `source` (uint8: the member's result in its arena, `Board.remote`)."""
    return [j, offset, _chunks(array), source]


def sum_into_all(parts):
    """The elementwise sum of `parts` (equal shapes), written into every one of them (bools: logical or)."""
    if not parts or parts[0].size == 0:
        return
    acc = parts[0]
    bools = acc.dtype == np.bool_
    for p in parts[1:]:
        add_into(acc, p)
    for p in parts[1:]:
        copy_into(p, acc)


def add_into(acc, part, other=None):
    """acc += part (bools: logical or); with `other`: acc = part + other, in one pass."""
    a, b = (acc, part) if other is None else (part, other)
    if acc.dtype == np.bool_:
        np.logical_or(a, b, out=acc)
    else:
        np.add(a, b, out=acc)
    PASSES["summed"] += acc.nbytes


def copy_into(dst, src):
    """dst[...] = src (any strides): every copy of array data the shared-memory collectives make goes here."""
    dst[...] = src
    PASSES["copied"] += dst.nbytes


def signature(*items):
    """A number naming a call (the same on every rank for the same text; differing members fail naming both)."""
    return zlib.crc32(repr(items).encode()) & 0x7FFFFFFF


class Board:
    """The scratch block of one subset (see the module docstring). `wait(test)` polls `test` to completion under the
    comm's timeout."""

    def __init__(self, comm, ranks):
        self.comm, self.ranks = comm, ranks
        self.k = len(ranks)
        # need, signature, kind, written, progress, then the table of k + 1 offsets, then a check: a flag and its
        # message, then where this member's result lies in the arena (window or -1, offset, a number naming its
        # shape), the arena bytes it wants, a second table of k + 1 (`exchange`'s `places`), and whether it
        # moves data in the call (`exchange`'s `joined`)
        # moves data in the call (`exchange`'s `joined`), then its process id and, per member, the address of the
        # one contiguous run of its memory that member may read (`exchange`'s `sources`: 0 where there is none)
        self.half_words = _HALF + self.k + 1 + 1 + CHECK_WORDS + 4 + self.k + 1 + 1 + 1 + self.k
        self.calls = 0  # calls on the current block (its halves alternate)
        self.seq = 0  # calls on this board (the same on every member: tags the progress words of streamed calls)
        self.half = 0  # the half the last call used
        self.block = self._allocate(0)
        self.arena = Arena(comm)
        self.results = [None] * self.k  # the last call's: where each member's result lies in its arena (or None)
        self.shapes = set()  # the last call's numbers naming the shape each member expects of the results
        self.places = None  # the last call's second tables (a k x (k+1) array, when the call gave one)
        self.joined = [False] * self.k  # the last call's: which members said they move data in it (`joined`)
        self.sources = None  # the last call's: every member's process id and the addresses it offers (`sources`)
        self.reads = False  # whether every member may read every other's memory (`cross_memory`; `MPIComm._board`)

    def _allocate(self, capacity):
        self.capacity, self.calls = int(capacity), 0
        block = SharedBlock(self.comm, 2 * self.capacity, header_words=_LINE // 8 + 2 * self.half_words)
        # every member's words of each half, as views made once per block (read in the polling loops)
        self._headers = [[words[_LINE // 8 + half * self.half_words:_LINE // 8 + (half + 1) * self.half_words]
                          for words in block.words] for half in (0, 1)]
        return block

    def _header(self, j, half):
        return self._headers[half][j]

    def exchange(self, wait, kind, sig, need, write=None, table=None, check=None, settle=None, result=None,
                 shape_sig=0, places=None, joined=False, sources=None):
        """One call, in one arrival while the slots are large enough: `write(slot)` copies this member's data into
        its slot (uint8, at least `need` bytes) and the header says `need`, the call's kind (one of `KINDS`) and
        signature and an optional table of k + 1 int64 (offsets of this member's pieces); after everyone arrived
        the members' slots of this call are `slot(j)`. Returns every member's table (a k x (k+1) array, or None).
        Without `write`, the data moves after the arrival, through `stream` (writers and readers overlapping).

        `check`: an identity check's message (float64, at most `CHECK_WORDS`: `runtime/agreement.py`) that rides in
        the header; after the arrival its member-wise sums (in member order, the same on every member) go to
        `settle(sums)` before anything else is compared or read: it may raise (every member alike: no member reads
        the others' data), or return False to make the whole call again (this member's thread has the turn and
        the others' is not here yet). Members of which some carry a check and others not fail naming both.

        `result`: this member's result of the call when it lies in its arena (`output`), published with
        `shape_sig` (a number naming the shape the member expects of the results) and `places` (k + 1 int64: where
        each member's piece goes in it): afterwards `results` and `places` hold every member's, and `pushing(...)`
        says, alike on every member, whether the data may go straight into the results (`remote`, `done`).
        `joined`: this member moves data in the call (afterwards `joined` holds every member's: an identity check's
        call may be made on its own by one member while another moves data in it, `MPIComm._shm_exchange`).
        `sources`: k + 1 int64, this member's process id and, for each member, the address of the one contiguous
        run of this member's memory it may read in this call (0: none; `cross_memory.read`): afterwards `sources`
        holds every member's (a k x (k+1) array).

        Raises `CommError` on every member when they are in different calls (no member reads the others' data).
        When some member's data did not fit, everyone sees it in the headers: the slots grow (a collective: every
        member is here, none reads the old block any more) and the call is made again on the new block; when some
        member's result found no room in its arena, every arena grows (at the same point, alike) for the next call."""
        where = self.arena.locate(result)
        while True:
            block, half = self.block, self.calls % 2
            fits = need <= self.capacity
            if fits and need and write is not None:
                write(block.slots[block.index][half * self.capacity:half * self.capacity + self.capacity])
            # this member's words, written in one assignment (fields with nothing to say are zeros)
            k = self.k
            words = [need, sig, KINDS.index(kind), int(fits), self.seq << _SEQ_SHIFT]
            words += [int(t) for t in table] if table is not None else [0] * (k + 1)
            at = _HALF + k + 1
            if check is not None:
                words.append(1)
                words += np.asarray(check, np.float64).view(np.int64).tolist()
                words += [0] * (CHECK_WORDS - len(check))
            else:
                words += [0] * (1 + CHECK_WORDS)
            out = at + 1 + CHECK_WORDS
            words += [-1, 0] if where is None else [where[0], where[1]]
            words += [shape_sig, self.arena.want]
            words += [int(p) for p in places] if places is not None else [0] * (k + 1)
            words.append(int(joined))
            words += [int(a) for a in sources] if sources is not None else [0] * (k + 1)
            self._headers[half][block.index][:] = words
            block.arrive()
            wait(block.everyone_arrived)
            # every member's words, read once (a snapshot: what follows decides on it alike on every member)
            headers = np.array(self._headers[half])
            rows = headers.tolist()
            # the call is over for the halves: a collective made in `settle` takes the next one (what it writes
            # there was last read in the call before this one, which everyone has finished: they arrived here)
            self.half = half
            self.calls += 1
            self.seq += 1
            carried = [bool(w[at]) for w in rows]
            if any(carried):
                if not all(carried):
                    block.arrive()  # every member saw it; none writes this half again until all have read it
                    wait(block.everyone_arrived)
                    raise CommError("rank %d runs %s over ranks %s %s while %s: the ranks run different operations"
                                    % (self.ranks[block.index], kind, self.ranks,
                                       "as the first collective of a global operation" if check is not None else
                                       "inside a global operation",
                                       ", ".join("rank %d %s" % (self.ranks[j], "begins one" if c else
                                                                 "runs inside one")
                                                 for j, c in enumerate(carried) if c != carried[block.index])))
                sums = np.zeros(CHECK_WORDS, np.float64)
                for w in headers[:, at + 1:at + 1 + CHECK_WORDS].view(np.float64):  # (in member order)
                    sums += w
                if not settle(sums):
                    continue  # the same call again (the members whose thread has no turn left it in `settle`)
                check = None  # settled: a call made again on grown slots does not carry it again
            calls = [(w[_KIND], w[_SIGNATURE]) for w in rows]
            if any(c != calls[block.index] for c in calls):
                # every member saw the difference; none goes on (writing this half again) until all have read it
                block.arrive()
                wait(block.everyone_arrived)

                def text(c):
                    return "%s (call signature %d)" % (KINDS[c[0]] if 0 <= c[0] < len(KINDS) else "?", c[1])
                others = ", ".join("rank %d runs %s" % (self.ranks[j], text(c)) for j, c in enumerate(calls)
                                   if c != calls[block.index])
                raise CommError("rank %d runs %s over ranks %s while %s: the ranks issue different collectives, or "
                                "the same one with different arguments" % (self.ranks[block.index],
                                                                           text(calls[block.index]), self.ranks,
                                                                           others))
            if not all(w[_WRITTEN] for w in rows):  # every member saw the same needs: all grow together
                most = max(w[_NEED] for w in rows)
                block.free()
                self.block = self._allocate(max(most, 2 * self.capacity))
                continue
            self.results = [None if w[out] < 0 else (w[out], w[out + 1]) for w in rows]
            self.shapes = {w[out + 2] for w in rows}
            self.places = headers[:, out + 4:out + 5 + k] if places is not None else None
            self.joined = [bool(w[-(k + 2)]) for w in rows]
            self.sources = headers[:, -(k + 1):] if sources is not None else None
            wants = max(w[out + 3] for w in rows)
            if wants:  # every member saw the same wants: all arenas grow together (for the next calls)
                self.arena.grow(wants)
            return headers[:, _HALF:_HALF + k + 1] if table is not None else None

    def stream(self, wait, writes, reads, meanwhile=None):
        """The data of the call `exchange` (without `write`) just agreed on, copied in chunks of about `CHUNK` bytes
        so that readers copy out while writers copy in: `writes` [(byte offset in this member's slot, array[, also])]
        (`also`: an array of the same shape, any strides, that gets a copy too, chunk by chunk, from the chunk just
        written: this member's own piece of the result, from memory still in cache),
        `reads` [(member j, byte offset in j's slot, array to fill)] (arrays of any strides: chunks are runs of
        their leading index, laid out in C order). Each member reports the bytes it has written so far in its
        progress word, tagged with the call's number (a word from an earlier call never counts). `meanwhile()`: this
        member's local work (its own piece into its place), done once its writes are out, before it waits for the
        reads still to come: the others read its slot while it copies, and it copies while they still write."""
        block, half, seq = self.block, self.half, self.seq - 1
        me, base = block.index, self.half * self.capacity
        mine = self._header(me, half)
        slot = block.slots[me]
        done = 0
        for write in writes:
            offset, array = write[:2]
            also = write[2] if len(write) > 2 else None
            if also is not None and also.ndim == 0:
                also = also.reshape(1)
            row = array.nbytes // array.shape[0] if array.ndim and array.shape[0] else 1
            for start, stop, rows in _chunks(array):
                at = base + offset + start
                written = slot[at:at + stop - start].view(array.dtype).reshape(rows.shape)
                copy_into(written, rows)
                done = offset + stop
                block.win.Sync()
                mine[_PROGRESS] = (seq << _SEQ_SHIFT) | done
                if also is not None:  # another copy, from the chunk just written (still in cache)
                    copy_into(also[start // row:stop // row], written)
                self._read(reads, seq, base)
        if meanwhile is not None:
            meanwhile()
        while reads:
            if not self._read(reads, seq, base):
                wait(lambda: self._ready(reads, seq))
        return done

    def reduce_stream(self, wait, writes, parts, out):
        """A reduction streamed like `stream`: `writes` as there; `out` (C-contiguous) gets the elementwise sum of
        `parts` in their order, each an array of `out`'s shape (this member's own) or (member j, byte offset in j's
        slot) of the same shape in C order. Chunk by chunk (runs of `out`'s leading index of about `CHUNK` bytes,
        in order): the first part copied, the others added in turn, as soon as every member's bytes of the chunk
        are written — between this member's own chunks of writing, then waiting for the rest."""
        block, half, seq = self.block, self.half, self.seq - 1
        me, base = block.index, self.half * self.capacity
        mine = self._header(me, half)
        slot = block.slots[me]
        rows = out.shape[0] if out.ndim else 1
        flat = out.reshape(rows, out.size // rows) if out.size else None
        row = out.nbytes // rows if out.size else 0
        step = max(1, CHUNK // max(row, 1))
        todo = list(range(0, rows, step)) if out.size else []
        local = {id(p): p.reshape(flat.shape) for p in parts if isinstance(p, np.ndarray)} if out.size else {}
        # numpy adds a strided operand (this member's block of an S(1) addend: rows of a wider array) several times
        # slower than a contiguous one, and copies it nearly as fast as a contiguous one: the first two addends may
        # swap (a + b is b + a, bit for bit), so a strided one comes first, copied; a strided one further on is
        # copied into a scratch chunk first, then added (the order of additions, and so the bits, stay the same)
        def strided(p):
            return isinstance(p, np.ndarray) and not p.flags.c_contiguous
        parts = list(parts)
        if len(parts) >= 2 and strided(parts[1]) and not strided(parts[0]):
            parts[0], parts[1] = parts[1], parts[0]
        scratch = np.empty((min(step, rows),) + flat.shape[1:], out.dtype) if out.size and \
            any(strided(p) for p in parts[2:]) else None

        def ready():
            stop = min(todo[0] + step, rows) * row
            return all(isinstance(p, np.ndarray) or self._available(p[0], seq) >= p[1] + stop for p in parts)

        def reduce_ready():
            moved = False
            while todo and ready():
                block.win.Sync()  # the data the progress words report is visible from here on
                r = todo.pop(0)
                stop = min(r + step, rows)
                into = flat[r:stop]
                first = None
                for n, p in enumerate(parts):
                    if isinstance(p, np.ndarray):
                        src = local[id(p)][r:stop]
                        if n >= 2 and scratch is not None and not src.flags.c_contiguous:
                            copy_into(scratch[:stop - r], src)
                            src = scratch[:stop - r]
                    else:
                        j, offset = p
                        src = self.block.slots[j][base + offset + r * row:base + offset + stop * row].view(
                            out.dtype).reshape(into.shape)
                    if n == 0:
                        first = src
                    elif n == 1 and first is not None and first.flags.c_contiguous and src.flags.c_contiguous:
                        # the first two addends summed in one pass: a + b as numpy adds them after a copy of a, bit
                        # for bit (a strided addend is copied first: numpy adds it several times slower)
                        add_into(into, first, src)
                        first = None
                    else:
                        if first is not None:
                            copy_into(into, first)
                            first = None
                        add_into(into, src)
                if first is not None:  # one addend
                    copy_into(into, first)
                moved = True
            return moved

        for offset, array in writes:
            for start, stop, chunk in _chunks(array):
                at = base + offset + start
                copy_into(slot[at:at + stop - start].view(array.dtype).reshape(chunk.shape), chunk)
                block.win.Sync()
                mine[_PROGRESS] = (seq << _SEQ_SHIFT) | (offset + stop)
                reduce_ready()
        while todo:
            if not reduce_ready():
                wait(ready)

    def _available(self, j, seq):
        word = int(self._header(j, self.half)[_PROGRESS])
        return word & ((1 << _SEQ_SHIFT) - 1) if word >> _SEQ_SHIFT == seq else 0

    def _ready(self, reads, seq):
        return any(not chunks or self._available(j, seq) >= offset + chunks[0][1] for j, offset, chunks, _ in reads)

    def _read(self, reads, seq, base):
        """Copies what the writers have made available; drops finished reads from `reads`; True if any moved."""
        moved = False
        for entry in list(reads):
            j, offset, chunks, source = entry
            if chunks:
                available = self._available(j, seq)
                if available < offset + chunks[0][1]:
                    continue
                self.block.win.Sync()  # the data the progress word reports is visible from here on
                at = offset if source is not None else base + offset
                if source is None:
                    source = self.block.slots[j]
                while chunks and offset + chunks[0][1] <= available:
                    start, stop, rows = chunks.pop(0)
                    copy_into(rows, source[at + start:at + stop].view(rows.dtype).reshape(rows.shape))
            moved = True
            if not chunks:
                reads[:] = [e for e in reads if e is not entry]
        return moved

    def pushing(self, members=None):
        """Whether the results of `members` (indices; every member when None) all lie in their arenas and every
        member expects the same shape of them: then data goes straight into them (`remote`). The same answer on
        every member (it rests on the headers all of them read)."""
        results = self.results if members is None else [self.results[j] for j in members]
        return all(r is not None for r in results) and len(self.shapes) == 1

    def remote(self, j, shape, dtype):
        """Member j's result of this call (in its arena, `pushing`) as an array of `shape`: for this call only."""
        return self.arena.remote(j, self.results[j], shape, dtype)

    def remote_bytes(self, j, nbytes):
        """Member j's result of this call as `nbytes` bytes (a source of `reading`)."""
        return self.remote(j, (nbytes,), np.uint8)

    def done(self, wait, others=()):
        """Says that this member is through with the call's data (what it pushes is written, what it reads of
        others' results is read), then waits until each of `others` (member indices) says the same: a member hands
        out its result, or lets its caller change what others read, only then."""
        block, seq = self.block, self.seq - 1
        block.win.Sync()  # what this member wrote is visible before it says so
        self._header(block.index, self.half)[_PROGRESS] = (seq << _SEQ_SHIFT) | _DONE
        if others:
            wait(lambda: all(self._available(j, seq) == _DONE for j in others))
            block.win.Sync()  # what the others wrote before saying so is visible from here on

    def serve(self, array, into):
        """Copies `array` into `into` (this member's result, in its arena) chunk by chunk, saying how far it got in
        its progress word, so that readers of `into` (`reading` with `remote_bytes`) copy out behind it."""
        block, seq = self.block, self.seq - 1
        mine = self._header(block.index, self.half)
        flat = into.reshape(-1).view(np.uint8)
        for start, stop, rows in _chunks(array):
            copy_into(flat[start:stop].view(array.dtype).reshape(rows.shape), rows)
            block.win.Sync()
            mine[_PROGRESS] = (seq << _SEQ_SHIFT) | stop

    def publish(self, wait):
        """An arrival within a call (e.g. the all-reduce's, after each member summed its chunk in every slot)."""
        self.block.arrive()
        wait(self.block.everyone_arrived)

    def slot(self, j):
        """Member j's slot of the last call."""
        start = self.half * self.capacity
        return self.block.slots[j][start:start + self.capacity]
