"""`flow.layers.*`: dense, conv2d, batch_normalization — variables named `<name>-weight`, `<name>-bias`, …"""
from oneflow_compat import distribute as dist
from oneflow_compat import initializer as init
from oneflow_compat import nn
from oneflow_compat._api import ops_api
from oneflow_compat import scope
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import variable_ops
from oneflow_compat.ops.registry import new_op


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
        out = ops_api.matmul(x, weight, transpose_b=True, name="%s-matmul" % name)
        if use_bias:
            bias = ops_api.get_variable(
                "bias", shape=(units,), dtype=inputs.dtype,
                initializer=bias_initializer if bias_initializer is not None else init.constant_initializer(0),
                regularizer=bias_regularizer, trainable=trainable, model_name="bias",
                distribute=model_distribute, reuse=False)
            out = nn.bias_add(out, bias, name="%s-bias_add" % name)
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


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None, beta_regularizer=None,
                        gamma_regularizer=None, moving_mean_initializer=None, moving_variance_initializer=None,
                        trainable=True, training=True, name="BatchNorm", gamma_name=None, beta_name=None,
                        moving_mean_name=None, moving_variance_name=None):
    nd = len(inputs.shape)
    if axis < 0:
        axis += nd
    if not (0 <= axis < nd):
        raise AssertionError("axis %r out of range for inputs of shape %s" % (axis, inputs.shape))
    c = inputs.shape[axis]
    ctx = builder.current("flow.layers.batch_normalization")
    vdtype = dtypes.float32 if inputs.dtype is dtypes.float16 else inputs.dtype

    def var(suffix, given, initializer, default, regularizer, is_trainable):
        # a given name (v0.4.0 gamma_name=, …) takes the enclosing namespace prefix, as in OneFlow's
        # ops/layers.py `_get_batch_normalization_variables` (flow.get_variable outside namespace(name))
        return variable_ops.get_variable(given if given is not None else name + "-" + suffix, (c,), vdtype,
                                         initializer if initializer is not None else default, regularizer,
                                         is_trainable, suffix, reuse=False)

    beta = var("beta", beta_name, beta_initializer, init.zeros_initializer(), beta_regularizer, trainable) \
        if center else None
    gamma = var("gamma", gamma_name, gamma_initializer, init.ones_initializer(), gamma_regularizer, trainable) \
        if scale else None
    moving_mean = var("moving_mean", moving_mean_name, moving_mean_initializer, init.zeros_initializer(), None, False)
    moving_var = var("moving_variance", moving_variance_name, moving_variance_initializer, init.ones_initializer(),
                     None, False)
    bshape = tuple(c if i == axis else 1 for i in range(nd))
    reduce_axes = [i for i in range(nd) if i != axis]
    from oneflow_compat import math as m

    if ctx.job.is_train and trainable and training:
        mean = m.reduce_mean(inputs, reduce_axes, keepdims=True)
        centered = m.subtract(inputs, mean)
        variance = m.reduce_mean(m.square(centered), reduce_axes, keepdims=True)
        moving_var_stat = variance
        if ctx.placement.requested_tag == "gpu":
            moving_var_stat = m.multiply(variance, _unbiased_factor(inputs.shape, reduce_axes))
        for moving, stat in ((moving_mean, mean), (moving_var, moving_var_stat)):
            new_op("moving_average_update", [moving, ops_api.reshape(stat, (c,))], {"momentum": float(momentum)},
                   name=ctx.job.unique_name("%s-%s-update" % (name, moving.op.name)),
                   in_hints={0: S.B, 1: S.B})
    else:
        mean = ops_api.reshape(moving_mean, bshape)
        variance = ops_api.reshape(moving_var, bshape)
        centered = m.subtract(inputs, mean)
    out = m.multiply(centered, m.rsqrt(m.add(variance, float(epsilon))))
    if gamma is not None:
        out = m.multiply(out, ops_api.reshape(gamma, bshape))
    if beta is not None:
        out = m.add(out, ops_api.reshape(beta, bshape))
    return ops_api.identity(out, name=name)


def _unbiased_factor(shape, reduce_axes):
    """n/(n-1) over the n values per channel: the moving variance of OneFlow's GPU path.

    OneFlow v0.3.4/v0.4.0 `layers.batch_normalization` branches on the placement's device tag. "cpu": flow.nn.moments
    (population variance) and `moving <- momentum * moving + (1 - momentum) * variance` in Python. Otherwise the
    fused `normalization` op, whose GPU kernel (user/kernels/normalization_kernel.cu, NormalizationTrainKernel)
    passes `1 - momentum` as exponentialAverageFactor to cudnnBatchNormalizationForwardTraining; cuDNN updates the
    running variance with the unbiased estimate (later OneFlow CPU kernels copy it: normalization_kernel.cpp,
    `unbias_reduce_count = reduce_count - 1`). The output y is normalized with the population variance on both paths.
    The rule follows the tag the script asked for ("gpu" computes what OneFlow on a GPU computed even where it runs
    on CPU devices here). One value per channel leaves the estimate undefined: the population variance (0) is kept.
    """
    n = 1
    for a in reduce_axes:
        n *= shape[a]
    return n / (n - 1) if n > 1 else 1.0


def layer_norm(inputs, center=True, scale=True, trainable=True, begin_norm_axis=1, begin_params_axis=-1,
               epsilon=1e-5, name="LayerNorm"):
    from oneflow_compat import math as m

    nd = len(inputs.shape)
    axes = list(range(begin_norm_axis % nd, nd))
    mean = m.reduce_mean(inputs, axes, keepdims=True)
    centered = m.subtract(inputs, mean)
    var_ = m.reduce_mean(m.square(centered), axes, keepdims=True)
    out = m.multiply(centered, m.rsqrt(m.add(var_, float(epsilon))))
    pshape = tuple(inputs.shape[begin_params_axis % nd:])
    bshape = (1,) * (nd - len(pshape)) + pshape
    with scope.namespace(name):
        if scale:
            gamma = ops_api.get_variable("gamma", pshape, inputs.dtype, init.ones_initializer(), trainable=trainable,
                                         reuse=False)
            out = m.multiply(out, ops_api.reshape(gamma, bshape))
        if center:
            beta = ops_api.get_variable("beta", pshape, inputs.dtype, init.zeros_initializer(), trainable=trainable,
                                        reuse=False)
            out = m.add(out, ops_api.reshape(beta, bshape))
    return out


# --- the rest of OneFlow v0.3.4's flow.layers outside the nn part (the whole legacy API, issue 20) -------------------
from oneflow_compat._api.experimental_api import categorical_ordinal_encoder  # noqa: E402,F401
