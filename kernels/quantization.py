"""Quantization-aware training kernels as OneFlow v0.3.4 computes them on the CPU
(`oneflow/user/kernels/min_max_observer_kernel.cpp`, `moving_average_min_max_observer_kernel.cpp`,
`fake_quantization_kernel.cpp`).

* symmetric, b bits: scale = max(|min x|, |max x|) / (2^(b-1) - 1), zero_point 0; values round(x / scale) clipped
  to ±(2^(b-1) - 1);
* affine: scale = (max x - min x) / (2^b - 1), zero_point = -min x / scale; values round(x / scale + zero_point)
  clipped to [0, 2^b - 1], then (q - zero_point) · scale.
Rounding is C's `round` (half away from zero). Per-channel quantization works along axis 0.

`quantization_formula` ("google" or "cambricon", OneFlow v0.4.0 .. v0.9.0's attribute; None: the v0.3.4 kernels
above) selects OneFlow 0.9's kernels (`oneflow/user/kernels/*quantization*_kernel.cpp`, `*observer_kernel.cpp` at
v0.9.0), which differ from v0.3.4's: values round half to even (`std::nearbyint` under FE_TONEAREST), the signed
range is [-2^(b-1), 2^(b-1) - 1], the affine zero point is rounded (`-nearbyint(min / scale)`; the moving
observer's `-round(...)`) and applied as uint8; "cambricon" is a power-of-two scheme: the observers output the shift
floor(log2(max |x|)) - (b - 2) as the scale (zero point 0, per layer only) and the quantizers use 2^shift.
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


def min_max_observer(xp, x, *, quantization_bit, quantization_scheme, per_layer_quantization,
                     quantization_formula=None):
    """(scale, zero_point) of x (one pair, or one per row of axis 0), in x's dtype."""
    if quantization_formula is not None:
        return _min_max_observer_v09(xp, x, quantization_bit, quantization_scheme, per_layer_quantization,
                                     quantization_formula)
    rows = x.reshape(1, -1) if per_layer_quantization else x.reshape(x.shape[0], -1)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        scale, zero = _scale_zero(xp, rows.min(axis=1), rows.max(axis=1), quantization_bit, quantization_scheme)
    return scale.astype(x.dtype), zero.astype(x.dtype)


def _broadcastable(x, scale, zero_point):
    """(scale, zero_point) shaped to broadcast against x: per channel along axis 0 when there are several, else
    0-d."""
    if scale.size > 1:
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        return scale.reshape(shape), zero_point.reshape(shape)
    return scale.reshape(()), zero_point.reshape(())


def fake_quantization(xp, x, scale, zero_point, *, quantization_bit, quantization_scheme, quantization_formula=None):
    """x quantized to `quantization_bit` bits with (scale, zero_point) and mapped back to floats."""
    if quantization_formula is not None:
        return _quantize_v09(xp, x, scale, zero_point, quantization_bit, quantization_scheme, quantization_formula,
                             dequantize=True)
    scale, zero_point = _broadcastable(x, scale, zero_point)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        if quantization_scheme == "symmetric":
            upper = 2.0 ** (quantization_bit - 1) - 1
            q = xp.clip(_round_half_away(xp, x / scale), -upper, upper)
            return (q * scale).astype(x.dtype)
        upper = 2.0 ** quantization_bit - 1
        q = xp.clip(_round_half_away(xp, x / scale + zero_point), 0, upper)
        return ((q - zero_point) * scale).astype(x.dtype)


def moving_average_min_max_update(xp, x, current_train_step, moving_max, moving_min, *, stop_update_after_iters,
                                  training, quantization_scheme, momentum, quantization_formula=None):
    """Updates moving_max / moving_min in place from x while training and current_train_step <=
    stop_update_after_iters: the first value as it is, then m · momentum + v · (1 - momentum); symmetric keeps
    moving_min = moving_max (the largest magnitude)."""
    if not training:
        return
    # the step and the old values are compared where they live (a device: no read back inside the step); the
    # selections keep the arithmetic of the host's branches, so the same values
    update = current_train_step.reshape(-1)[0] <= stop_update_after_iters
    hi, lo = x.max(), x.min()
    if quantization_scheme == "symmetric":
        hi = xp.maximum(xp.abs(hi), xp.abs(lo))

    def moved(old, new):
        first = old.reshape(-1)[0] == 0
        return xp.where(update, xp.where(first, new, old * momentum + new * (1 - momentum)), old)

    moving_max[...] = moved(moving_max, hi)
    moving_min[...] = xp.where(update, moving_max, moving_min) if quantization_scheme == "symmetric" else \
        moved(moving_min, lo)


