"""Quantization-aware training ops (OneFlow v0.3.4 `oneflow/user/ops/min_max_observer_op.cpp`,
`moving_average_min_max_observer_op.cpp`, `fake_quantization_op.cpp`).

The observers read their input whole (B: the scale must come from the global extremes, as OneFlow notes).
OneFlow's moving_average_min_max_observer both updates its moving_max / moving_min variables and outputs the
scale; here that is two ops built together — the in-place update (`moving_average_min_max_observer`) and the scale
read from the updated variables (`moving_average_min_max_observer_scale`). fake_quantization's gradient is the
identity (straight-through), as OneFlow registers it.
"""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, S
from oneflow_compat.kernels import quantization as K
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _check_attrs(op):
    bits, scheme = op.attrs["quantization_bit"], op.attrs["quantization_scheme"]
    formula = op.attrs.get("quantization_formula")
    if formula is not None and formula not in ("google", "cambricon"):
        raise ValueError("%s '%s': quantization_formula must be 'google' or 'cambricon', got %r" % (
            op.type, op.name, formula))
    if not 1 < bits <= 8:
        raise ValueError("%s '%s': quantization_bit must be in 2..8, got %d" % (op.type, op.name, bits))
    if scheme not in ("symmetric", "affine"):
        raise ValueError("%s '%s': quantization_scheme must be 'symmetric' or 'affine', got %r" % (
            op.type, op.name, scheme))


def _floating(op, x):
    if not x.dtype.is_floating:
        raise TypeError("%s '%s': the input must be float32 or float64, got %s" % (op.type, op.name, x.dtype.name))


def _observer_meta(op):
    _check_attrs(op)
    x = op.inputs[0]
    _floating(op, x)
    shape = (1,) if op.attrs["per_layer_quantization"] else (x.shape[0],)
    if op.attrs.get("quantization_formula") == "cambricon" and not op.attrs["per_layer_quantization"]:
        raise ValueError("min_max_observer '%s': per-channel mode is not supported in cambricon scheme" % op.name)
    return [TensorMeta(shape, x.dtype), TensorMeta(shape, x.dtype)]


def _attrs(*names):
    """The kernel's attributes; `quantization_formula` where the op has it (OneFlow 0.9's surface: its kernels),
    none from the legacy surface (v0.3.4's kernels)."""
    def kernel_attrs(op):
        attrs = {k: op.attrs[k] for k in names}
        if op.attrs.get("quantization_formula") is not None:
            attrs["quantization_formula"] = op.attrs["quantization_formula"]
        return attrs

    return kernel_attrs


register(OpDef("min_max_observer", infer=_observer_meta, kernel=K.min_max_observer,
               kernel_attrs=_attrs("quantization_bit", "quantization_scheme", "per_layer_quantization"),
               sbp=lambda op: [_sig([B], [B, B])]))


def _fake_meta(op):
    _check_attrs(op)
    x, scale, zero = op.inputs
    _floating(op, x)
    n = 1
    for d in scale.shape:
        n *= d
    if n != 1 and (n != x.shape[0] or len(zero.shape) != len(scale.shape)):
        raise ValueError("%s '%s': per-channel scale must have one entry per row of axis 0 (%d), "
                         "got %s" % (op.type, op.name, x.shape[0], scale.shape))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _fake_sbp(op):
    x, scale, _ = op.inputs
    per_channel = scale.shape != (1,)
    sigs = [_sig([B, B, B], [B])]
    sigs.append(_sig([S(0), S(0), S(0)], [S(0)]) if per_channel else _sig([S(0), B, B], [S(0)]))
    sigs += [_sig([S(i), B, B], [S(i)]) for i in range(1, len(x.shape))]
    return sigs


register(OpDef("fake_quantization", infer=_fake_meta, kernel=K.fake_quantization,
               kernel_attrs=_attrs("quantization_bit", "quantization_scheme"), sbp=_fake_sbp,
               grad=lambda op, dys: [apply("identity", [dys[0]]), None, None]))


def _moving_update_meta(op):
    _check_attrs(op)
    x, step, moving_max, moving_min = op.inputs
    _floating(op, x)
    for v, what in ((moving_max, "moving_max"), (moving_min, "moving_min"), (step, "current_train_step")):
        if tuple(v.shape) != (1,):
            raise ValueError("moving_average_min_max_observer '%s': %s must have shape (1,)" % (op.name, what))
    return []


register(OpDef("moving_average_min_max_observer", infer=_moving_update_meta, kernel=K.moving_average_min_max_update,
               kernel_attrs=_attrs("stop_update_after_iters", "training", "quantization_scheme", "momentum"),
               sbp=lambda op: [_sig([B] * 4, [])], in_place=True))
register(OpDef("moving_average_min_max_observer_scale",
               infer=lambda op: [TensorMeta((1,), op.inputs[0].dtype), TensorMeta((1,), op.inputs[0].dtype)],
               kernel=K.moving_average_scale, kernel_attrs=_attrs("quantization_bit", "quantization_scheme"),
               sbp=lambda op: [_sig([B, B], [B, B])]))


# --- OneFlow 0.9's `quantization` (`oneflow/user/ops/quantization_op.cpp`, v0.9.0): fake_quantization's integer
# levels without the way back to floats; no gradient is registered for it in OneFlow
register(OpDef("quantization", infer=_fake_meta, kernel=K.quantization,
               kernel_attrs=lambda op: {"quantization_bit": op.attrs["quantization_bit"],
                                        "quantization_scheme": op.attrs["quantization_scheme"],
                                        "quantization_formula": op.attrs["quantization_formula"]},
               sbp=_fake_sbp))
