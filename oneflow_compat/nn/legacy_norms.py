"""The legacy normalizations of OneFlow v0.3.4/v0.4.0 (ops/nn_ops.py `moments`, `batch_normalization`,
`layer_norm`, `GroupNorm`, `InstanceNorm1d/2d/3d`; ops/layers.py `layer_norm`, `layer_norm_grad`,
`layer_norm_param_grad`, `batch_normalization`, `batch_normalization_relu`, `batch_normalization_add_relu`), with
OneFlow's signatures, defaults and variable names.

Batch normalization has one mechanism: the batch's statistics from reduction ops (`moments`), the `normalization`
op, and the moving statistics updated in place (`moving_average_update`) with the per-device variance rule of
`flow.layers.batch_normalization` (`_unbiased_factor` below). The fused `_relu` / `_add_relu` layers OneFlow ran
on GPUs compute the same values: batch normalization, plus the addend, then relu.
"""
from oneflow_compat import initializer as init
from oneflow_compat import math as _math
from oneflow_compat import scope
from oneflow_compat._api import ops_api
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import variable_ops
from oneflow_compat.ops.registry import apply, new_op


def _unique(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def _normalize(x, mean, variance, offset, scale, epsilon, axis, name):
    """The normalization op for per-channel (1-D) statistics; elementwise ops for statistics shaped like x's axes
    (OneFlow's CPU path of flow.nn.batch_normalization, which layer norm's CPU path used)."""
    nd = len(x.shape)
    if len(mean.shape) == 1:
        ins = [x, mean, variance] + ([scale] if scale is not None else []) + ([offset] if offset is not None else [])
        return apply("normalization", ins, {"axis": axis, "epsilon": float(epsilon), "center": offset is not None,
                                            "scale": scale is not None}, name=name)
    if len(mean.shape) != nd:
        raise ValueError("shape of mean and variance should be 1D or has number of axes and x's")
    out = _math.multiply(_math.subtract(x, mean), _math.rsqrt(_math.add(variance, float(epsilon))))
    if scale is not None:
        out = _math.multiply(out, scale)
    if offset is not None:
        out = _math.add(out, offset)
    return out


def batch_normalization(x, mean, variance, offset=None, scale=None, variance_epsilon=1e-5, axis=1, name=None):
    """(x - mean) / sqrt(variance + epsilon) · scale + offset, statistics per channel of `axis` (1-D) or shaped
    like x's axes."""
    nd = len(x.shape)
    if not (-nd <= axis < nd):
        raise AssertionError("axis %r out of range for x of %d axes" % (axis, nd))
    axis = axis + nd if axis < 0 else axis
    name = _unique(name, "BatchNorm_", "flow.nn.batch_normalization")
    return _normalize(x, mean, variance, offset, scale, variance_epsilon, axis, name)


def _layer_norm_op(inputs, gamma, beta, begin_norm_axis, begin_params_axis, epsilon, name):
    nd = len(inputs.shape)
    ins = [inputs] + ([gamma] if gamma is not None else []) + ([beta] if beta is not None else [])
    y, _, _, _ = apply("layer_norm", ins, {"begin_norm_axis": begin_norm_axis % nd if begin_norm_axis < 0 else
                                           begin_norm_axis, "begin_params_axis": begin_params_axis,
                                           "epsilon": float(epsilon), "center": beta is not None,
                                           "scale": gamma is not None}, name=name)
    return y


def layer_norm(inputs, gamma=None, beta=None, begin_norm_axis=1, begin_params_axis=-1, epsilon=1e-5, name=None):
    """Normalizes over the axes from begin_norm_axis on; gamma / beta (blobs shaped like the input from
    begin_params_axis on) scale and shift."""
    name = _unique(name, "LayerNorm_", "flow.nn.layer_norm")
    return _layer_norm_op(inputs, gamma, beta, begin_norm_axis, begin_params_axis, epsilon, name)


def _per_channel_affine(normalized, name, channels, dtype):
    """OneFlow's GroupNorm / InstanceNorm parameters: `<name>_gamma` (ones) and `<name>_beta` (zeros) of shape
    (1, C, 1), applied as gamma · normalized + beta."""
    gamma = ops_api.get_variable(name + "_gamma", shape=(1, channels, 1), dtype=dtype,
                                 initializer=init.ones_initializer(), trainable=True)
    beta = ops_api.get_variable(name + "_beta", shape=(1, channels, 1), dtype=dtype,
                                initializer=init.zeros_initializer(), trainable=True)
    return _math.add(_math.multiply(gamma, normalized), beta)


def _instance_norm_3d(x, eps, affine, name):
    """x of shape (N, C, L): each (sample, channel) row normalized over L."""
    y = _layer_norm_op(x, None, None, 2, 2, eps, name + "-normalize")
    return _per_channel_affine(y, name, x.shape[1], x.dtype) if affine else y


def group_normalization(x, num_groups=32, eps=1e-05, affine=True, name=None):
    if len(x.shape) < 3:
        raise AssertionError("flow.nn.GroupNorm: x must have at least 3 axes, got shape %s" % (x.shape,))
    if x.shape[1] % num_groups != 0:
        raise AssertionError("The channel should be divisible by num_groups.")
    name = _unique(name, "GroupNorm_", "flow.nn.GroupNorm")
    n, c = x.shape[0], x.shape[1]
    grouped = ops_api.reshape(x, (n, num_groups, -1))
    y = _layer_norm_op(grouped, None, None, 2, 2, eps, name + "-normalize")
    y = ops_api.reshape(y, (n, c, -1))
    if affine:
        y = _per_channel_affine(y, name, c, x.dtype)
    return ops_api.reshape_like(y, like=x)


def instance_normalization1d(x, eps=1e-05, affine=True, name=None):
    if len(x.shape) != 3:
        raise AssertionError("flow.nn.InstanceNorm1d: x must have 3 axes, got shape %s" % (x.shape,))
    return _instance_norm_3d(x, eps, affine, _unique(name, "InstanceNorm1D_", "flow.nn.InstanceNorm1d"))


def _instance_normalization_nd(x, eps, affine, name, nd, what, prefix):
    if len(x.shape) != nd:
        raise AssertionError("flow.nn.%s: x must have %d axes, got shape %s" % (what, nd, x.shape))
    name = _unique(name, prefix, "flow.nn." + what)
    flat = ops_api.reshape(x, (x.shape[0], x.shape[1], -1))
    return ops_api.reshape(_instance_norm_3d(flat, eps, affine, name), tuple(x.shape))


def instance_normalization2d(x, eps=1e-05, affine=True, name=None):
    return _instance_normalization_nd(x, eps, affine, name, 4, "InstanceNorm2d", "InstanceNorm2D_")


def instance_normalization3d(x, eps=1e-05, affine=True, name=None):
    return _instance_normalization_nd(x, eps, affine, name, 5, "InstanceNorm3d", "InstanceNorm3D_")


# --- flow.layers ----------------------------------------------------------------------------------------------
def layers_layer_norm(inputs, center=True, scale=True, trainable=True, begin_norm_axis=1, begin_params_axis=-1,
                      epsilon=1e-5, name="LayerNorm"):
    """`<name>-beta` (zeros) and `<name>-gamma` (ones), shaped like the input from begin_params_axis on."""
    if center is False and scale is False:
        trainable = False
    pshape = tuple(inputs.shape[begin_params_axis:])
    beta = gamma = None
    with scope.namespace(name):
        if center:
            beta = ops_api.get_variable("beta", shape=pshape, dtype=inputs.dtype,
                                        initializer=init.constant_initializer(0.0), trainable=trainable,
                                        model_name="beta", reuse=False)
        if scale:
            gamma = ops_api.get_variable("gamma", shape=pshape, dtype=inputs.dtype,
                                         initializer=init.constant_initializer(1.0), trainable=trainable,
                                         model_name="gamma", reuse=False)
    return _layer_norm_op(inputs, gamma, beta, begin_norm_axis, begin_params_axis, epsilon, name)


def layer_norm_grad(dy, x, mean, inv_variance, begin_norm_axis=1, name="LayerNormGrad"):
    nd = len(x.shape)
    return apply("layer_norm_grad", [dy, x, mean, inv_variance],
                 {"begin_norm_axis": begin_norm_axis % nd if begin_norm_axis < 0 else begin_norm_axis,
                  "epsilon": 1e-5}, name=name)


def layer_norm_param_grad(dy, norm, gamma, begin_params_axis=-1, name="LayerNormParamGrad"):
    """-> (normalized_diff, beta_diff, gamma_diff)."""
    nd = len(dy.shape)
    out = apply("layer_norm_param_grad", [dy, norm, gamma],
                {"begin_params_axis": begin_params_axis % nd}, name=name)
    return tuple(out)


def _bn_variables(name, gamma_name, beta_name, moving_mean_name, moving_variance_name, center, scale, c, vdtype,
                  trainable, beta_initializer, beta_regularizer, gamma_initializer, gamma_regularizer,
                  moving_mean_initializer, moving_variance_initializer):
    """beta, gamma, moving_mean, moving_variance as OneFlow's `_get_batch_normalization_variables` creates them:
    `<name>-beta` … unless a name is given (which still takes the enclosing namespace); beta / gamma are constants
    when center / scale is off."""
    def var(suffix, given, initializer, default, regularizer, is_trainable):
        return variable_ops.get_variable(given if given is not None else name + "-" + suffix, (c,), vdtype,
                                         initializer if initializer is not None else default, regularizer,
                                         is_trainable, suffix, reuse=False)

    beta = var("beta", beta_name, beta_initializer, init.zeros_initializer(), beta_regularizer, trainable) \
        if center else None
    gamma = var("gamma", gamma_name, gamma_initializer, init.ones_initializer(), gamma_regularizer, trainable) \
        if scale else None
    moving_mean = var("moving_mean", moving_mean_name, moving_mean_initializer, init.zeros_initializer(), None,
                      False)
    moving_var = var("moving_variance", moving_variance_name, moving_variance_initializer, init.ones_initializer(),
                     None, False)
    return beta, gamma, moving_mean, moving_var


def layers_batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                               beta_initializer=None, gamma_initializer=None, beta_regularizer=None,
                               gamma_regularizer=None, moving_mean_initializer=None,
                               moving_variance_initializer=None, trainable=True, training=True, name="BatchNorm",
                               gamma_name=None, beta_name=None, moving_mean_name=None, moving_variance_name=None):
    nd = len(inputs.shape)
    if axis < 0:
        axis += nd
    if not (0 <= axis < nd):
        raise AssertionError("axis %r out of range for inputs of shape %s" % (axis, inputs.shape))
    c = inputs.shape[axis]
    ctx = builder.current("flow.layers.batch_normalization")
    vdtype = dtypes.float32 if inputs.dtype is dtypes.float16 else inputs.dtype
    beta, gamma, moving_mean, moving_var = _bn_variables(
        name, gamma_name, beta_name, moving_mean_name, moving_variance_name, center, scale, c, vdtype, trainable,
        beta_initializer, beta_regularizer, gamma_initializer, gamma_regularizer, moving_mean_initializer,
        moving_variance_initializer)
    batch_stats = ctx.job.is_train and trainable and training
    if batch_stats:
        reduce_axes = [i for i in range(nd) if i != axis]
        stats_in = inputs if inputs.dtype is vdtype else ops_api.cast(inputs, vdtype)
        if inputs.is_dynamic:
            mean = _math.reduce_mean(stats_in, reduce_axes, keepdims=False)
            variance = _math.reduce_variance(stats_in, reduce_axes, keepdims=False)
        else:
            # the same statistics in two passes over x (ops/norm_ops.py: channel_sum, centered_square_sum), and
            # below the normalization whose gradient runs through them (model zoo, issue 24)
            count = _count(inputs.shape, reduce_axes)
            mean = _math.multiply(apply("channel_sum", [stats_in], {"axis": axis, "dtype": vdtype}),
                                  float(1.0 / count))
            variance = _math.multiply(apply("centered_square_sum", [stats_in, mean], {"axis": axis}),
                                      float(1.0 / count))
        moving_var_stat = variance
        if ctx.placement.requested_tag == "gpu":
            moving_var_stat = _math.multiply(variance, _unbiased_factor(inputs.shape, reduce_axes))
        for moving, stat in ((moving_mean, mean), (moving_var, moving_var_stat)):
            new_op("moving_average_update", [moving, stat], {"momentum": float(momentum)},
                   name=ctx.job.unique_name("%s-%s-update" % (name, moving.op.name)),
                   in_hints={0: S.B, 1: S.B})
    else:
        mean, variance = moving_mean, moving_var
    if batch_stats and not inputs.is_dynamic:
        ins = [inputs, mean, variance] + ([gamma] if gamma is not None else []) + ([beta] if beta is not None else [])
        return apply("normalization_batch_stats", ins, {"axis": axis, "epsilon": float(epsilon),
                                                        "center": beta is not None, "scale": gamma is not None,
                                                        "count": _count(inputs.shape, reduce_axes)}, name=name)
    return _normalize(inputs, mean, variance, beta, gamma, epsilon, axis, name)


