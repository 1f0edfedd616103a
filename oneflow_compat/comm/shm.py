"""All-reduce through shared memory among the ranks of one host: what `MPIComm` does with buffers it handed out
(`MPIComm.shared_buffer`), such as the persistent gradient buckets of data-parallel training.

Why: MPI's all-reduce between processes of one host copies every byte several times (into its shared cells, out
of them, and again for the all-gather half): measured 1.4-1.6 ms of CPU per rank for a 2.7 MB bucket on 2 ranks,
where one memcpy of it takes 0.27 ms. A bucket that already lives in a window of memory shared by the members needs
none of those copies: each member sums its balanced chunk of the flat buffer over every member's slot and writes
the sum into every slot (one read of the buffer and one write of it per member, split over the members), and
every member's buffer then holds the sum, in place. The schedule is the project's *direct* one
(`process_comm.py`, `accounting.py`): a reduce-scatter of balanced chunks, then an all-gather of the reduced chunks,
so the bytes a member moves for others are the all-reduce's accounted bytes.

`SharedBlock`: one MPI shared-memory window (`MPI_Win_allocate_shared`) over the members of a subset on one host:
every member's segment holds a flag word (its own cache line) and its slot (the buffer handed out). The members
meet at *arrivals* (flag = epoch number; everyone waits until every flag reached it), which cost no MPI call: the
waiting is `MPIComm`'s polled loop, with its timeout and its reports of missing or departed ranks. A block is used
by one all-reduce at a time, its two arrivals in one order on every member, so blocks in flight side by side never
mix (MPI barriers on one communicator would pair up across blocks). `MPI_Win_sync` orders the memory accesses
around each arrival (the MPI standard's rule for shared windows).

`ShmAllreduce`: one all-reduce on a block, started, then completed by `test()` calls (nonblocking: the gradient
buckets start one as soon as a bucket is complete and finish them all before the optimizer, as DDP does).
"""
import numpy as np
from mpi4py import MPI

from .process_comm import balanced_offsets

_HEADER = 64  # bytes before each member's slot: its arrival flag, alone on its cache line


class SharedBlock:
    """A shared window over the `k` members of `comm` (all on this host): member j's slot of `nbytes` bytes.

    Creating it is a collective over `comm` that blocks (MPI has no nonblocking window allocation): the caller meets
    the members first in a polled rendezvous, as `MPIComm` does before `Create_group`."""

    def __init__(self, comm, nbytes):
        self.k, self.index, self.nbytes = comm.Get_size(), comm.Get_rank(), int(nbytes)
        size = _HEADER + (-(-self.nbytes // _HEADER)) * _HEADER
        self.win = MPI.Win.Allocate_shared(size, 1, comm=comm)
        self.flags, self.slots = [], []
        for j in range(self.k):
            memory, _ = self.win.Shared_query(j)
            raw = np.frombuffer(memory, np.uint8, count=size)
            self.flags.append(raw[:8].view(np.int64))
            self.slots.append(raw[_HEADER:_HEADER + self.nbytes])
        self.flags[self.index][0] = 0
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
        self.flags[self.index][0] = self.epoch

    def everyone_arrived(self):
        epoch = self.epoch
        for flag in self.flags:
            if flag[0] < epoch:
                return False
        self.win.Sync()  # what the others wrote before arriving is visible from here on
        return True


class ShmAllreduce:
    """One in-place all-reduce of the members' slots of `block` (every member passes its own slot as `buf`)."""

    def __init__(self, block, buf):
        if block.busy:
            raise RuntimeError("an all-reduce of this shared buffer is still in flight")
        self.block, self.buf = block, buf
        self.data = [s.view(buf.dtype) for s in block.slots]
        if buf.dtype == np.bool_:  # bools sum as logical or, as numpy's + and the other comms do
            self.data = [d.view(np.uint8) for d in self.data]
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
            self._reduce_my_chunk()
            self.phase = 2
            block.arrive()
        if self.phase == 2:
            if not block.everyone_arrived():
                return False
            self.phase = 3
            block.busy = False
        return True

    def _reduce_my_chunk(self):
        c = self.chunk
        if c.start == c.stop:
            return
        parts = [d[c] for d in self.data]
        acc = parts[0]
        bools = self.buf.dtype == np.bool_
        for p in parts[1:]:
            if bools:
                np.bitwise_or(acc, p, out=acc)
            else:
                acc += p
        for p in parts[1:]:
            p[...] = acc
