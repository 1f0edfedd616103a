"""The legacy `flow.nn.*` activations of OneFlow v0.3.4/v0.4.0 (ops/nn_ops.py `elu`, `hardsigmoid`, `mish`,
`swish`, `hardswish`, `hardtanh`, `relu6`, `logsoftmax`) and `flow.layers.prelu` (ops/prelu.py), on job-function
blobs. Where OneFlow composed an activation from other ops (mish, swish, logsoftmax) this does the same, under the
same op names."""
from oneflow_compat import initializer as init
from oneflow_compat import math as _math
from oneflow_compat import scope
from oneflow_compat._api import ops_api
from oneflow_compat import distribute as dist
from oneflow_compat.ir import builder
from oneflow_compat.ops.registry import apply


def _name(name, prefix):
    return name if name is not None else builder.current("flow.nn." + prefix.rstrip("_").lower()).job.unique_name(
        prefix)


def elu(x, alpha=1.0, name=None):
    return apply("elu", [x], {"alpha": float(alpha)}, name=_name(name, "Elu_"))


def hardsigmoid(x, name=None):
    return apply("hardsigmoid", [x], name=_name(name, "HardSigmoid_"))


def hardswish(x, name=None):
    return apply("hardswish", [x], name=_name(name, "HardSwish_"))


def hardtanh(x, min_val=-1.0, max_val=1.0, name=None):
    min_val, max_val = float(min_val), float(max_val)
    if not min_val < max_val:
        raise AssertionError("max_val should be larger than min_val")
    return apply("hardtanh", [x], {"min_val": min_val, "max_val": max_val}, name=_name(name, "Hardtanh_"))


def relu6(x, name=None):
    return hardtanh(x, min_val=0.0, max_val=6.0, name=_name(name, "Relu6_"))


def mish(x, name=None):
    """x · tanh(softplus(x)), composed as OneFlow composed it."""
    name = _name(name, "Mish_")
    return _math.multiply(x, _math.tanh(_math.softplus(x, name=name + "softplus"), name=name + "tanh"))


def swish(x, beta=1.0, name=None):
    """x · sigmoid(beta x), composed as OneFlow composed it."""
    name = _name(name, "Swish_")
    return _math.multiply(x, _math.sigmoid(_math.multiply(x, float(beta)), name=name + "_sigmoid"))


def logsoftmax(logits, axis=None, name=None):
    """log(softmax(logits, axis)) (OneFlow's composition; axis defaults to the last)."""
    if axis is None:
        axis = -1
    if name is None:
        name = builder.current("flow.nn.logsoftmax").job.unique_name("logsoftmax")
    return _math.log(_math.softmax(logits, axis, name=name + "_softmax"), name=name + "_log")


def prelu(inputs, alpha_initializer=None, alpha_regularizer=None, shared_axes=None, trainable=True, name="PRelu",
          model_distribute=dist.broadcast()):
    """y = x for x > 0, alpha x otherwise, with a variable `<name>-alpha` of the input's shape after the batch axis
    (size 1 on `shared_axes`), initialized to 0 unless told otherwise."""
    alpha_shape = list(inputs.shape[1:])
    if shared_axes is not None:
        for i in shared_axes:
            if not (1 <= i < len(inputs.shape)):
                raise AssertionError("shared_axes: axis %r out of range [1, %d)" % (i, len(inputs.shape)))
            alpha_shape[i - 1] = 1
    if alpha_initializer is None:
        alpha_initializer = init.constant_initializer(0)
    with scope.namespace(name):
        alpha = ops_api.get_variable("alpha", shape=alpha_shape, dtype=inputs.dtype, initializer=alpha_initializer,
                                     regularizer=alpha_regularizer, trainable=trainable,
                                     distribute=model_distribute, reuse=False)
    return apply("prelu", [inputs, alpha], name=name)


# --- v0.4.0's fused layers (ops/nn_ops.py `fused_bias_add_gelu`, `fused_bias_add_dropout`): the values of the fused
# GPU kernels, from the ops they fuse (domain_ops.py's fused self-attention is in _api/legacy_math.py) ------------
def _bias_axis(value, data_format):
    if data_format is None or data_format.startswith("NC"):
        return 1
    if data_format.startswith("N") and data_format.endswith("C"):
        return len(value.shape) - 1
    raise ValueError("data_format must be of the form `N...C` or `NC...`")


def fused_bias_add_gelu(value, bias, data_format=None, name=None):
    name = _name(name, "FusedBiasAddGelu_")
    out = apply("bias_add", [value, bias], {"axis": _bias_axis(value, data_format)}, name=name + "-bias_add")
    return apply("gelu", [out], name=name)


def fused_bias_add_dropout(value, bias, data_format=None, rate=0.0, noise_shape=None, seed=None, name=None):
    """(value + bias) · mask / (1 - rate), the mask from random_mask_like (`<name>-dropout_random_mask_like`);
    the plain bias_add where the job does not train or rate is 0."""
    from oneflow_compat.nn import legacy_misc, legacy_ops

    if not (rate is not None and 0.0 <= rate < 1.0):
        raise AssertionError("rate must be in [0, 1), got %r" % (rate,))
    if not builder.current("flow.nn.fused_bias_add_dropout").job.is_train or rate == 0.0:
        return legacy_ops.bias_add(value, bias, data_format, name)
    name = _name(name, "BiasAddDropout_")
    mask = legacy_misc.random_mask_like(value, rate, seed, noise_shape, "%s-dropout_random_mask_like" % name)
    out = apply("bias_add", [value, bias], {"axis": _bias_axis(value, data_format)}, name=name + "-bias_add")
    scaled = _math.multiply(ops_api.cast(mask, value.dtype), float(1.0 / (1.0 - rate)))
    return _math.multiply(out, scaled, name=name)

