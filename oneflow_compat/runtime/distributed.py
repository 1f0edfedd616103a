"""Values that cross processes (MPI) outside boxing: consistent feeds from rank 0, mirrored fetches, and the
boxing executor.

Rank r owns the devices of machine r, and a placement's devices are in machine order, so each rank's pieces of a
blob are a contiguous run of its parallel order. Boxing itself (every SBP / placement transition, in one process
or across processes) is planned once, in `ops/transitions.py`, and run by `runtime/boxing.py`.
"""
import numpy as np

from oneflow_compat.runtime import boxing


def make_boxing(rt, attrs, meta, owned=False):
    """The boxing function of a move (`runtime/boxing.py` has every transition's executor)."""
    return boxing.executor(rt, attrs, meta, owned, over_processes=True)


def gather_mirrored(rt, local, placement):
    """Every device's mirrored piece, in parallel order, on every rank (shapes may differ per device)."""
    comm = rt.comm
    metas = comm.allgather_object([(p.shape, p.dtype.str) for p in local])
    out = []
    for r, per_rank in enumerate(metas):
        for k, (shape, dt) in enumerate(per_rank):
            buf = np.ascontiguousarray(local[k]) if r == comm.rank else np.empty(shape, np.dtype(dt))
            comm.bcast_(buf, r, list(range(comm.size)))
            out.append(buf)
    return out


def feed_from_rank0(rt, value):
    """A consistent feed has one source of truth: rank 0's array, broadcast to every rank."""
    comm = rt.comm
    if comm.size == 1:
        return value
    meta = comm.bcast_object((value.shape, value.dtype.str) if comm.rank == 0 else None, root=0)
    buf = np.ascontiguousarray(value) if comm.rank == 0 else np.empty(meta[0], np.dtype(meta[1]))
    comm.bcast_(buf, 0, list(range(comm.size)))
    return buf
