"""`RecordingComm`: any process comm, with a record of every call it makes and the bytes this rank sends in it.

    rec = RecordingComm(comm)
    ... run boxing on rec ...
    rec.calls          # [Call(name='reduce_scatter', ranks=(0, 1, 2), sent=1120), ...]
    rec.bytes_sent()   # the sum

The bytes are counted by the accounting rule of `process_comm.py` (`accounting.py`), from the arrays each call is
given — the same rule the transition table's costs use, so a test can hold a boxing's recorded bytes against its
planned cost and `explain`'s figure. Control calls (barrier, the object collectives) are recorded with
`control=True` and the size of their pickled payload.
"""
import collections
import pickle

import numpy as np

from . import accounting
from .process_comm import ProcessComm, balanced_sizes

Call = collections.namedtuple("Call", "name ranks sent control")


def _nbytes(a):
    return int(np.asarray(a).nbytes)


class RecordingComm(ProcessComm):
    """Wraps `inner` (a `ProcessComm`); every call goes through, recorded in `calls`."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    @property
    def rank(self):
        return self.inner.rank

    @property
    def size(self):
        return self.inner.size

    def set_timeout(self, seconds):
        self.inner.set_timeout(seconds)

    def reset(self):
        self.calls = []

    def bytes_sent(self, control=False):
        """Bytes this rank sent in the recorded calls (data calls; with `control`, the control calls too)."""
        return sum(c.sent for c in self.calls if control or not c.control)

    def data_calls(self):
        return [c for c in self.calls if not c.control]

    def _record(self, name, ranks, sent, control=False):
        self.calls.append(Call(name, tuple(ranks), int(sent), control))

    def _index(self, ranks):
        return tuple(ranks).index(self.rank)

    # ----- collectives ----------------------------------------------------------------------------------------
    def barrier(self):
        self._record("barrier", range(self.size), 0, control=True)
        return self.inner.barrier()

    def allreduce_(self, buf, ranks):
        a = np.asarray(buf)
        self._record("allreduce", ranks, accounting.allreduce(a.size, a.itemsize, len(ranks), self._index(ranks)))
        return self.inner.allreduce_(buf, ranks)

    def allreduce(self, buf, ranks):
        a = np.asarray(buf)
        self._record("allreduce", ranks, accounting.allreduce(a.size, a.itemsize, len(ranks), self._index(ranks)))
        return self.inner.allreduce(buf, ranks)

    def reduce_scatter(self, buf, ranks, axis=0, sizes=None):
        a = np.asarray(buf)
        k = len(ranks)
        rows = a.shape[axis % a.ndim]
        share = (sizes if sizes is not None else balanced_sizes(rows, k))[self._index(ranks)]
        own = a.nbytes // rows * share if rows else 0
        self._record("reduce_scatter", ranks, accounting.reduce_scatter(a.nbytes, own, k))
        return self.inner.reduce_scatter(buf, ranks, axis, sizes)

    def allgatherv(self, local, ranks, axis=0, sizes=None):
        self._record("allgatherv", ranks, accounting.allgather(_nbytes(local), len(ranks)))
        return self.inner.allgatherv(local, ranks, axis, sizes)

    def alltoallv(self, pieces, ranks, axis=0, recv_sizes=None, concat=False):
        self._record("alltoallv", ranks, accounting.alltoall([_nbytes(p) for p in pieces], self._index(ranks)))
        return self.inner.alltoallv(pieces, ranks, axis, recv_sizes, concat)

    def reduce_(self, buf, root, ranks):
        self._record("reduce", ranks, accounting.reduce(_nbytes(buf), self.rank == root))
        return self.inner.reduce_(buf, root, ranks)

    def reduce(self, buf, root, ranks):
        self._record("reduce", ranks, accounting.reduce(_nbytes(buf), self.rank == root))
        return self.inner.reduce(buf, root, ranks)

    def bcast_(self, buf, root, ranks):
        self._record("bcast", ranks, accounting.broadcast(_nbytes(buf), len(ranks), self.rank == root))
        return self.inner.bcast_(buf, root, ranks)

    def bcast(self, buf, root, ranks):
        self._record("bcast", ranks, accounting.broadcast(_nbytes(buf), len(ranks), self.rank == root))
        return self.inner.bcast(buf, root, ranks)

    def gatherv(self, local, root, ranks, axis=0, sizes=None):
        self._record("gatherv", ranks, accounting.gather(_nbytes(local), self.rank == root))
        return self.inner.gatherv(local, root, ranks, axis, sizes)

    # ----- point to point ---------------------------------------------------------------------------------------
    def send(self, buf, dst):
        self._record("send", sorted((self.rank, int(dst))), _nbytes(buf))
        return self.inner.send(buf, dst)

    def recv(self, buf_or_shape, src, dtype=np.float32):
        self._record("recv", sorted((self.rank, int(src))), 0)
        return self.inner.recv(buf_or_shape, src, dtype)

    def exchange(self, sends, recvs):
        sends, recvs = list(sends), list(recvs)
        peers = {int(p) for p, _ in sends + recvs} | {self.rank}
        self._record("exchange", sorted(peers), sum(_nbytes(b) for _, b in sends))
        return self.inner.exchange(sends, recvs)

    # ----- control --------------------------------------------------------------------------------------------
    def bcast_object(self, obj, root=0):
        sent = len(pickle.dumps(obj)) * (self.size - 1) if self.rank == root else 0
        self._record("bcast_object", range(self.size), sent, control=True)
        return self.inner.bcast_object(obj, root)

    def allgather_object(self, obj):
        self._record("allgather_object", range(self.size), len(pickle.dumps(obj)) * (self.size - 1), control=True)
        return self.inner.allgather_object(obj)

    def abort(self, exit_code=1):
        return self.inner.abort(exit_code)

    @property
    def ranks_are_threads(self):
        return getattr(self.inner, "ranks_are_threads", False)

    def __getattr__(self, name):  # backend extras (MPIComm.context, tell_others_this_rank_leaves, ...)
        return getattr(self.inner, name)
