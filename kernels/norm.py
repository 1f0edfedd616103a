"""Normalization kernels: the moving statistics of batch normalization, normalization with given statistics and
its gradient, layer normalization, and batch normalization in training (the batch's statistics and the gradient
through them: the end of this file).
"""
import numpy as np


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
    dt = xp.dtype(xp.float32) if x.dtype.itemsize < 4 else x.dtype  # half: computed in float (a dtype: `.type`)
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


# --- batch normalization in training (model zoo, issue 24): the batch's statistics and the gradient through them ---
# `flow.layers.batch_normalization` in a train job takes per-channel sums of x (channel_sum; partial sums where the
# batch is split), the sums of squared deviations from the mean (centered_square_sum), normalizes with those
# (normalization_batch_stats), and differentiates the whole: dx = γ r (dy - Σdy / n - x̂ Σ(dy x̂) / n) with
# r = 1 / sqrt(var + ε), x̂ = (x - mean) r, n the values per channel, from the two per-channel sums of
# normalization_batch_stats_grad_sums. Same values as the composed reduce_mean / reduce_variance / normalization and
# their gradients, in four passes over the activations instead of a dozen. Arrays are viewed (outer, C, inner)
# around the channel axis; the compiled loops are norm_jit.py's.
def _around(x, axis):
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    return x.reshape(outer, x.shape[axis], -1)


def _jit_ok(*arrays):
    from . import norm_jit

    return norm_jit.AVAILABLE and all(type(a) is np.ndarray and a.dtype in (np.float32, np.float64) for a in arrays)


def channel_sum(xp, x, *, axis, dtype=None):
    """Per-channel sums of x (channels along `axis`), in `dtype` (default x's)."""
    dtype = xp.dtype(dtype) if dtype is not None else x.dtype
    if x.size == 0:
        return xp.zeros((x.shape[axis],), dtype=dtype)
    if _jit_ok(x):
        from . import norm_jit

        out = np.empty((x.shape[axis],), dtype=dtype)
        norm_jit.channel_sums(_around(np.ascontiguousarray(x), axis), out)
        return out
    others = tuple(i for i in range(x.ndim) if i != axis)
    return x.sum(axis=others, dtype=xp.float64).astype(dtype)


def centered_square_sum(xp, x, mean, *, axis):
    """Per-channel sums of (x - mean)², in mean's dtype."""
    if x.size == 0:
        return xp.zeros(mean.shape, dtype=mean.dtype)
    if _jit_ok(x, mean):
        from . import norm_jit

        out = np.empty(mean.shape, dtype=mean.dtype)
        norm_jit.centered_square_sums(_around(np.ascontiguousarray(x), axis), mean.astype(np.float64), out)
        return out
    others = tuple(i for i in range(x.ndim) if i != axis)
    d = x.astype(xp.float64) - mean.astype(xp.float64).reshape(_channel_shape(x, axis))
    return (d * d).sum(axis=others).astype(mean.dtype)


def _inv_std(xp, variance, epsilon, dt):
    return 1 / xp.sqrt(variance.astype(dt, copy=False) + dt.type(epsilon))


def normalization_batch_stats(xp, x, mean, variance, *affine, axis=1, epsilon=1e-5, center=True, scale=True,
                              count=None):
    """The values of `normalization` (x normalized with its own batch's statistics; `count` is read by the
    gradient only)."""
    dt = _compute_dtype(x, mean)
    if x.size == 0 or not _jit_ok(x, mean) or x.dtype != dt:
        return normalization(xp, x, mean, variance, *affine, axis=axis, epsilon=epsilon, center=center, scale=scale)
    from . import norm_jit

    r = _inv_std(xp, variance, epsilon, dt)
    k = 0
    a = r
    if scale:
        a = a * affine[k].astype(dt, copy=False)
        k += 1
    b = -mean.astype(dt, copy=False) * a
    if center:
        b = b + affine[k].astype(dt, copy=False)
    y = np.empty(x.shape, dtype=x.dtype)
    norm_jit.normalize(_around(np.ascontiguousarray(x), axis), a.astype(dt), b.astype(dt), _around(y, axis))
    return y


def normalization_batch_stats_grad_sums(xp, dy, x, mean, variance, *, axis=1, epsilon=1e-5):
    """-> (Σ dy, Σ dy x̂) per channel, in mean's dtype: the gradients of beta and gamma, and what the input gradient
    needs (partial sums where the batch is split)."""
    sdt = mean.dtype
    dt = _compute_dtype(x, mean)
    r = _inv_std(xp, variance, epsilon, dt)
    if x.size == 0:
        zeros = xp.zeros(mean.shape, dtype=sdt)
        return zeros, zeros.copy()
    if _jit_ok(dy, x, mean) and dy.dtype == x.dtype:
        from . import norm_jit

        s_dy, s_dyx = np.empty(mean.shape, np.float64), np.empty(mean.shape, np.float64)
        norm_jit.grad_sums(_around(np.ascontiguousarray(dy), axis), _around(np.ascontiguousarray(x), axis),
                           mean.astype(np.float64), s_dy, s_dyx)
        return s_dy.astype(sdt), (s_dyx * r.astype(np.float64)).astype(sdt)
    others = tuple(i for i in range(x.ndim) if i != axis)
    d = x.astype(xp.float64) - mean.astype(xp.float64).reshape(_channel_shape(x, axis))
    g = dy.astype(xp.float64)
    return g.sum(axis=others).astype(sdt), ((g * d).sum(axis=others) * r.astype(xp.float64)).astype(sdt)


def normalization_batch_stats_grad(xp, dy, x, mean, variance, *rest, axis=1, epsilon=1e-5, count=1):
    """dx through the normalization and its batch statistics: rest = ([gamma], Σ dy, Σ dy x̂) (the sums of all the
    batch's values, n = `count` of them per channel)."""
    gamma, s_dy, s_dyx = (rest[0], rest[1], rest[2]) if len(rest) == 3 else (None, rest[0], rest[1])
    dt = _compute_dtype(x, mean)
    r = _inv_std(xp, variance, epsilon, dt)
    g = gamma.astype(dt, copy=False) if gamma is not None else dt.type(1)
    n = dt.type(count)
    k_dy = g * r                                            # dx = γ r dy
    k_x = -k_dy * r * s_dyx.astype(dt, copy=False) / n      #      - γ r x̂ Σ(dy x̂) / n, with x̂ = (x - mean) r
    k_0 = -k_dy * s_dy.astype(dt, copy=False) / n           #      - γ r Σdy / n
    if x.size and _jit_ok(dy, x, mean) and dy.dtype == x.dtype == dt:
        from . import norm_jit

        dx = np.empty(x.shape, dtype=dy.dtype)
        norm_jit.grad_input(_around(np.ascontiguousarray(dy), axis), _around(np.ascontiguousarray(x), axis),
                            mean.astype(dt), xp.broadcast_to(k_dy, mean.shape).astype(dt), k_x.astype(dt),
                            k_0.astype(dt), _around(dx, axis))
        return dx
    shape = _channel_shape(x, axis)
    out = dy.astype(dt, copy=False) * xp.broadcast_to(k_dy, mean.shape).reshape(shape)
    out = out + (x.astype(dt, copy=False) - mean.astype(dt, copy=False).reshape(shape)) * k_x.reshape(shape)
    out = out + k_0.reshape(shape)
    return out.astype(dy.dtype, copy=False)
