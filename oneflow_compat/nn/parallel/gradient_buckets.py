"""The communication behind `DistributedDataParallel` (local tensors, one per rank): parameters broadcast from
rank 0, gradients all-reduced bucket by bucket during backward, buffers broadcast before each forward.

The DDP module (`distributed.py`) calls only `broadcast_`, `Buckets.grad_view`, `Buckets.ready` and
`Buckets.reset`; the buckets are the runtime's (`runtime/buckets.py`), the broadcasts go straight to the process
comm (`comm/`: MPI between processes, nothing to do on one rank).

Buckets follow OneFlow 0.9 (`nn/parallel/distributed.py`): the parameters that require a gradient, in reverse
order (backward produces the last layers' gradients first), `bucket_size` parameters per bucket; each bucket is one
flat float32 buffer and each parameter's `.grad` is a view into it, so one all-reduce per bucket sums every
gradient in it. A bucket is all-reduced once all its parameters have their gradient, and only after every bucket
before it (all ranks then issue the same all-reduces in the same order). Each gradient is scaled by 1/world_size
first, so the result is the mean over the ranks.
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.runtime import buckets as runtime_buckets
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


class Buckets:
    """DDP's buckets on the runtime's gradient buckets (`runtime/buckets.py: GradBuckets`, the engine's bucketed
    all-reduce): the parameters that require a gradient in reverse order, `bucket_size` of them per bucket (OneFlow
    counts parameters, not bytes), one persistent flat float32 buffer each; a bucket is all-reduced in order as soon
    as all its gradients are complete, the first all-reduce of a backward pass checked across the ranks."""

    def __init__(self, params, bucket_size):
        if bucket_size < 1:
            raise ValueError("DistributedDataParallel: bucket_size must be at least 1, got %r" % (bucket_size,))
        self.params = list(reversed([p for p in params if p.requires_grad]))
        self.index = {id(p): k for k, p in enumerate(self.params)}
        _, ranks = _comm_and_ranks()
        self.grads = runtime_buckets.GradBuckets(
            [tuple(p.shape) for p in self.params], [np.float32] * len(self.params), ranks,
            cap_bytes=float("inf"), per_bucket=int(bucket_size),
            what="DistributedDataParallel gradient all-reduce of %d parameter(s)" % len(self.params))
        self.buffers = self.grads.buffers
        self.where = {id(p): (self.grads.slots[k][0], self.grads.slots[k][1]) for k, p in enumerate(self.params)}

    def grad_view(self, param):
        """A zeroed view of the bucket shaped like `param` (its `.grad` storage)."""
        view = self.grads.view(self.index[id(param)])
        view[...] = 0
        return view

    def reset(self):
        """A new backward pass begins (OneFlow resets the state after each forward)."""
        self.grads.reset()

    def ready(self, param):
        """`param`'s gradient is complete: all-reduce every bucket, in order, whose gradients are all complete."""
        self.grads.ready(self.index[id(param)])
