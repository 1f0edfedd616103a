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
all-to-all, reduce-scatter, all-reduce of an ordinary buffer of 256 KB or more, broadcast, reduce, gather). One call = two arrivals: the first publishes what
each member needs and a signature of the call (members in different collectives fail naming both, never mix
data; the slots grow, collectively, when a member needs more); the second says the data is in the slots. The
next call's first arrival tells a member that everyone has finished reading its slot.
"""
import zlib

import numpy as np
from mpi4py import MPI

from .process_comm import CommError, balanced_offsets

_LINE = 64  # bytes: a header rounds up to cache lines
_EPOCH, _NEED, _SIGNATURE, _KIND, _TABLE = 0, 1, 2, 3, 4  # header words (the table: per-call offsets)
KINDS = ("allgatherv", "alltoallv", "reduce_scatter", "allreduce", "bcast", "reduce", "gatherv")


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

    def __init__(self, block, buf):
        if block.busy:
            raise RuntimeError("an all-reduce of this shared buffer is still in flight")
        self.block, self.buf = block, buf
        self.data = [s.view(buf.dtype) for s in block.slots]
        offsets = balanced_offsets(buf.size, block.k)
        self.chunk = slice(offsets[block.index], offsets[block.index + 1])
        self.phase = 1
        block.busy = True
        block.arrive()  # this member's addend is in its slot

    def test(self):
        """Advances the all-reduce as far as the other members allow; True once it is complete here."""
        block = self.block
        if self.phase == 1:
            if not block.everyone_arrived():
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


def sum_into_all(parts):
    """The elementwise sum of `parts` (equal shapes), written into every one of them (bools: logical or)."""
    if not parts or parts[0].size == 0:
        return
    acc = parts[0]
    bools = acc.dtype == np.bool_
    for p in parts[1:]:
        if bools:
            np.logical_or(acc, p, out=acc)
        else:
            acc += p
    for p in parts[1:]:
        p[...] = acc


def add_into(acc, part):
    if acc.dtype == np.bool_:
        np.logical_or(acc, part, out=acc)
    else:
        acc += part


def signature(*items):
    """A number naming a call (the same on every rank for the same text; differing members fail naming both)."""
    return zlib.crc32(repr(items).encode()) & 0x7FFFFFFF


class Board:
    """The scratch block of one subset (see the module docstring). `wait(test)` polls `test` to completion under the
    comm's timeout."""

    def __init__(self, comm, ranks):
        self.comm, self.ranks = comm, ranks
        self.block = SharedBlock(comm, 0, header_words=_TABLE + len(ranks) + 1)

    def meet(self, wait, kind, sig, need, table=None):
        """The first arrival of a call: publishes `need` bytes, the call's kind (one of `KINDS`) and signature and an
        optional table of k + 1 int64 (offsets of this member's pieces); returns every member's table (a k x (k+1)
        array, or None). Raises `CommError` on every member when they are in different calls (instead of mixing
        their data); grows the slots (a collective: everyone is here) when some member needs more than they hold."""
        block = self.block
        mine = block.words[block.index]
        mine[_NEED], mine[_SIGNATURE], mine[_KIND] = need, sig, KINDS.index(kind)
        if table is not None:
            mine[_TABLE:_TABLE + len(table)] = table
        block.arrive()
        wait(block.everyone_arrived)
        calls = [(int(w[_KIND]), int(w[_SIGNATURE])) for w in block.words]
        if any(c != calls[block.index] for c in calls):
            # every member saw the difference; none goes on (writing its next call's header) until all have read
            block.arrive()
            wait(block.everyone_arrived)
            def text(c):
                return "%s (call signature %d)" % (KINDS[c[0]] if 0 <= c[0] < len(KINDS) else "?", c[1])
            others = ", ".join("rank %d runs %s" % (self.ranks[j], text(c)) for j, c in enumerate(calls)
                               if c != calls[block.index])
            raise CommError("rank %d runs %s over ranks %s while %s: the ranks issue different collectives, or "
                            "the same one with different arguments" % (self.ranks[block.index],
                                                                       text(calls[block.index]), self.ranks, others))
        tables = None
        if table is not None:
            k = len(self.ranks)
            tables = np.array([w[_TABLE:_TABLE + k + 1] for w in block.words], np.int64)
        most = max(int(w[_NEED]) for w in block.words)
        if most > block.nbytes:  # every member saw the same needs: all grow together
            grown = max(most, 2 * block.nbytes)
            block.free()
            self.block = SharedBlock(self.comm, grown, header_words=_TABLE + len(self.ranks) + 1)
        return tables

    def mine(self):
        return self.block.slots[self.block.index]

    def publish(self, wait):
        """The second arrival: this member's data is in its slot; returns once everyone's is."""
        self.block.arrive()
        wait(self.block.everyone_arrived)

    def slot(self, j):
        return self.block.slots[j]
