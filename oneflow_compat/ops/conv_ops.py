"""Convolutions of 1 and 3 spatial dimensions (`conv1d`, `conv3d`, with their input and weight gradients) and the
transposed convolutions (`deconv1d`, `deconv2d`, `deconv3d`: OneFlow's op names), beside `conv2d` (ops/nn_ops.py,
whose tuned kernels conv1d runs on). Kernels: `kernels/conv_nd.py`.

Attrs as conv2d's: strides, pads ((before, after) per spatial dimension), dilations, groups, data_format ("NCW" /
"NWC", "NCHW" / "NHWC", "NCDHW" / "NDHWC"); a transposed convolution also has `output_shape`, the logical shape it
produces (its spatial size is not determined by the other attrs alone: output padding).

SBP signatures, as conv2d's (OneFlow's conv_op.cpp / deconv_op.cpp): batch split with the weight broadcast; with
groups == 1, the filters split (output channels split) and the input channels split with the weight split alike
(partial sums); broadcast; partial sums through either input (the op is linear in each).
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import conv_nd as conv_k
from oneflow_compat.ops.registry import OpDef, apply, register

_ATTRS = ("strides", "pads", "dilations", "groups", "data_format")


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _attrs(op):
    return {k: op.attrs[k] for k in _ATTRS}


def _c_axis(op):
    return 1 if conv_k.channels_first(op.attrs["data_format"]) else len(op.inputs[0].shape) - 1


def _w_in_axis(op):
    """The weight's axis of input channels (per group)."""
    return 1 if conv_k.channels_first(op.attrs["data_format"]) else len(op.inputs[1].shape) - 1


def _check_nd(op, nd):
    if conv_k.spatial_dims(op.attrs["data_format"]) != nd:
        raise ValueError("%s '%s': data_format %r is not %d-D" % (op.type, op.name, op.attrs["data_format"], nd))


def _conv_meta(nd):
    def infer(op):
        x, w = op.inputs
        _check_nd(op, nd)
        a = op.attrs
        if x.dtype is not w.dtype:
            raise TypeError("%s '%s': input dtype %s differs from weight dtype %s" % (op.type, op.name, x.dtype.name,
                                                                                     w.dtype.name))
        try:
            shape = conv_k.conv_out_shape(tuple(x.shape), tuple(w.shape), a["strides"], a["pads"], a["dilations"],
                                          a["groups"], a["data_format"])
        except ValueError as e:
            raise ValueError("%s '%s': %s" % (op.type, op.name, e)) from None
        return [TensorMeta(shape, x.dtype, x.is_dynamic)]
    return infer


def _conv_sbp(op):
    c = _c_axis(op)
    sigs = [_sig([S.S(0), S.B], [S.S(0)])]
    if op.attrs["groups"] == 1:
        sigs += [_sig([S.B, S.S(0)], [S.S(c)]), _sig([S.S(c), S.S(_w_in_axis(op))], [S.P])]
    return sigs + [_sig([S.B, S.B], [S.B]), _sig([S.P, S.B], [S.P]), _sig([S.B, S.P], [S.P])]


def _grad_input_sbp(op):
    """[dy, w] -> dx."""
    c = _c_axis(op)
    sigs = [_sig([S.S(0), S.B], [S.S(0)])]
    if op.attrs["groups"] == 1:
        sigs += [_sig([S.S(c), S.S(0)], [S.P]), _sig([S.B, S.S(_w_in_axis(op))], [S.S(c)])]
    return sigs + [_sig([S.B, S.B], [S.B]), _sig([S.P, S.B], [S.P]), _sig([S.B, S.P], [S.P])]


def _grad_weight_sbp(op):
    """[dy, x] -> dw: a sum over the batch."""
    c = _c_axis(op)
    w_in = 1 if conv_k.channels_first(op.attrs["data_format"]) else len(op.outputs[0].shape) - 1
    sigs = [_sig([S.S(0), S.S(0)], [S.P])]
    if op.attrs["groups"] == 1:
        sigs += [_sig([S.S(c), S.B], [S.S(0)]), _sig([S.B, S.S(c)], [S.S(w_in)])]
    return sigs + [_sig([S.B, S.B], [S.B]), _sig([S.P, S.B], [S.P]), _sig([S.B, S.P], [S.P])]


