"""OneFlow 0.9's further normalizations, composed of registered ops (so they differentiate, run on global tensors
and trace into nn.Graph):

* `nn.RMSNorm(normalized_shape, eps=1e-5, elementwise_affine=True)` and `flow._C.rms_norm(x, weight,
  normalized_shape, epsilon=1e-6)`: y = x · rsqrt(mean(x², over the normalized axes) + eps) · weight
  (RMSNormFunctor and the rms_norm kernel);
* `nn.RMSLayerNorm(hidden_size, eps=1e-6)` (deprecated in 0.9, with its warning) and `flow._C.rms_layer_norm`: the
  T5 layer norm — the input cast to float32, scaled by rsqrt(mean(x², -1) + eps), cast to the weight's dtype when
  that is float16, times the weight (RMSLayerNormalizationFunctor);
* `nn.FusedBatchNorm1d/2d/3d(num_features, eps, momentum, affine, track_running_stats)`, whose forward takes an
  optional `addend`: relu(batch_norm(x) + addend), the running statistics updated as BatchNorm's, and
  `flow._C.normalization_add_relu` (NormalizationAddReluFunctor: momentum converted as 1 - momentum for the op, so
  running = (1 - momentum) running + momentum batch statistic). As OneFlow's, these modules keep no
  num_batches_tracked buffer.

Facts from OneFlow v0.9.0: python/oneflow/nn/modules/normalization.py, batchnorm_fused.py,
oneflow/core/functional/impl/nn_functor.cpp and math_functor.cpp, functional_api.yaml.
"""
import warnings

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation
from oneflow_compat._global import functional as F
from oneflow_compat._global import nn_norms
from oneflow_compat._global.modules import Module, Parameter


def _shape_str(shape):
    """OneFlow's Shape::ToString: (2,3,5), (4,) for one axis."""
    shape = tuple(int(s) for s in shape)
    return "(" + ",".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def rms_norm(x, weight=None, normalized_shape=None, epsilon=1e-06):
    x = F._floating(F._check(x, "rms_norm"))
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError("Expected weight be the same shape with normalized_shape %s, but got %s"
                           % (_shape_str(normalized_shape), _shape_str(weight.shape)))
    k = len(normalized_shape)
    if k == 0 or k > x.ndim or tuple(x.shape[x.ndim - k:]) != normalized_shape:
        shown = _shape_str(x.shape)
        raise RuntimeError("Given normalized_shape=%s, expected input with shape (*, %s), but got input of %s"
                           % (_shape_str(normalized_shape), shown[1:-1], shown))
    axes = list(range(x.ndim - k, x.ndim))
    inv_rms = F.rsqrt(F.add(F.mean(F.square(x), axes, keepdim=True), float(epsilon)))
    y = F.mul(x, inv_rms)
    if weight is not None:
        y = F.mul(y, weight if weight.dtype == x.dtype else F.cast(weight, x.dtype))
    return y


def rms_layer_norm(hidden_states, weight, variance_epsilon):
    x = F._check(hidden_states, "rms_layer_norm")
    cast = x if x.dtype == dtypes.float32 else F.cast(x, dtypes.float32)
    variance = F.mean(F.square(cast), [-1 % x.ndim], keepdim=True)
    y = F.mul(cast, F.rsqrt(F.add(variance, float(variance_epsilon))))
    if weight.dtype == dtypes.float16:
        y = F.cast(y, weight.dtype)
    return F.mul(y, weight)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.ones(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return rms_norm(x, self.weight, self.normalized_shape, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class RMSLayerNorm(Module):
    def __init__(self, hidden_size, eps=1e-6):
        warnings.warn("nn.RMSLayerNorm has been deprecated. Please use nn.RMSNorm instead.")
        super().__init__()
        self.weight = Parameter(creation.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        return rms_layer_norm(hidden_states, self.weight, self.variance_epsilon)


# --- batch normalization + addend + relu ------------------------------------------------------------------------
def normalization_add_relu(x, addend=None, moving_mean=None, moving_variance=None, gamma=None, beta=None, axis=1,
                           epsilon=1e-5, momentum=0.9, is_training=False):
    if (moving_mean is None) != (moving_variance is None):
        raise RuntimeError("Both moving_mean and moving_variance should be None or Tensor.")
    if not is_training and moving_mean is None:
        raise RuntimeError("Must have moving_mean and moving_variance in eval mode.")
    y = nn_norms.batch_norm(x, moving_mean, moving_variance, gamma, beta, is_training, momentum, epsilon, axis)
    if addend is not None:
        y = F.add(y, addend)
    return F.relu(y)


class _FusedBatchNorm(nn_norms._NormBase):
    """Batch normalization, plus an optional addend, then relu (OneFlow 0.9's nn/modules/batchnorm_fused.py): the
    batch norms' parameters and running statistics, without a count of batches."""
    tracks_batches = False
    channel_axis = 1

    def extra_repr(self):
        return "num_features={num_features}, eps={eps}, momentum={momentum}, affine={affine}, " \
               "track_running_stats={track_running_stats}".format(**self.__dict__)

    def forward(self, x, addend=None):
        self._check_input_dim(x)
        is_training = True if self.training else (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return normalization_add_relu(x, addend, self.running_mean if keep else None,
                                      self.running_var if keep else None, self.weight, self.bias,
                                      axis=self.channel_axis, epsilon=self.eps, momentum=self.momentum,
                                      is_training=is_training)


class FusedBatchNorm1d(_FusedBatchNorm):
    _check_input_dim = nn_norms.BatchNorm1d._check_input_dim


class FusedBatchNorm2d(_FusedBatchNorm):
    _check_input_dim = nn_norms.BatchNorm2d._check_input_dim


class FusedBatchNorm3d(_FusedBatchNorm):
    _check_input_dim = nn_norms.BatchNorm3d._check_input_dim
