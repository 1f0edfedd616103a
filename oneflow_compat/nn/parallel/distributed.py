"""`oneflow.nn.parallel.DistributedDataParallel` (OneFlow 0.9, `nn/parallel/distributed.py`): data parallelism on
local tensors, one process per rank. As in OneFlow it is a function that returns the SAME module, prepared:

* `broadcast_parameters=True`: every parameter takes rank 0's value;
* the gradients of the parameters that require one live in flat buckets (`bucket_size` parameters each, in
  reverse order); as soon as every gradient of a bucket is complete during `backward()` the bucket is
  all-reduced, each gradient having been scaled by 1/world_size, so `.grad` is the mean over the ranks;
* `broadcast_buffers=True`: before each forward the buffers take rank 0's values.

Only float32 parameters, all on one device, are accepted (OneFlow asserts the same). The collectives are in
`gradient_buckets.py`.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.runtime import autograd
from oneflow_compat._global.modules import Module
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.nn.parallel import gradient_buckets


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
    if broadcast_parameters:
        with autograd.no_grad():
            gradient_buckets.broadcast_([a for p in params for a in p._value.pieces])
    buckets = gradient_buckets.Buckets(params, int(bucket_size))
    world = gradient_buckets._comm_and_ranks()[0].size
    factor = 1.0 / world

    for p in buckets.params:
        p.register_hook(_grad_setting(buckets, p))
        p._register_post_grad_accumulation_hook(_scale_and_reduce(buckets, p, factor))

    def post_forward_hook(mod, inputs, output):
        buckets.reset()
        return None

    module.register_forward_hook(post_forward_hook)
    if broadcast_buffers:
        def pre_forward_hook(mod, inputs):
            with autograd.no_grad():
                gradient_buckets.broadcast_([a for b in mod.buffers() for a in b._value.pieces])

        module.register_forward_pre_hook(pre_forward_hook)
    object.__setattr__(module, "_is_ddp_module", True)
    object.__setattr__(module, "_ddp_buckets", buckets)
    return module


def _grad_setting(buckets, param):
    """Before the first accumulation of a pass, the parameter's `.grad` becomes its view into the bucket."""
    def grad_setting(grad):
        g = param.grad
        if g is None or not _is_view_of_bucket(g, buckets, param):
            view = buckets.grad_view(param)
            if g is not None:  # a gradient accumulated before (no zero_grad): keep it
                view[...] = g.numpy()
            param.grad = Tensor._make(param._value.__class__(param._value.meta, param._value.placement,
                                                             param._value.sbp, [view]), device=param._device)
        return None

    return grad_setting


def _is_view_of_bucket(g, buckets, param):
    piece = g._value.pieces[0] if g._value.pieces else None
    b, _ = buckets.where[id(param)]
    return piece is not None and piece.base is buckets.buffers[b]


def _scale_and_reduce(buckets, param, factor):
    def hook(grad):
        if factor != 1.0:
            for a in grad._value.pieces:
                a *= factor
        buckets.ready(param)

    return hook
