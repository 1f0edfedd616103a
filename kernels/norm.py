"""Batch normalization: training forward/backward, inference, moving statistics.

`axis` is the channel axis; statistics are taken over every other axis, with the
population (biased) variance. gamma/beta may be None (scale=False / center=False).
"""


def _layout(x, axis):
    axis = axis % x.ndim
    reduce_axes = tuple(a for a in range(x.ndim) if a != axis)
    channel_shape = tuple(x.shape[a] if a == axis else 1 for a in range(x.ndim))
    return reduce_axes, channel_shape


def batch_norm_train(xp, x, gamma, beta, *, axis, epsilon):
    """-> (y, mean, inv_std), mean/inv_std of shape (C,), inv_std = 1/sqrt(var + eps)."""
    reduce_axes, channel_shape = _layout(x, axis)
    mean = xp.mean(x, axis=reduce_axes, keepdims=True)
    centered = x - mean
    # two-pass variance: E[(x - mean)^2] does not cancel like E[x^2] - mean^2
    var = xp.mean(centered * centered, axis=reduce_axes, keepdims=True)
    inv_std = 1 / xp.sqrt(var + epsilon)
    scale = inv_std if gamma is None else inv_std * gamma.reshape(channel_shape)
    y = centered * scale
    if beta is not None:
        y = y + beta.reshape(channel_shape)
    return (y.astype(x.dtype, copy=False), mean.reshape(-1).astype(x.dtype, copy=False),
            inv_std.reshape(-1).astype(x.dtype, copy=False))


def batch_norm_train_grad(xp, dy, x, gamma, mean, inv_std, *, axis):
    """-> (dx, dgamma, dbeta) for `batch_norm_train` (batch statistics depend on x)."""
    reduce_axes, channel_shape = _layout(x, axis)
    count = x.size // x.shape[axis % x.ndim]
    inv_std_b = inv_std.reshape(channel_shape)
    x_hat = (x - mean.reshape(channel_shape)) * inv_std_b
    dbeta = xp.sum(dy, axis=reduce_axes)
    dgamma = xp.sum(dy * x_hat, axis=reduce_axes)
    scale = inv_std_b if gamma is None else inv_std_b * gamma.reshape(channel_shape)
    dx = (scale / count) * (count * dy - dbeta.reshape(channel_shape)
                            - x_hat * dgamma.reshape(channel_shape))
    return (dx.astype(x.dtype, copy=False), dgamma.astype(x.dtype, copy=False),
            dbeta.astype(x.dtype, copy=False))


def batch_norm_infer(xp, x, gamma, beta, moving_mean, moving_var, *, axis, epsilon):
    """y = gamma (x - moving_mean) / sqrt(moving_var + eps) + beta."""
    _, channel_shape = _layout(x, axis)
    scale = 1 / xp.sqrt(moving_var.reshape(channel_shape) + epsilon)
    if gamma is not None:
        scale = scale * gamma.reshape(channel_shape)
    y = (x - moving_mean.reshape(channel_shape)) * scale
    if beta is not None:
        y = y + beta.reshape(channel_shape)
    return y.astype(x.dtype, copy=False)


def batch_norm_infer_grad(xp, dy, gamma, moving_var, *, axis, epsilon):
    """dx of `batch_norm_infer` (statistics are constants there)."""
    channel_shape = tuple(dy.shape[a] if a == axis % dy.ndim else 1 for a in range(dy.ndim))
    scale = 1 / xp.sqrt(moving_var.reshape(channel_shape) + epsilon)
    if gamma is not None:
        scale = scale * gamma.reshape(channel_shape)
    return (dy * scale).astype(dy.dtype, copy=False)


def batch_norm_moving_update(xp, moving_mean, moving_var, mean, inv_std, *, momentum, epsilon):
    """-> new (moving_mean, moving_var): moving = momentum * moving + (1 - momentum) * batch.

    The batch variance is recovered from `batch_norm_train`'s inv_std as
    1/inv_std^2 - epsilon. Returns new arrays; the inputs are not modified.
    """
    var = 1 / (inv_std * inv_std) - epsilon
    new_mean = momentum * moving_mean + (1 - momentum) * mean
    new_var = momentum * moving_var + (1 - momentum) * var
    return (new_mean.astype(moving_mean.dtype, copy=False),
            new_var.astype(moving_var.dtype, copy=False))
