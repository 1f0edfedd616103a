"""Normalization state: the moving statistics of batch normalization.

`flow.layers.batch_normalization` composes its forward (and so its gradient) from elementwise and reduction ops;
what it needs beyond them is the in-place update of its moving mean and variance.
"""


def moving_average_update(xp, moving, stat, *, momentum):
    """moving <- momentum * moving + (1 - momentum) * stat, in place, in moving's dtype."""
    moving *= moving.dtype.type(momentum)
    moving += stat.astype(moving.dtype) * moving.dtype.type(1 - momentum)


# --- l2_normalize (OneFlow's op of that name, v0.4.0 user/kernels/l2_normalize_kernel.cpp) ------------------------
def l2_normalize(xp, x, *, axis, epsilon):
    """-> (y, square_x_sum): y = x / sqrt(max(Σ x² along axis, epsilon)); the sum kept with axis of size 1."""
    square_x_sum = xp.sum(x * x, axis=axis, keepdims=True)
    y = x / xp.sqrt(xp.maximum(square_x_sum, square_x_sum.dtype.type(epsilon)))
    return y.astype(x.dtype, copy=False), square_x_sum.astype(x.dtype, copy=False)


def l2_normalize_grad(xp, dy, y, square_x_sum, *, axis, epsilon):
    """dx: (dy - y Σ(y dy)) / sqrt(Σ x²) where that sum reaches epsilon, else dy / sqrt(epsilon) (the clamp's
    constant norm)."""
    eps = square_x_sum.dtype.type(epsilon)
    inside = square_x_sum >= eps
    norm = xp.sqrt(xp.maximum(square_x_sum, eps))
    dot = xp.sum(y * dy, axis=axis, keepdims=True)
    return xp.where(inside, (dy - y * dot) / norm, dy / norm).astype(dy.dtype, copy=False)


# --- normalization: y = (x - mean) / sqrt(variance + epsilon) * gamma + beta with per-channel statistics ---------
# (OneFlow's `normalization` op as inference uses it and legacy `flow.nn.batch_normalization` computes it; batch
# normalization in training takes the batch's statistics from reduction ops, so that their gradients flow through
# those ops and a batch split across devices reduces to partial sums.) Half-precision inputs are computed in the
# statistics' dtype (float32), as OneFlow keeps batch-norm parameters in float32 for float16 data.
def _channel_shape(x, axis):
    return tuple(x.shape[i] if i == axis else 1 for i in range(x.ndim))


def _compute_dtype(x, stat):
    return stat.dtype if x.dtype.itemsize < stat.dtype.itemsize else x.dtype


def normalization(xp, x, mean, variance, *affine, axis=1, epsilon=1e-5, center=True, scale=True):
    """affine: (gamma, beta) as `scale` / `center` say, per channel of `axis`."""
    shape = _channel_shape(x, axis)
    dt = _compute_dtype(x, mean)
    r = (1 / xp.sqrt(variance.astype(dt, copy=False) + dt.type(epsilon))).reshape(shape)
    y = (x.astype(dt, copy=False) - mean.astype(dt, copy=False).reshape(shape)) * r
    k = 0
    if scale:
        y = y * affine[k].astype(dt, copy=False).reshape(shape)
        k += 1
    if center:
        y = y + affine[k].astype(dt, copy=False).reshape(shape)
    return y.astype(x.dtype, copy=False)


def normalization_grad(xp, dy, x, mean, variance, *gamma, axis=1, epsilon=1e-5):
    """-> (dx, d mean, d variance, d gamma, d beta); gamma (optional) scales the normalized value."""
    shape = _channel_shape(x, axis)
    others = tuple(i for i in range(x.ndim) if i != axis)
    dt = _compute_dtype(x, mean)
    sdt = mean.dtype
    dy_ = dy.astype(dt, copy=False)
    r = (1 / xp.sqrt(variance.astype(dt, copy=False) + dt.type(epsilon))).reshape(shape)
    centered = x.astype(dt, copy=False) - mean.astype(dt, copy=False).reshape(shape)
    g = gamma[0].astype(dt, copy=False).reshape(shape) if gamma else dt.type(1)
    dxhat = dy_ * g
    dx = dxhat * r
    dmean = -dx.sum(axis=others)
    dvariance = (dxhat * centered).sum(axis=others) * (dt.type(-0.5) * (r * r * r).reshape(-1))
    dgamma = (dy_ * centered * r).sum(axis=others)
    dbeta = dy_.sum(axis=others)
    return (dx.astype(dy.dtype, copy=False), dmean.astype(sdt, copy=False), dvariance.astype(sdt, copy=False),
            dgamma.astype(sdt, copy=False), dbeta.astype(sdt, copy=False))


# --- layer normalization (OneFlow's layer_norm, layer_norm_grad and layer_norm_param_grad ops) ----------------------
def _norm_axes(x, begin):
    return tuple(range(begin, x.ndim))


def layer_norm(xp, x, *affine, begin_norm_axis=1, begin_params_axis=-1, epsilon=1e-5, center=True, scale=True):
    """-> (y, mean, inv_variance, normalized): statistics over the axes from begin_norm_axis on (mean and
    inv_variance shaped x.shape[:begin_norm_axis]); gamma / beta (as `scale` / `center` say) shaped
    x.shape[begin_params_axis:]."""
    axes = _norm_axes(x, begin_norm_axis)
    dt = xp.float32 if x.dtype.itemsize < 4 else x.dtype
    xc = x.astype(dt, copy=False)
    mean = xc.mean(axis=axes, keepdims=True)
    centered = xc - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    inv = 1 / xp.sqrt(var + dt.type(epsilon))
    normalized = centered * inv
    y = normalized
    k = 0
    if scale:
        y = y * affine[k].astype(dt, copy=False)
        k += 1
    if center:
        y = y + affine[k].astype(dt, copy=False)
    stat_shape = x.shape[:begin_norm_axis]
    return (y.astype(x.dtype, copy=False), mean.reshape(stat_shape), inv.reshape(stat_shape),
            normalized.astype(x.dtype, copy=False))


def layer_norm_grad(xp, dy, x, mean, inv_variance, *, begin_norm_axis=1):
    """d x of the normalization (without its affine part): inv (dy - mean(dy) - x̂ mean(dy x̂)) over the
    normalized axes."""
    axes = _norm_axes(x, begin_norm_axis)
    keep = tuple(mean.shape) + (1,) * len(axes)
    dt = mean.dtype
    inv = inv_variance.reshape(keep)
    xhat = (x.astype(dt, copy=False) - mean.reshape(keep)) * inv
    d = dy.astype(dt, copy=False)
    dx = inv * (d - d.mean(axis=axes, keepdims=True) - xhat * (d * xhat).mean(axis=axes, keepdims=True))
    return dx.astype(dy.dtype, copy=False)


def layer_norm_param_grad(xp, dy, normalized, gamma, *, begin_params_axis=-1):
    """-> (normalized_diff = dy · gamma, beta_diff = Σ dy, gamma_diff = Σ dy · normalized), the sums over the axes
    before begin_params_axis."""
    bpa = begin_params_axis % dy.ndim
    axes = tuple(range(bpa))
    beta_diff = dy.sum(axis=axes) if axes else dy.copy()
    gamma_diff = (dy * normalized).sum(axis=axes) if axes else dy * normalized
    return (dy * gamma).astype(dy.dtype, copy=False), beta_diff.astype(gamma.dtype, copy=False), \
        gamma_diff.astype(gamma.dtype, copy=False)
