"""Pieces that live in other processes (MPI): gathering logical values and boxing across ranks."""
import numpy as np

from oneflow_compat.runtime import devices


def all_local(rt, placement):
    return all(m == rt.machine_id for m, _ in placement.pairs)


def gather_pieces(rt, shards, placement):
    """Every piece of a blob in parallel order, in every process (an all-gather over the processes involved
    plus this process's own pieces)."""
    comm = rt.comm
    objs = comm.allgather_object({i: np.asarray(devices.to_host(a)) for i, a in shards.items()})
    pieces = {}
    for d in objs:
        pieces.update(d)
    return [pieces[i] for i in range(placement.parallel_num)]


def gather_mirrored(rt, local, placement):
    comm = rt.comm
    idx = rt.local_indices(placement)
    objs = comm.allgather_object(dict(zip(idx, local)))
    pieces = {}
    for d in objs:
        pieces.update(d)
    return [pieces[i] for i in range(placement.parallel_num)]


def make_boxing(rt, attrs, meta):
    raise NotImplementedError("boxing across processes is not wired yet")
