"""Quantization-aware training kernels as OneFlow v0.3.4 computes them on the CPU
(`oneflow/user/kernels/min_max_observer_kernel.cpp`, `moving_average_min_max_observer_kernel.cpp`,
`fake_quantization_kernel.cpp`).

* symmetric, b bits: scale = max(|min x|, |max x|) / (2^(b-1) - 1), zero_point 0; values round(x / scale) clipped
  to ±(2^(b-1) - 1);
* affine: scale = (max x - min x) / (2^b - 1), zero_point = -min x / scale; values round(x / scale + zero_point)
  clipped to [0, 2^b - 1], then (q - zero_point) · scale.
Rounding is C's `round` (half away from zero). Per-channel quantization works along axis 0.
"""
import numpy


def _round_half_away(xp, x):
    return xp.sign(x) * xp.floor(xp.abs(x) + 0.5)


def _scale_zero(xp, lo, hi, bits, scheme):
    if scheme == "symmetric":
        bound = xp.maximum(xp.abs(hi), xp.abs(lo))
        return bound / (2.0 ** (bits - 1) - 1), xp.zeros_like(bound)
    scale = (hi - lo) / (2.0 ** bits - 1)
    return scale, -lo / scale


def min_max_observer(xp, x, *, quantization_bit, quantization_scheme, per_layer_quantization):
    """(scale, zero_point) of x (one pair, or one per row of axis 0), in x's dtype."""
    rows = x.reshape(1, -1) if per_layer_quantization else x.reshape(x.shape[0], -1)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        scale, zero = _scale_zero(xp, rows.min(axis=1), rows.max(axis=1), quantization_bit, quantization_scheme)
    return scale.astype(x.dtype), zero.astype(x.dtype)


def fake_quantization(xp, x, scale, zero_point, *, quantization_bit, quantization_scheme):
    """x quantized to `quantization_bit` bits with (scale, zero_point) and mapped back to floats."""
    if scale.size > 1:  # per channel along axis 0
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    else:
        scale, zero_point = scale.reshape(()), zero_point.reshape(())
    with numpy.errstate(divide="ignore", invalid="ignore"):
        if quantization_scheme == "symmetric":
            upper = 2.0 ** (quantization_bit - 1) - 1
            q = xp.clip(_round_half_away(xp, x / scale), -upper, upper)
            return (q * scale).astype(x.dtype)
        upper = 2.0 ** quantization_bit - 1
        q = xp.clip(_round_half_away(xp, x / scale + zero_point), 0, upper)
        return ((q - zero_point) * scale).astype(x.dtype)


def moving_average_min_max_update(xp, x, current_train_step, moving_max, moving_min, *, stop_update_after_iters,
                                  training, quantization_scheme, momentum):
    """Updates moving_max / moving_min in place from x while training and current_train_step <=
    stop_update_after_iters: the first value as it is, then m · momentum + v · (1 - momentum); symmetric keeps
    moving_min = moving_max (the largest magnitude)."""
    if not training or int(current_train_step.reshape(-1)[0]) > stop_update_after_iters:
        return
    hi, lo = x.max(), x.min()
    if quantization_scheme == "symmetric":
        hi = xp.maximum(xp.abs(hi), xp.abs(lo))

    def moved(old, new):
        return new if float(old.reshape(-1)[0]) == 0 else old * momentum + new * (1 - momentum)

    moving_max[...] = moved(moving_max, hi)
    moving_min[...] = moving_max if quantization_scheme == "symmetric" else moved(moving_min, lo)


def moving_average_scale(xp, moving_max, moving_min, *, quantization_bit, quantization_scheme):
    """(scale, zero_point) from the moving extremes (after this call's update)."""
    with numpy.errstate(divide="ignore", invalid="ignore"):
        scale, zero = _scale_zero(xp, moving_min, moving_max, quantization_bit, quantization_scheme)
    return scale.astype(moving_max.dtype), zero.astype(moving_max.dtype)