def _count(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


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


def layers_batch_normalization_add_relu(inputs, addend=None, axis=-1, momentum=0.99, epsilon=0.001, center=True,
                                        scale=True, beta_initializer=None, gamma_initializer=None,
                                        beta_regularizer=None, gamma_regularizer=None, moving_mean_initializer=None,
                                        moving_variance_initializer=None, trainable=True, training=True,
                                        name="BatchNorm", gamma_name=None, beta_name=None, moving_mean_name=None,
                                        moving_variance_name=None):
    """relu(batch_normalization(inputs) + addend): the values (and variables) of OneFlow's fused
    normalization_add_relu op and of its CPU path (batch_normalization, then `+ addend` and relu in the
    namespace BatchNormAddRelu)."""
    out = layers_batch_normalization(
        inputs, axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer, beta_regularizer=beta_regularizer,
        gamma_regularizer=gamma_regularizer, moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer, trainable=trainable, training=training, name=name,
        gamma_name=gamma_name, beta_name=beta_name, moving_mean_name=moving_mean_name,
        moving_variance_name=moving_variance_name)
    with scope.namespace("BatchNormAddRelu"):
        if addend is not None:
            out = _math.add(out, addend)
        return _math.relu(out)


def layers_batch_normalization_relu(inputs, axis=-1, momentum=0.99, epsilon=0.001, center=True, scale=True,
                                    beta_initializer=None, gamma_initializer=None, beta_regularizer=None,
                                    gamma_regularizer=None, moving_mean_initializer=None,
                                    moving_variance_initializer=None, trainable=True, training=True,
                                    name="BatchNorm"):
    return layers_batch_normalization_add_relu(
        inputs, axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer, beta_regularizer=beta_regularizer,
        gamma_regularizer=gamma_regularizer, moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer, trainable=trainable, training=training, name=name)


