"""OneFlow 0.9's `nn.SyncBatchNorm` and `SyncBatchNorm.convert_sync_batchnorm` (issue 21, the nnextra helper).

Batch normalization whose training statistics are those of the whole batch across the ranks:

* On global tensors every batch normalization already is (the statistics are reductions over the logical batch,
  whatever its split): SyncBatchNorm is BatchNorm there.
* On local tensors (data parallel: each rank its own samples, `DistributedDataParallel`) with a world of more than
  one rank, in training, the input is viewed as one global tensor split along the batch over every rank (no data
  moves: `to_global` of the local pieces), its per-channel mean and variance are the global reductions (partial sums
  all-reduced by the runtime's comm), and the normalized global tensor is read back as this rank's piece. Both views
  are differentiable, so the input gradient is that of the sum of every rank's loss, as PyTorch's SyncBatchNorm
  (its backward all-reduces the gradient sums). The affine weight and bias apply to the local piece, so their
  gradients stay this rank's own, which DDP then averages as for any parameter. The running statistics take the
  whole batch's (unbiased variance), alike on every rank.
* Otherwise (evaluation, one rank) it is BatchNorm.

* Inside nn.Graph, on local tensors with a world of more than one rank, in training: each rank's graph sums its
  per-channel sums and counts, then its centred square sums, with every other rank's (`eager_ccl_all_reduce`,
  ops/rank_collective_ops.py: one all-reduce each, in the graph's plan), normalizes its piece with the whole
  batch's mean and variance and updates the running statistics with them; the all-reduces' gradients are
  all-reduces, so the input gradient is again that of every rank's loss summed, the affine parameters' this rank's
  own. Local batches may differ in size (the counts travel with the sums). This goes beyond OneFlow 0.9, whose
  SyncBatchNormFunction gathers the statistics with `flow.comm.all_gather`, i.e. `local_tensor.to_global()`,
  which its nn.Graph refuses ("local_tensor.to_global() is not supported within nn.Graph for now",
  core/functional/impl/global_cast.cpp LocalToGlobal, v0.9.0): a script that ran under OneFlow runs the same here,
  and one that OneFlow refused synchronizes as it does eagerly.

Every rank must call it alike in training (each call is a collective), as in OneFlow. OneFlow 0.9 requires
`track_running_stats=True` when it synchronizes, and CUDA inputs; this one runs on any device.
Signatures: OneFlow v0.9.0 python/oneflow/nn/modules/batchnorm.py.
"""
from oneflow_compat.runtime import autograd, global_eager
from oneflow_compat._global import functional as F
from oneflow_compat._global import lazy
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.nn_norms import _BatchNorm, _normalization, _stats_axes, _update_running


class SyncBatchNorm(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim < 2:
            raise ValueError("expected at least 2D input (got {}D input)".format(input.ndim))
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, x):
        if not (self.training and x.is_local and global_eager.world_size() > 1):
            return super().forward(x)
        self._check_input_dim(x)
        if not self.track_running_stats:
            raise AssertionError("`track_running_stats` should be True when using SyncBatchNorm.")
        in_graph = lazy.tracer_active()
        if in_graph and self.momentum is None:
            raise ValueError("SyncBatchNorm: momentum=None (a cumulative average) reads the batch count on the host, "
                             "which nn.Graph cannot; give a momentum or call it eagerly")
        momentum = self.momentum
        with autograd.no_grad():  # num_batches_tracked += 1, as BatchNorm counts
            apply_op("moving_average_update", [self.num_batches_tracked, F.add(self.num_batches_tracked, 1)],
                     {"momentum": 0.0})
        if momentum is None:
            momentum = 1.0 / float(self.num_batches_tracked.numpy())
        if in_graph:
            return _synchronized_in_graph(x, self, momentum)
        return _synchronized(x, self, momentum)


