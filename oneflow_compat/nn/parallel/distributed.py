"""`oneflow.nn.parallel.DistributedDataParallel` (OneFlow 0.9, `python/oneflow/nn/parallel/distributed.py`): data
parallelism on local tensors, one process per rank. As in OneFlow it is a function that returns the SAME module,
prepared:

* `broadcast_parameters=True`: every parameter takes rank 0's value;
* the gradients of the parameters that require one live in flat buckets (`bucket_size` parameters each, in
  reverse order: backward produces the last layers' gradients first): each parameter's `.grad` is a view of its
  bucket. As soon as every gradient of a bucket is complete during `backward()` (each scaled by 1/world_size, so
  `.grad` becomes the mean over the ranks) the bucket's all-reduce starts, and the rest of backward runs while the
  ranks sum it; backward ends by waiting for them all, as PyTorch's DDP Reducer does (OneFlow's own all-reduce runs
  asynchronously in its VM);
* `broadcast_buffers=True`: before each forward the buffers take rank 0's values.

The buckets are the runtime's gradient buckets (`runtime/buckets.GradBuckets`: the one bucket mechanism, also
behind eager global data parallelism and nn.Graph), with their buffers in memory the ranks of one host share
(`comm/shm.py`), and each bucket all-reduce is listed by `explain` with the bytes its flat buffer sends. Only
float32 parameters, all on one device, are accepted (OneFlow asserts the same).
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.placement import Placement
from oneflow_compat.runtime import autograd, buckets, global_eager
from oneflow_compat._global.modules import Module
from oneflow_compat._global.tensor import Tensor


def DistributedDataParallel(module, *, broadcast_buffers=True, broadcast_parameters=True,  # noqa: N802
                            bucket_size=10):
    if not isinstance(module, Module):
        raise TypeError("DistributedDataParallel: expected a flow.nn.Module, got %s" % type(module).__name__)
    params = list(module.parameters())
    for name, p in module.named_parameters():
        if p.dtype is not dtypes.float32:
            raise AssertionError("DistributedDataParallel: parameter '%s' is %s; only float32 parameters are "
                                 "supported" % (name, p.dtype))
        if p.is_global:
            raise ValueError("DistributedDataParallel: parameter '%s' is a global tensor; DistributedDataParallel "
                             "is for local tensors (a global module is data-parallel by its sbp already)" % name)
    if params and any(p._device != params[0]._device for p in params):
        raise AssertionError("DistributedDataParallel: all parameters must be on one device")
    bucket_size = int(bucket_size)
    if bucket_size < 1:
        raise ValueError("DistributedDataParallel: bucket_size must be at least 1, got %r" % (bucket_size,))
    comm = global_eager.comm()
    ranks = tuple(range(comm.size))
    if broadcast_parameters:
        with autograd.no_grad():
            broadcast_([a for p in params for a in p._value.pieces])
    reversed_params = list(reversed([p for p in params if p.requires_grad]))
    tag = params[0]._value.placement.device_tag if params else "cpu"
    grad_buckets = buckets.GradBuckets(
        [tuple(p.shape) for p in reversed_params], [np.float32] * len(reversed_params), ranks,
        cap_bytes=float("inf"), per_bucket=bucket_size, placement=Placement(tag, [(r, 0) for r in ranks]),
        what="DistributedDataParallel gradient all-reduce")
    # parameters on a GPU: their gradients stay device arrays (`.grad` cannot be a view of the host buckets, where
    # the backward's device gradients could not accumulate); each complete one is copied into its bucket slot, and
    # the reduced slots are copied back when the pass waits (staged through the host, as boxing between processes
    # sharing a GPU is)
    on_device = bool(params) and devices.is_device_array(params[0]._value.pieces[0])
    state = _State(grad_buckets, 1.0 / comm.size, on_device)
    for k, p in enumerate(reversed_params):
        p.register_hook(_grad_setting(state, p, k))
        p._register_post_grad_accumulation_hook(_scale_and_reduce(state, k))

    def post_forward_hook(mod, inputs, output):
        grad_buckets.reset()
        return None

    module.register_forward_hook(post_forward_hook)
    if broadcast_buffers:
        def pre_forward_hook(mod, inputs):
            with autograd.no_grad():
                broadcast_([a for b in mod.buffers() for a in b._value.pieces])

        module.register_forward_pre_hook(pre_forward_hook)
    object.__setattr__(module, "_is_ddp_module", True)
    object.__setattr__(module, "_ddp_buckets", grad_buckets)
    return module


def broadcast_(arrays, root=0):
    """Every rank's `arrays` (numpy or device arrays, in place) take rank `root`'s values."""
    comm = global_eager.comm()
    if comm.size == 1:
        return
    ranks = tuple(range(comm.size))
    for a in arrays:
        host = np.ascontiguousarray(devices.to_host(a))
        comm.bcast_(host, root, ranks)
        a[...] = host if not devices.is_device_array(a) else devices.array_module("gpu").asarray(host)


class _State:
    """The DDP module's buckets, its gradient factor, and whether this backward pass queued its final wait."""

    def __init__(self, grad_buckets, factor, on_device=False):
        self.buckets, self.factor, self.waiting = grad_buckets, factor, False
        self.on_device = on_device
        self.device_grads = {}  # entry: the device array of its `.grad` (parameters on a GPU), set by the hook

    def wait(self):
        self.waiting = False
        self.buckets.wait()
        if self.on_device:
            grads, self.device_grads = self.device_grads, {}
            for k, g in grads.items():
                g[...] = self.buckets.view(k)  # (an upload into the gradient's own memory, on its own GPU)


def _grad_setting(state, param, k):
    """Before an accumulation, the parameter's `.grad` becomes its view of the bucket (OneFlow's grad_setting_fn;
    a gradient accumulated before without zero_grad is kept)."""
    def grad_setting(grad):
        if state.on_device:
            return None
        g = param.grad
        view = state.buckets.view(k)
        if g is None or not _is_view(g, view):
            if g is None:
                view[...] = 0
            else:
                view[...] = devices.to_host(g._value.pieces[0])
            param.grad = Tensor._make(param._value.__class__(param._value.meta, param._value.placement,
                                                             param._value.sbp, [view]), device=param._device)
        return None

    return grad_setting


def _is_view(g, view):
    piece = g._value.pieces[0] if g._value.pieces else None
    return isinstance(piece, np.ndarray) and piece.shape == view.shape and \
        piece.__array_interface__["data"][0] == view.__array_interface__["data"][0]


def _scale_and_reduce(state, k):
    """After the accumulation: the gradient times 1/world_size (OneFlow's inplace_mul_and_return_none), then its
    bucket's all-reduce starts once the bucket is complete (OneFlow's allreduce_fn); the end of the backward pass
    waits for every one started."""
    def hook(grad):
        if state.factor != 1.0:
            for a in grad._value.pieces:
                a *= np.float32(state.factor)
        if state.on_device:
            piece = grad._value.pieces[0]
            state.buckets.view(k)[...] = devices.to_host(piece)
            state.device_grads[k] = piece
        if state.buckets.ready(k) and not state.waiting:
            state.waiting = True
            autograd.queue_callback(state.wait)

    return hook
