"""OneFlow 0.9's normalization for tensors: `flow.nn.BatchNorm1d/2d/3d`, `LayerNorm`, `GroupNorm`,
`InstanceNorm1d/2d/3d` and the functional `batch_norm`, `layer_norm`, `group_norm`, `instance_norm`, on the
registry's `normalization` and `layer_norm` ops (the declarations the legacy functions use).

Batch normalization in training normalizes with the batch's statistics, computed by reduction ops (so their
gradient flows, and a batch split across ranks reduces to partial sums: N ranks give 1 rank's numbers); the running
statistics are updated in place by the `moving_average_update` op, eagerly as inside `nn.Graph`, as OneFlow 0.9
(and PyTorch) update them: running = (1 - momentum) · running + momentum · batch statistic, the variance unbiased
(n / (n - 1), OneFlow 0.9's normalization kernels), `momentum=None` a cumulative average. Group and instance
normalization are layer norms of the input reshaped to (N, groups or C, -1), then a per-channel affine.

Signatures, defaults and reprs: OneFlow 0.9's python/oneflow/nn/modules/batchnorm.py, normalization.py,
instancenorm.py.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.runtime import autograd
from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module, Parameter


def _stats_axes(x, axis):
    return [i for i in range(x.ndim) if i != axis]


def _update_running(running, stat, momentum):
    """running <- (1 - momentum) running + momentum stat, in place (the op's momentum is the kept fraction)."""
    with autograd.no_grad():
        apply_op("moving_average_update", [running, F.cast(stat.detach(), running.dtype)],
                 {"momentum": float(1.0 - momentum)})


def _normalization(x, mean, var, weight, bias, axis, eps):
    ins = [x, mean, var] + ([weight] if weight is not None else []) + ([bias] if bias is not None else [])
    return apply_op("normalization", ins, {"axis": axis, "epsilon": float(eps), "center": bias is not None,
                                           "scale": weight is not None})


class BatchNormInputError(RuntimeError, ValueError):
    """Statistics or an input batch_norm cannot take: OneFlow 0.9's RuntimeError; a ValueError too, as this project
    raised before."""


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,  # noqa: A002
               eps=1e-5, axis=1):
    """Normalizes channel axis `axis` with the batch's statistics (training, updating the running ones when given)
    or the running ones."""
    # OneFlow 0.9's NormalizationFunctor checks, in its order and words (core/functional/impl/nn_functor.cpp;
    # its nn.functional.batch_norm is _C.normalization)
    if (running_mean is None) != (running_var is None):
        raise BatchNormInputError("Both running_mean and running_variance should be None or Tensor.")
    x = F._floating(F._check(input, "batch_norm"))
    if x.ndim < 2:
        raise BatchNormInputError("NumAxes of x should be greater or equal than 2. ")
    if training:
        axes = _stats_axes(x, axis)
        count = 1
        for a in axes:
            count *= x.shape[a]
        if count <= 1:
            raise ValueError("Expected more than 1 value per channel when training, got input size %s"
                             % (tuple(x.shape),))
        mean = F.mean(x, axes)
        var = F.mean(F.square(F.sub(x, F.reshape(mean, tuple(x.shape[i] if i == axis else 1
                                                               for i in range(x.ndim))))), axes)
        if running_mean is not None and running_var is not None and momentum is not None:
            _update_running(running_mean, mean, momentum)
            _update_running(running_var, F.mul(var, count / (count - 1)), momentum)
        return _normalization(x, mean, var, weight, bias, axis, eps)
    if running_mean is None or running_var is None:
        raise BatchNormInputError("Must have moving_mean and moving_variance in eval mode.")
    return _normalization(x, running_mean, running_var, weight, bias, axis, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):  # noqa: A002
    x = F._floating(F._check(input, "layer_norm"))
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if len(x.shape) <= len(normalized_shape):
        raise AssertionError("Input tensor dim must greater than normalized dim!")
    begin = x.ndim - len(normalized_shape)
    if tuple(x.shape[begin:]) != normalized_shape:
        raise RuntimeError("Given normalized_shape=%s, expected input with shape [*, %s], but got input of size %s"
                           % (normalized_shape, str(normalized_shape)[1:-1], x.shape))  # OneFlow 0.9's text
    ins = [x] + ([weight] if weight is not None else []) + ([bias] if bias is not None else [])
    y = apply_op("layer_norm", ins, {"begin_norm_axis": begin, "begin_params_axis": begin, "epsilon": float(eps),
                                     "center": bias is not None, "scale": weight is not None})
    return y[0]


def _per_channel(t, ndim):
    return F.reshape(t, (1, -1) + (1,) * (ndim - 2))


