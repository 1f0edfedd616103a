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
