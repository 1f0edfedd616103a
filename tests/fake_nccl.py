"""A fake NCCL binding for comm/nccl_comm.py's `NcclComm`: the same methods as its `Binding`, on numpy arrays,
for ranks that are threads of one process (comm/simulated.py's SimulatedWorld).

NCCL's rules kept: a communicator is made by every member with the same unique id, its size and the member's index;
a collective completes once every member of the communicator issued it (members issue collectives in the same
order); sends and receives match per pair of members in issue order; a group's operations complete together (the
fake posts its sends before its receives, as NCCL progresses a group's operations at once). Every array passed is a
C-contiguous numpy array; a count or dtype that differs between the members of a collective fails.

And NCCL's refusal of two members on one GPU: making a communicator waits for all its members (ncclCommInitRank is
collective), then, where two of them are on one GPU of one host, every member raises `NcclError`
("NCCL_ERROR_INVALID_USAGE", NCCL's "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 0"). Like a
machine with one GPU, every thread is on GPU 0 of this host, in this process, unless it says otherwise
(`as_process(rank)`: this thread stands for process `rank` alone on GPU `rank`, as MPI ranks with a GPU each)."""
import os
import socket
import threading

import numpy as np

TIMEOUT = 20.0


class NcclError(RuntimeError):
    """What CuPy raises for a failed NCCL call (cupy_backends.cuda.libs.nccl.NcclError)."""


INVALID_USAGE = "NCCL_ERROR_INVALID_USAGE: invalid usage (run with NCCL_DEBUG=WARN for details)"


class _Clique:
    """The members of one communicator (one unique id): their collectives by round, their point-to-point queues."""

    def __init__(self, size):
        self.size = size
        self.joined = set()
        self.members = {}  # index -> (host, process, gpu)
        self.lock = threading.Condition()
        self.rounds = {}  # round -> {member: (kind, args)}
        self.queues = {}  # (src, dst) -> [arrays]
        self.aborted = False