def moving_average_scale(xp, moving_max, moving_min, *, quantization_bit, quantization_scheme,
                         quantization_formula=None):
    """(scale, zero_point) from the moving extremes (after this call's update)."""
    if quantization_formula == "cambricon":
        with numpy.errstate(divide="ignore", invalid="ignore"):
            shift = xp.floor(xp.log2(moving_max)) - (quantization_bit - 2)
        return shift.astype(moving_max.dtype), xp.zeros_like(moving_max)
    if quantization_formula is not None and quantization_scheme == "affine":
        with numpy.errstate(divide="ignore", invalid="ignore"):
            scale = (moving_max - moving_min) / (2.0 ** quantization_bit - 1)
            zero = -_round_half_away(xp, moving_min / scale)  # v0.9: -std::round(moving_min / scale)
        return scale.astype(moving_max.dtype), zero.astype(moving_max.dtype)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        scale, zero = _scale_zero(xp, moving_min, moving_max, quantization_bit, quantization_scheme)
    return scale.astype(moving_max.dtype), zero.astype(moving_max.dtype)


# --- OneFlow 0.9's kernels (quantization_formula "google" / "cambricon") ----------------------------------------------
def _min_max_observer_v09(xp, x, bits, scheme, per_layer, formula):
    if formula == "cambricon":
        if not per_layer:
            raise NotImplementedError("min_max_observer: per-channel mode is not supported in cambricon scheme")
        bound = xp.maximum(xp.abs(x.max()), xp.abs(x.min())).reshape(1)
        with numpy.errstate(divide="ignore", invalid="ignore"):
            shift = xp.floor(xp.log2(bound)) - (bits - 2)
        return shift.astype(x.dtype), xp.zeros_like(shift).astype(x.dtype)
    rows = x.reshape(1, -1) if per_layer else x.reshape(x.shape[0], -1)
    lo, hi = rows.min(axis=1), rows.max(axis=1)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        if scheme == "symmetric":
            scale = xp.maximum(xp.abs(hi), xp.abs(lo)) / (2.0 ** (bits - 1) - 1)
            zero = xp.zeros_like(scale)
        else:
            scale = (hi - lo) / (2.0 ** bits - 1)
            zero = -xp.rint(lo / scale)  # -std::nearbyint(in_min / scale): half to even
    return scale.astype(x.dtype), zero.astype(x.dtype)


def _as_uint8(xp, v):
    """C's static_cast<uint8_t>(std::round(v)) as x86 computes it: round half away, then the low 8 bits (a zero point
    the observers make is in 0..255 whenever the input's range holds 0)."""
    return (_round_half_away(xp, v).astype(numpy.int64) % 256).astype(v.dtype)


def _quantize_v09(xp, x, scale, zero_point, bits, scheme, formula, dequantize):
    """OneFlow 0.9's fake_quantization (dequantize) and quantization kernels."""
    if formula == "cambricon":
        upper = 2.0 ** (bits - 1) - 1
        step = (2.0 ** scale.reshape(-1)[0].astype(numpy.int32)).astype(x.dtype)
        q = xp.clip(xp.rint(x / step), -upper - 1, upper)
        return (q * step if dequantize else q).astype(x.dtype)
    scale, zero_point = _broadcastable(x, scale, zero_point)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        if scheme == "symmetric":
            upper = 2.0 ** (bits - 1) - 1
            q = xp.clip(xp.rint(x / scale), -upper - 1, upper)
            return (q * scale if dequantize else q).astype(x.dtype)
        zero = _as_uint8(xp, zero_point)
        q = xp.clip(xp.rint(x / scale + zero), 0, 2.0 ** bits - 1)
        return ((q - zero) * scale if dequantize else q).astype(x.dtype)


def quantization(xp, x, scale, zero_point, *, quantization_bit, quantization_scheme, quantization_formula):
    """OneFlow 0.9's `quantization`: x's integer levels (as floats) under (scale, zero_point): round(x / scale)
    clipped to [-2^(b-1), 2^(b-1) - 1] (symmetric, cambricon with scale 2^shift) or round(x / scale + zero_point)
    clipped to [0, 2^b - 1] (affine)."""
    return _quantize_v09(xp, x, scale, zero_point, quantization_bit, quantization_scheme, quantization_formula,
                         dequantize=False)