def _grouped(x, groups, weight, bias, eps):
    """x (N, C, ...) normalized per (sample, group of channels), then weight / bias per channel."""
    shape = tuple(x.shape)
    rows = F.reshape(x, (shape[0], groups, -1))
    y = apply_op("layer_norm", [rows], {"begin_norm_axis": 2, "begin_params_axis": 2, "epsilon": float(eps),
                                        "center": False, "scale": False})[0]
    y = F.reshape(y, shape)
    if weight is not None:
        y = F.mul(y, _per_channel(weight, len(shape)))
    if bias is not None:
        y = F.add(y, _per_channel(bias, len(shape)))
    return y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):  # noqa: A002
    x = F._floating(F._check(input, "group_norm"))
    if x.ndim < 3:
        raise AssertionError("The dimensions of input tensor must larger than 2")
    if x.shape[1] % num_groups:
        raise AssertionError("The channel should be divisible by num_groups.")
    return _grouped(x, num_groups, weight, bias, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    x = F._floating(F._check(input, "instance_norm"))
    return _grouped(x, x.shape[1], weight, bias, eps)


# --- modules ----------------------------------------------------------------------------------------------------
class _NormBase(Module):
    tracks_batches = True  # a num_batches_tracked buffer (OneFlow 0.9's fused batch norm keeps none)

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__()
        from oneflow_compat._global import creation

        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(creation.ones(num_features))
            self.bias = Parameter(creation.zeros(num_features))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features))
            self.register_buffer("running_var", creation.ones(num_features))
            if self.tracks_batches:
                self.register_buffer("num_batches_tracked", creation.tensor(0, dtype=dtypes.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            if self.tracks_batches:
                self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            if self.tracks_batches:
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            self.weight.fill_(1)
            self.bias.zero_()

    def _check_input_dim(self, input):  # noqa: A002
        raise NotImplementedError

    def extra_repr(self):
        return "{num_features}, eps={eps}, momentum={momentum}, affine={affine}, " \
               "track_running_stats={track_running_stats}".format(**self.__dict__)


class _BatchNorm(_NormBase):
    channel_axis = 1

    def forward(self, x):
        self._check_input_dim(x)
        momentum = self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with autograd.no_grad():  # += 1 in place, as an op (so that nn.Graph counts too)
                apply_op("moving_average_update", [self.num_batches_tracked, F.add(self.num_batches_tracked, 1)],
                         {"momentum": 0.0})
            if momentum is None:  # a cumulative moving average (eager only: it reads the count)
                momentum = 1.0 / float(self.num_batches_tracked.numpy())
        training = self.training or (self.running_mean is None and self.running_var is None)
        return batch_norm(x, self.running_mean if not self.training or self.track_running_stats else None,
                          self.running_var if not self.training or self.track_running_stats else None,
                          self.weight, self.bias, training, momentum, self.eps, self.channel_axis)


class BatchNorm1d(_BatchNorm):
    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim != 2 and input.ndim != 3:
            raise ValueError("expected 2D or 3D input (got {}D input)".format(input.ndim))


class BatchNorm2d(_BatchNorm):
    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim != 4:
            raise ValueError("expected 4D input (got {}D input)".format(input.ndim))


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):  # noqa: A002
        if input.ndim != 5:
            raise ValueError("expected 5D input (got {}D input)".format(input.ndim))


class _InstanceNorm(_NormBase):
    """OneFlow 0.9's instance norms always normalize with the instance's own statistics (their running buffers,
    with track_running_stats=True, are kept but not used)."""

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def forward(self, x):
        self._check_input_dim(x)
        return _grouped(x, x.shape[1], self.weight, self.bias, self.eps)


class InstanceNorm1d(_InstanceNorm):
    def _check_input_dim(self, input):  # noqa: A002
        if input.dim() == 2:
            raise ValueError("InstanceNorm1d returns 0-filled tensor to 2D tensor.This is because InstanceNorm1d "
                             "reshapes inputs to(1, N * C, ...) from (N, C,...) and this makesvariances 0.")
        if input.dim() != 3:
            raise ValueError("expected 3D input (got {}D input)".format(input.dim()))


class InstanceNorm2d(_InstanceNorm):
    def _check_input_dim(self, input):  # noqa: A002
        if input.dim() != 4:
            raise ValueError("expected 4D input (got {}D input)".format(input.dim()))


class InstanceNorm3d(_InstanceNorm):
    def _check_input_dim(self, input):  # noqa: A002
        if input.dim() != 5:
            raise ValueError("expected 5D input (got {}D input)".format(input.dim()))


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True):
        super().__init__()
        from oneflow_compat._global import creation

        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(*self.normalized_shape))
            self.bias = Parameter(creation.zeros(*self.normalized_shape))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True):
        super().__init__()
        from oneflow_compat._global import creation

        if num_groups <= 0:
            raise AssertionError("The num_groups must larger than zero")
        if num_channels <= 0:
            raise AssertionError("The num_channels must larger than zero")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(creation.ones(num_channels))
            self.bias = Parameter(creation.zeros(num_channels))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002
        if len(input.shape) < 3:
            raise AssertionError("The dimensions of input tensor must larger than 2")
        if input.shape[1] != self.num_channels:
            raise AssertionError("The channels of input tensor must equal num_channels")
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}".format(**self.__dict__)