def _register_conv(nd):
    conv, gin, gw = "conv%dd" % nd, "conv%dd_grad_input" % nd, "conv%dd_grad_weight" % nd

    def grad(op, dys):
        x, w = op.inputs
        return [apply(gin, [dys[0], w], dict(_attrs(op), input_shape=tuple(x.shape))),
                apply(gw, [dys[0], x], dict(_attrs(op), weight_shape=tuple(w.shape)))]

    register(OpDef(conv, infer=_conv_meta(nd), kernel=conv_k.conv_nd, kernel_attrs=_attrs, grad=grad, sbp=_conv_sbp))
    register(OpDef(gin, infer=lambda op: [TensorMeta(op.attrs["input_shape"], op.inputs[0].dtype,
                                                     op.inputs[0].is_dynamic)],
                   kernel=conv_k.conv_nd_grad_input, kernel_attrs=_attrs,
                   local_attrs=lambda op, dev: {"input_shape": tuple(dev.out_shapes[0])}, sbp=_grad_input_sbp))
    register(OpDef(gw, infer=lambda op: [TensorMeta(op.attrs["weight_shape"], op.inputs[0].dtype)],
                   kernel=conv_k.conv_nd_grad_weight, kernel_attrs=_attrs,
                   local_attrs=lambda op, dev: {"weight_shape": tuple(dev.out_shapes[0])}, sbp=_grad_weight_sbp,
                   fresh_output=True))


_register_conv(1)
_register_conv(3)


# --- transposed convolutions ------------------------------------------------------------------------------------
# y = deconv(x, w) is the input gradient of the convolution of y's shape by w (w: (C_in, C_out / groups, *k)
# channels first): its forward is conv_nd_grad_input, its input gradient the convolution of dy by w, its weight
# gradient the convolution's weight gradient with x and dy in each other's places.
def _deconv_meta(nd):
    def infer(op):
        x, w = op.inputs
        _check_nd(op, nd)
        a = op.attrs
        out = tuple(a["output_shape"])
        if x.dtype is not w.dtype:
            raise TypeError("%s '%s': input dtype %s differs from weight dtype %s" % (op.type, op.name, x.dtype.name,
                                                                                     w.dtype.name))
        try:
            back = conv_k.conv_out_shape(out, tuple(w.shape), a["strides"], a["pads"], a["dilations"], a["groups"],
                                         a["data_format"])
        except ValueError as e:
            raise ValueError("%s '%s': %s" % (op.type, op.name, e)) from None
        if tuple(back[1:]) != tuple(x.shape[1:]) or out[0] != x.shape[0]:
            raise ValueError("%s '%s': output shape %s does not come from input %s with weight %s (strides %s, pads "
                             "%s, dilations %s)" % (op.type, op.name, out, tuple(x.shape), tuple(w.shape),
                                                    a["strides"], a["pads"], a["dilations"]))
        return [TensorMeta(out, x.dtype, x.is_dynamic)]
    return infer


def _deconv_sbp(op):
    """[x, w] -> y (x's channels are the weight's axis 0, y's channels its axis 1 (channels first))."""
    c = _c_axis(op)
    w_out = _w_in_axis(op)
    sigs = [_sig([S.S(0), S.B], [S.S(0)])]
    if op.attrs["groups"] == 1:
        sigs += [_sig([S.B, S.S(w_out)], [S.S(c)]), _sig([S.S(c), S.S(0)], [S.P])]
    return sigs + [_sig([S.B, S.B], [S.B]), _sig([S.P, S.B], [S.P]), _sig([S.B, S.P], [S.P])]


def _deconv_kernel_attrs(op):
    return dict(_attrs(op))


def _register_deconv(nd):
    deconv = "deconv%dd" % nd
    conv = "conv2d" if nd == 2 else "conv%dd" % nd
    gw = "conv2d_grad_weight" if nd == 2 else "conv%dd_grad_weight" % nd

    def grad(op, dys):
        x, w = op.inputs
        dx = apply(conv, [dys[0], w], _attrs(op))
        dw = apply(gw, [x, dys[0]], dict(_attrs(op), weight_shape=tuple(w.shape)))
        return [dx, dw]

    register(OpDef(deconv, infer=_deconv_meta(nd), kernel=conv_k.conv_nd_grad_input,
                   kernel_attrs=_deconv_kernel_attrs,
                   local_attrs=lambda op, dev: {"input_shape": tuple(dev.out_shapes[0])}, grad=grad,
                   sbp=_deconv_sbp))


for _nd in (1, 2, 3):
    _register_deconv(_nd)
