"""Pooling of 1 and 3 spatial dimensions (`max_pool1d`, `max_pool3d`, `avg_pool1d`, `avg_pool3d` and their
gradients) beside the 2-D ops of ops/nn_ops.py, and OneFlow 0.9's adaptive average pooling
(`adaptive_avg_pool1d/2d/3d`). Kernels: `kernels/pool_nd.py`.

Attrs as the 2-D ops': ksize, strides, pads ((before, after) per spatial axis), data_format ("NCW" / "NWC",
"NCDHW" / "NDHWC"), ceil_mode, and OneFlow 0.9's optional `dilations`, `count_include_pad`, `divisor_override`.
SBP (OneFlow's pool_op.cpp): windows never cross the batch and channel axes, so either may be split; the average
is linear (partial sums pass through it and its gradient); the max gradient is linear in dy.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import conv_nd
from oneflow_compat.kernels import pool_nd as pool_k
from oneflow_compat.ops.registry import OpDef, apply, register

_ATTRS = ("ksize", "strides", "pads", "data_format", "ceil_mode")
_EXTRAS = {"max": ("dilations",), "avg": ("count_include_pad", "divisor_override")}


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _attrs(op):
    attrs = {k: op.attrs[k] for k in _ATTRS}
    attrs.update({k: op.attrs[k] for k in _EXTRAS[op.type[:3]] if k in op.attrs})
    return attrs


def _c_axis(op):
    return 1 if conv_nd.channels_first(op.attrs["data_format"]) else len(op.inputs[0].shape) - 1


def _pool_meta(nd):
    def infer(op):
        x = op.inputs[0]
        a = op.attrs
        if conv_nd.spatial_dims(a["data_format"]) != nd or len(x.shape) != nd + 2:
            raise ValueError("%s '%s': input of shape %s with data_format %r is not %d-D" % (
                op.type, op.name, tuple(x.shape), a["data_format"], nd))
        first = conv_nd.channels_first(a["data_format"])
        spatial = tuple(x.shape[2:]) if first else tuple(x.shape[1:-1])
        modern = any(k in a for k in _EXTRAS[op.type[:3]])  # built by OneFlow 0.9's modules
        dil = (a.get("dilations") if op.type.startswith("max") else None) or (1,) * nd
        try:
            outs = tuple(conv_nd.out_size(n, k, s, p, d, a["ceil_mode"])
                         for n, k, s, p, d in zip(spatial, a["ksize"], a["strides"], a["pads"], dil))
        except ValueError as e:
            raise ValueError("%s '%s': %s" % (op.type, op.name, e)) from None
        for k, (b, e) in zip(a["ksize"], a["pads"]):
            if max(b, e) > k // 2 and modern:
                raise ValueError("%s '%s': pad should be at most half of kernel size, but got pad=%d and "
                                 "kernel_size=%d" % (op.type, op.name, max(b, e), k))
        n, c = x.shape[0], x.shape[1] if first else x.shape[-1]
        shape = (n, c) + outs if first else (n,) + outs + (c,)
        return [TensorMeta(shape, x.dtype, x.is_dynamic)]
    return infer


def _pool_sbp(op, linear):
    c = _c_axis(op)
    k = len(op.inputs)
    sigs = [_sig([S.S(0)] * k, [S.S(0)]), _sig([S.S(c)] * k, [S.S(c)]), _sig([S.B] * k, [S.B])]
    if linear:
        sigs.append(_sig([S.P] * k, [S.P]))
    return sigs


def _register(nd):
    mx, av = "max_pool%dd" % nd, "avg_pool%dd" % nd
    register(OpDef(mx, infer=_pool_meta(nd), kernel=pool_k.max_pool, kernel_attrs=_attrs,
                   sbp=lambda op: _pool_sbp(op, False),
                   grad=lambda op, dys: [apply(mx + "_grad", [dys[0], op.inputs[0], op.outputs[0]], op.attrs)]))
    register(OpDef(mx + "_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype,
                                                              op.inputs[1].is_dynamic)],
                   kernel=pool_k.max_pool_grad, kernel_attrs=_attrs,
                   sbp=lambda op: _pool_sbp(op, False) + [_sig([S.P, S.B, S.B], [S.P])]))
    register(OpDef(av, infer=_pool_meta(nd), kernel=pool_k.avg_pool, kernel_attrs=_attrs,
                   sbp=lambda op: _pool_sbp(op, True),
                   grad=lambda op, dys: [apply(av + "_grad", [dys[0]],
                                               dict(op.attrs, input_shape=tuple(op.inputs[0].shape)))]))
    register(OpDef(av + "_grad", infer=lambda op: [TensorMeta(op.attrs["input_shape"], op.inputs[0].dtype,
                                                              op.inputs[0].is_dynamic)],
                   kernel=pool_k.avg_pool_grad, kernel_attrs=_attrs,
                   local_attrs=lambda op, dev: {"input_shape": tuple(dev.out_shapes[0])},
                   sbp=lambda op: _pool_sbp(op, True)))


_register(1)
_register(3)


# --- adaptive average pooling -------------------------------------------------------------------------------------
def _adaptive_meta(nd):
    def infer(op):
        x = op.inputs[0]
        fmt, out = op.attrs["data_format"], tuple(op.attrs["output_size"])
        if conv_nd.spatial_dims(fmt) != nd or len(x.shape) != nd + 2 or len(out) != nd:
            raise ValueError("%s '%s': input of shape %s, output_size %s and data_format %r are not %d-D" % (
                op.type, op.name, tuple(x.shape), out, fmt, nd))
        if any(o < 1 for o in out):
            raise ValueError("%s '%s': output_size %s must be positive" % (op.type, op.name, out))
        first = conv_nd.channels_first(fmt)
        shape = tuple(x.shape[:2]) + out if first else (x.shape[0],) + out + (x.shape[-1],)
        return [TensorMeta(shape, x.dtype, x.is_dynamic)]
    return infer


def _adaptive_attrs(op):
    return {"output_size": tuple(op.attrs["output_size"]), "data_format": op.attrs["data_format"]}


def _register_adaptive(nd):
    name = "adaptive_avg_pool%dd" % nd
    register(OpDef(name, infer=_adaptive_meta(nd), kernel=pool_k.adaptive_avg_pool, kernel_attrs=_adaptive_attrs,
                   sbp=lambda op: _pool_sbp(op, True),
                   grad=lambda op, dys: [apply(name + "_grad", [dys[0]],
                                               dict(op.attrs, input_shape=tuple(op.inputs[0].shape)))]))
    register(OpDef(name + "_grad", infer=lambda op: [TensorMeta(op.attrs["input_shape"], op.inputs[0].dtype,
                                                                op.inputs[0].is_dynamic)],
                   kernel=pool_k.adaptive_avg_pool_grad,
                   kernel_attrs=lambda op: dict(_adaptive_attrs(op)),
                   local_attrs=lambda op, dev: {"input_shape": tuple(dev.out_shapes[0])},
                   sbp=lambda op: _pool_sbp(op, True)))


for _nd in (1, 2, 3):
    _register_adaptive(_nd)