def _synchronized(x, bn, momentum):
    from oneflow_compat import sbp as flow_sbp
    from oneflow_compat._global.placement import placement

    x = F._floating(x)
    axis = bn.channel_axis
    world = global_eager.world_size()
    pl = placement(x.device.type, list(range(world)))
    xg = x.to_global(placement=pl, sbp=flow_sbp.split(0))
    axes = _stats_axes(xg, axis)
    count = 1
    for a in axes:
        count *= xg.shape[a]
    if count <= 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size %s (over %d ranks)"
                         % (tuple(xg.shape), world))
    mean = F.mean(xg, axes)
    centred = F.sub(xg, F.reshape(mean, tuple(xg.shape[i] if i == axis else 1 for i in range(xg.ndim))))
    var = F.mean(F.square(centred), axes)
    y = _normalization(xg, mean, var, None, None, axis, bn.eps).to_local()
    with autograd.no_grad():
        b = [flow_sbp.broadcast]
        _update_running(bn.running_mean, mean.to_global(sbp=b).to_local(), momentum)
        _update_running(bn.running_var, F.mul(var, count / (count - 1)).to_global(sbp=b).to_local(), momentum)
    shape = tuple(x.shape[i] if i == axis else 1 for i in range(x.ndim))
    if bn.weight is not None:
        y = F.mul(y, F.reshape(bn.weight, shape))
    if bn.bias is not None:
        y = F.add(y, F.reshape(bn.bias, shape))
    return y


def _all_ranks_sum(t):
    """`t` summed over every rank's copy of the graph (ops/rank_collective_ops.py)."""
    return apply_op("eager_ccl_all_reduce", [t], {"ranks": tuple(range(global_eager.world_size()))})


def _synchronized_in_graph(x, bn, momentum):
    """Inside nn.Graph on local tensors: the whole batch's statistics from every rank's sums (two passes: the
    mean first, then the centred squares around it, as the eager path's reductions), each summed over the ranks
    by one all-reduce."""
    x = F._floating(x)
    axis = bn.channel_axis
    axes = _stats_axes(x, axis)
    channels = x.shape[axis]
    local_count = 1
    for a in axes:
        local_count *= x.shape[a]
    sums = F.sum(x, axes)
    counts = F.add(F.mul(sums, 0.0), float(local_count))  # this rank's count, one per channel, beside its sums
    both = _all_ranks_sum(F.cat([sums, counts], 0))
    total, count = both[:channels], both[channels:]
    mean = F.div(total, count)
    shape = tuple(x.shape[i] if i == axis else 1 for i in range(x.ndim))
    centred = F.sub(x, F.reshape(mean, shape))
    var = F.div(_all_ranks_sum(F.sum(F.square(centred), axes)), count)
    y = _normalization(x, mean, var, None, None, axis, bn.eps)
    with autograd.no_grad():
        _update_running(bn.running_mean, mean, momentum)
        _update_running(bn.running_var, F.div(F.mul(var, count), F.sub(count, 1.0)), momentum)  # unbiased
    if bn.weight is not None:
        y = F.mul(y, F.reshape(bn.weight, shape))
    if bn.bias is not None:
        y = F.add(y, F.reshape(bn.bias, shape))
    return y


def convert_sync_batchnorm(cls, module, process_group=None):
    """Every BatchNorm1d/2d/3d in `module` (itself included) replaced by a SyncBatchNorm sharing its parameters and
    running statistics (OneFlow 0.9's classmethod; `process_group` is accepted and must be None: all ranks)."""
    if process_group is not None:
        raise ValueError("convert_sync_batchnorm: process_group must be None (every rank synchronizes), got %r"
                         % (process_group,))
    out = module
    if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
        out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats)
        if module.affine:
            out.weight = module.weight
            out.bias = module.bias
        out.running_mean = module.running_mean
        out.running_var = module.running_var
        out.num_batches_tracked = module.num_batches_tracked
        out.training = module.training
    for name, child in module.named_children():
        out.add_module(name, convert_sync_batchnorm(cls, child))
    return out


SyncBatchNorm.convert_sync_batchnorm = classmethod(convert_sync_batchnorm)
