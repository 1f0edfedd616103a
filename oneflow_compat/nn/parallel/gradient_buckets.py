"""The communication behind `DistributedDataParallel` (local tensors, one per rank): parameters broadcast from
rank 0, gradients all-reduced bucket by bucket during backward, buffers broadcast before each forward.

Kept in one small module so that the runtime's own bucketed all-reduce can replace it: the DDP module
(`distributed.py`) calls only `broadcast_`, `Buckets.grad_view`, `Buckets.ready` and `Buckets.reset`. The
collectives go straight to the process comm (`comm/`: MPI between processes, nothing to do on one rank).

Buckets follow OneFlow 0.9 (`nn/parallel/distributed.py`): the parameters that require a gradient, in reverse
order (backward produces the last layers' gradients first), `bucket_size` parameters per bucket; each bucket is one
flat float32 buffer and each parameter's `.grad` is a view into it, so one all-reduce per bucket sums every
gradient in it. A bucket is all-reduced once all its parameters have their gradient, and only after every bucket
before it (all ranks then issue the same all-reduces in the same order). Each gradient is scaled by 1/world_size
first, so the result is the mean over the ranks.
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.runtime import global_eager


def _comm_and_ranks():
    comm = global_eager.comm()
    return comm, tuple(range(comm.size))


def broadcast_(arrays, root=0):
    """Every rank's `arrays` (numpy or device arrays, in place) take rank `root`'s values."""
    comm, ranks = _comm_and_ranks()
    if comm.size == 1:
        return
    for a in arrays:
        host = np.ascontiguousarray(devices.to_host(a))
        comm.bcast_(host, root, ranks)
        a[...] = host if not devices.is_device_array(a) else devices.array_module("gpu").asarray(host)


def _allreduce_(buffer):
    comm, ranks = _comm_and_ranks()
    if comm.size > 1:
        comm.allreduce_(buffer, ranks)


class Buckets:
    def __init__(self, params, bucket_size):
        if bucket_size < 1:
            raise ValueError("DistributedDataParallel: bucket_size must be at least 1, got %r" % (bucket_size,))
        self.params = list(reversed([p for p in params if p.requires_grad]))
        self.groups = [self.params[i:i + bucket_size] for i in range(0, len(self.params), bucket_size)]
        self.where = {}  # id(param) -> (bucket index, offset)
        self.buffers = []
        for b, group in enumerate(self.groups):
            offset = 0
            for p in group:
                self.where[id(p)] = (b, offset)
                offset += p.numel()
            self.buffers.append(np.zeros(offset, dtype=np.float32))
        self.ready_flags = {}
        self.done = [False] * len(self.groups)
        self.next_bucket = 0

    def grad_view(self, param):
        """A zeroed view of the bucket shaped like `param` (its `.grad` storage)."""
        b, offset = self.where[id(param)]
        view = self.buffers[b][offset:offset + param.numel()].reshape(tuple(param.shape))
        view[...] = 0
        return view

    def reset(self):
        """A new backward pass begins (OneFlow resets the state after each forward)."""
        self.ready_flags = {}
        self.done = [False] * len(self.groups)
        self.next_bucket = 0

    def ready(self, param):
        """`param`'s gradient is complete: all-reduce every bucket, in order, whose gradients are all complete."""
        self.ready_flags[id(param)] = True
        while self.next_bucket < len(self.groups):
            group = self.groups[self.next_bucket]
            if not all(self.ready_flags.get(id(p)) for p in group):
                break
            _allreduce_(self.buffers[self.next_bucket])
            self.done[self.next_bucket] = True
            self.next_bucket += 1
