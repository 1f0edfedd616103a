"""Normalization state: the moving statistics of batch normalization.

`flow.layers.batch_normalization` composes its forward (and so its gradient) from elementwise and reduction ops;
what it needs beyond them is the in-place update of its moving mean and variance.
"""


def moving_average_update(xp, moving, stat, *, momentum):
    """moving <- momentum * moving + (1 - momentum) * stat, in place, in moving's dtype."""
    moving *= moving.dtype.type(momentum)
    moving += stat.astype(moving.dtype) * moving.dtype.type(1 - momentum)
