"""`flow.layers.*`: dense, conv2d, and (from the nn ops family's modules, bound at the end) conv1d/conv3d, prelu,
the normalizations and upsample_2d — variables named `<name>-weight`, `<name>-bias`, …"""
from oneflow_compat import distribute as dist
from oneflow_compat import initializer as init
from oneflow_compat import nn
from oneflow_compat._api import ops_api
from oneflow_compat import scope
from oneflow_compat.ir import builder
from oneflow_compat.ops import variable_ops


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
          kernel_regularizer=None, bias_regularizer=None, trainable=True, name="Dense",
          model_distribute=dist.broadcast()):
    in_shape = inputs.shape
    if not (len(in_shape) >= 2):
        raise AssertionError("layers.dense requires inputs of rank >= 2, got shape %s" % (in_shape,))
    if not (model_distribute is dist.auto() or model_distribute is dist.broadcast()
                or model_distribute is dist.split(0)):
        raise AssertionError("model_distribute must be auto(), broadcast() or split(0)")
    if model_distribute is dist.split(0):
        if not (len(in_shape) == 2):
            raise AssertionError("model parallel dense (split(0)) requires 2-D inputs")
    x = inputs
    if len(in_shape) > 2:
        x = ops_api.reshape(x, (-1, in_shape[-1]))
    with scope.namespace(name):
        weight = ops_api.get_variable(
            "weight", shape=(units, x.shape[1]), dtype=inputs.dtype,
            initializer=kernel_initializer if kernel_initializer is not None else init.constant_initializer(0),
            regularizer=kernel_regularizer, trainable=trainable, model_name="weight",
            distribute=model_distribute, reuse=False)
        # inside namespace(name): OneFlow's op names "<name>-matmul", "<name>-bias_add" (v0.4.0 ops/layers.py)
        out = ops_api.matmul(x, weight, transpose_b=True, name="matmul")
        if use_bias:
            bias = ops_api.get_variable(
                "bias", shape=(units,), dtype=inputs.dtype,
                initializer=bias_initializer if bias_initializer is not None else init.constant_initializer(0),
                regularizer=bias_regularizer, trainable=trainable, model_name="bias",
                distribute=model_distribute, reuse=False)
            out = nn.bias_add(out, bias, name="bias_add")
    if callable(activation):
        out = activation(out, name="%s-activation" % name)
    if len(in_shape) > 2:
        out = ops_api.reshape(out, tuple(in_shape[:-1]) + (units,))
    return out


def conv2d(inputs, filters, kernel_size=1, strides=1, padding="VALID", data_format="NCHW", dilation_rate=None,
           groups=1, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
           kernel_regularizer=None, bias_regularizer=None, trainable=True, name="Conv2d", weight_name=None,
           bias_name=None):
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    fmt = "NCHW" if data_format in ("NCHW", "channels_first") else "NHWC"
    channels = inputs.shape[1] if fmt == "NCHW" else inputs.shape[-1]
    if not (groups > 0 and filters % groups == 0 and channels % groups == 0):
        raise AssertionError("groups (%d) must divide filters (%d) and input channels (%d)"
                             % (groups, filters, channels))
    if fmt == "NHWC":
        if groups != 1:
            raise AssertionError("NHWC conv2d supports groups == 1 only")
    shape = (filters, channels // groups, kh, kw) if fmt == "NCHW" else (filters, kh, kw, channels // groups)
    if kernel_initializer is None:
        kernel_initializer = init.xavier_uniform_initializer(data_format=data_format)
    builder.current("flow.layers.conv2d")  # outside a job function: the error names this layer
    # `weight_name` / `bias_name` replace `<name>-weight` / `<name>-bias` but, like any get_variable name, still take
    # the enclosing flow.scope.namespace prefix (v0.3.4/v0.4.0 ops/layers.py `conv2d` calls flow.get_variable with
    # them outside its own namespace(name) block): namespace("ns") + weight_name="wB" -> "ns-wB".
    weight = variable_ops.get_variable(weight_name if weight_name is not None else name + "-weight", shape,
                                       inputs.dtype, kernel_initializer, kernel_regularizer, trainable, "weight",
                                       reuse=False)
    out = nn.conv2d(inputs, weight, strides, padding, fmt, dilation_rate, groups, name=name)
    if use_bias:
        bias = variable_ops.get_variable(bias_name if bias_name is not None else name + "-bias", (filters,),
                                         inputs.dtype, bias_initializer if bias_initializer is not None else
                                         init.constant_initializer(0), bias_regularizer, trainable, "bias",
                                         reuse=False)
        out = nn.bias_add(out, bias, data_format=fmt, name="%s-bias_add" % name)
    if callable(activation):
        out = activation(out, name="%s-activation" % name)
    return out


# --- nn ops family: the layers OneFlow v0.3.4/v0.4.0 exports beside these (ops/prelu.py, ops/layers.py) -----------
from oneflow_compat.nn.legacy_activations import prelu  # noqa: F401,E402
from oneflow_compat.nn.legacy_norms import (  # noqa: F401,E402
    layer_norm_grad, layer_norm_param_grad, layers_batch_normalization as batch_normalization,
    layers_batch_normalization_add_relu as batch_normalization_add_relu,
    layers_batch_normalization_relu as batch_normalization_relu, layers_layer_norm as layer_norm)
from oneflow_compat.nn.legacy_convs import layers_conv1d as conv1d, layers_conv3d as conv3d  # noqa: F401,E402
from oneflow_compat.nn.legacy_misc import upsample_2d  # noqa: F401,E402


# --- the rest of OneFlow v0.3.4's flow.layers outside the nn part (the whole legacy API, issue 20) -------------------
from oneflow_compat._api.experimental_api import categorical_ordinal_encoder  # noqa: E402,F401
