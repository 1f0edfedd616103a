"""`eager_ccl_all_reduce`: the sum of a local tensor over ranks, for graphs of local tensors (the leftovers helper).

In a graph of local tensors every rank compiles and runs its own copy of the job (its ops on this rank's device);
this op is the one place where those copies meet: its output is the elementwise sum of its input over the ranks
named by `ranks` (sorted world ranks, this one among them), one all-reduce of the process comm per call, issued
in the plan's order. Every rank of `ranks` must run the same graph, as OneFlow's collectives require. Its
gradient is the same sum of the output gradients (each rank's loss reaches every rank's input), which is what
makes `nn.SyncBatchNorm` inside such a graph (`_global/nn_sync_batchnorm.py`) differentiate the sum of every
rank's loss, as PyTorch's and OneFlow's SyncBatchNorm backward all-reduce their sums.

The type name is OneFlow's (v0.9.0 `flow._C.local_all_reduce` builds an `eager_ccl_all_reduce` user op over a rank
group, core/functional/impl/comm_functor.cpp), so another branch adding it clashes at merge.
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B
from oneflow_compat.ops.registry import OpDef, apply, register


def _meta(op):
    ranks = tuple(op.attrs["ranks"])
    if not ranks or list(ranks) != sorted(set(ranks)):
        raise ValueError("eager_ccl_all_reduce '%s': ranks must be distinct world ranks in ascending order, got %s"
                         % (op.name, list(ranks)))
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _build(op, session):
    """One all-reduce over the named ranks of this process's one piece (a local graph: one device here)."""
    comm, ranks = session.runtime.comm, list(op.attrs["ranks"])
    if comm.rank not in ranks:
        raise ValueError("eager_ccl_all_reduce '%s': this rank (%d) is not among the ranks %s it sums over"
                         % (op.name, comm.rank, ranks))

    def all_reduce(*pieces):
        outs = []
        for piece in pieces:
            xp = devices.module_of(piece)
            host = np.array(devices.to_host(piece), copy=True)
            total = comm.allreduce_(host, ranks) if len(ranks) > 1 else host
            outs.append(xp.asarray(total) if xp is not np else total)
        return tuple(outs)

    return all_reduce


register(OpDef("eager_ccl_all_reduce", infer=_meta, collective=True, build_collective=_build,
               sbp=lambda op: [((B,), (B,))],
               grad=lambda op, dys: [apply("eager_ccl_all_reduce", [dys[0]], {"ranks": tuple(op.attrs["ranks"])})]))