class FakeNccl:
    """The binding; one instance is shared by every simulated rank of a test."""

    SUM, MAX = "sum", "max"

    def __init__(self):
        self._cliques = {}
        self._lock = threading.Lock()
        self.calls = []  # (member, kind) of every issued operation, for tests
        self.aborted = []
        self.event_done = True  # what events say as `done` (a test of the watchdog makes them hang)
        self._group = threading.local()
        self._who = threading.local()  # the identity `as_process` gave this thread
        self.refused = []  # the refusal of each member that was refused

    # --- who joins --------------------------------------------------------------------------------------------
    def as_process(self, rank, gpu=None):
        """From now on this thread stands for process `rank` on GPU `gpu` (default: `rank`) of this host."""
        self._who.value = (socket.gethostname(), "process %d" % rank, rank if gpu is None else gpu)

    def member(self):
        """(host, process, GPU) of the calling thread, as `Binding.member` gives them."""
        found = getattr(self._who, "value", None)
        return found if found is not None else (socket.gethostname(), os.getpid(), 0)

    # --- communicators ---------------------------------------------------------------------------------------
    def unique_id(self):
        return os.urandom(128)  # bytes, as CuPy 14's nccl.get_unique_id()

    def communicator(self, members, uid, index):
        key = bytes(uid) if isinstance(uid, (bytes, bytearray)) else tuple(uid)
        with self._lock:
            clique = self._cliques.setdefault(key, _Clique(members))
        with clique.lock:
            if clique.size != members or not 0 <= index < members or index in clique.joined:
                raise RuntimeError("ncclCommInitRank: member %d of %d (the id's communicator has %d, joined %s)"
                                   % (index, members, clique.size, sorted(clique.joined)))
            clique.joined.add(index)
            host, _, gpu = clique.members[index] = self.member()
            clique.lock.notify_all()
            # the initialisation is collective: every member learns every other's GPU
            if not clique.lock.wait_for(lambda: len(clique.joined) == clique.size, TIMEOUT):
                raise RuntimeError("ncclCommInitRank: members %s never came"
                                   % sorted(set(range(clique.size)) - clique.joined))
            for other in range(clique.size):
                o_host, _, o_gpu = clique.members[other]
                if other != index and (o_host, o_gpu) == (host, gpu):
                    warning = "NCCL WARN Duplicate GPU detected : rank %d and rank %d both on CUDA device %s" % (
                        index, other, gpu)
                    self.refused.append(warning)
                    raise NcclError("%s\n%s" % (INVALID_USAGE, warning))
        return _Comm(clique, index)

    def abort(self, comm):
        comm.clique.aborted = True
        self.aborted.append(comm.index)

    def event(self):
        done = self.event_done
        # CuPy's Event answers through the property `done` and has no query(): the first GPU run found the
        # watchdog calling query() (AttributeError in its thread), so the fake has exactly CuPy's surface
        return type("Event", (), {"done": done})()

    # --- groups -------------------------------------------------------------------------------------------------
    def group_start(self):
        depth = getattr(self._group, "depth", 0)
        if depth == 0:
            self._group.ops = []
        self._group.depth = depth + 1

    def group_end(self):
        self._group.depth -= 1
        if self._group.depth == 0:
            ops, self._group.ops = self._group.ops, None
            sends = [op for op in ops if op[0] == "send"]
            for op in sends + [op for op in ops if op[0] != "send"]:
                self._run(*op)

    def _issue(self, *op):
        self.calls.append((op[1].index, op[0]))
        if getattr(self._group, "depth", 0):
            self._group.ops.append(op)
        else:
            self._run(*op)

    # --- operations ---------------------------------------------------------------------------------------------
    def all_reduce(self, comm, send, recv, op):
        self._issue("all_reduce", comm, send, recv, op)

    def reduce(self, comm, send, recv, op, root):
        self._issue("reduce", comm, send, recv, op, root)

    def broadcast(self, comm, send, recv, root):
        self._issue("broadcast", comm, send, recv, root)

    def reduce_scatter(self, comm, send, recv, op):
        self._issue("reduce_scatter", comm, send, recv, op)

    def all_gather(self, comm, send, recv):
        self._issue("all_gather", comm, send, recv)

    def send(self, comm, buf, peer):
        self._issue("send", comm, buf, peer)

    def recv(self, comm, buf, peer):
        self._issue("recv", comm, buf, peer)

    def _run(self, kind, comm, *args):
        for a in args:
            if isinstance(a, np.ndarray) and not a.flags.c_contiguous:
                raise ValueError("%s: NCCL takes contiguous buffers" % kind)
        clique = comm.clique
        if clique.aborted:
            raise RuntimeError("%s on an aborted communicator" % kind)
        if kind == "send":
            buf, peer = args
            with clique.lock:
                clique.queues.setdefault((comm.index, peer), []).append(buf.copy())
                clique.lock.notify_all()
            return
        if kind == "recv":
            buf, peer = args
            with clique.lock:
                queue = clique.queues.setdefault((peer, comm.index), [])
                if not clique.lock.wait_for(lambda: queue or clique.aborted, TIMEOUT):
                    raise RuntimeError("recv from member %d: nothing came" % peer)
                data = queue.pop(0)
            if data.size != buf.size or data.dtype != buf.dtype:
                raise ValueError("recv of %d %s from member %d got %d %s" % (buf.size, buf.dtype, peer, data.size,
                                                                             data.dtype))
            buf[...] = data.reshape(buf.shape)
            return
        self._collective(clique, comm.index, kind, args)

    def _collective(self, clique, me, kind, args):
        with clique.lock:
            number = comm_round = clique.__dict__.setdefault("next_round", {}).get(me, 0)
            clique.next_round[me] = comm_round + 1
            entry = clique.rounds.setdefault(number, {})
            send = args[0]
            entry[me] = (kind, send.copy(), args)
            clique.lock.notify_all()
            if not clique.lock.wait_for(lambda: len(entry) == clique.size or clique.aborted, TIMEOUT):
                missing = sorted(set(range(clique.size)) - set(entry))
                raise RuntimeError("%s round %d: members %s never came" % (kind, number, missing))
            if len({e[0] for e in entry.values()}) != 1:
                raise RuntimeError("round %d: members issued different collectives %s" % (
                    number, {m: e[0] for m, e in entry.items()}))
            data = [entry[m][1] for m in range(clique.size)]
        self._write(kind, me, data, args, clique.size)

    @staticmethod
    def _write(kind, me, data, args, size):
        if kind == "all_reduce":
            send, recv, op = args
            recv[...] = _combine(data, op).reshape(recv.shape)
        elif kind == "reduce":
            send, recv, op, root = args
            if me == root:
                recv[...] = _combine(data, op).reshape(recv.shape)
        elif kind == "broadcast":
            send, recv, root = args
            recv[...] = data[root].reshape(recv.shape)
        elif kind == "reduce_scatter":
            send, recv, op = args
            total = _combine(data, op).reshape(size, -1)
            recv[...] = total[me].reshape(recv.shape)
        elif kind == "all_gather":
            send, recv = args
            recv[...] = np.concatenate([d.reshape(-1) for d in data]).reshape(recv.shape)


class _Comm:
    def __init__(self, clique, index):
        self.clique, self.index = clique, index


def _combine(data, op):
    if any(d.shape != data[0].shape or d.dtype != data[0].dtype for d in data):
        raise ValueError("a collective's members gave %s" % [(d.shape, d.dtype) for d in data])
    out = data[0].copy()
    for d in data[1:]:
        if op == FakeNccl.SUM:
            out += d
        else:
            np.maximum(out, d, out=out)
    return out
