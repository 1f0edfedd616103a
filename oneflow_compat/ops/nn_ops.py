"""Convolution, pooling, dropout and the dense-label / sigmoid cross-entropy losses.

Kernels come from `kernels/nn.py`, `kernels/random.py` and `kernels/loss.py`. Shape attrs that depend on the
device's piece (the input shape a gradient op must produce) are given per device by `local_attrs`; the kernels take
the batch dimension from the incoming gradient at call time, so dynamic (mirrored) batches work as well, and an
empty piece (a split axis shorter than the device count) gives zeros.
"""

import numpy as np

from oneflow_compat.backend import step_scalars
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import cuda_random, linalg
from oneflow_compat.kernels import loss as loss_k
from oneflow_compat.kernels import nn as nn_k
from oneflow_compat.kernels import pool_nd as pool_k
from oneflow_compat.kernels import random as random_k
from oneflow_compat.ops.math_ops import bias_grad_sum
from oneflow_compat.ops.registry import OpDef, apply, register

_WINDOW_ATTRS = ("strides", "pads", "dilations", "groups", "data_format")
_POOL_ATTRS = ("ksize", "strides", "pads", "data_format", "ceil_mode")


def _nchw(shape, data_format):
    n, a, b, c = shape
    return (n, a, b, c) if data_format == "NCHW" else (n, c, a, b)


def _channel_axis(data_format):
    return 1 if data_format == "NCHW" else 3


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


# --- conv2d -------------------------------------------------------------------------------------------------------
def _conv_attrs(op):
    return {k: op.attrs[k] for k in _WINDOW_ATTRS}


def _conv_meta(op):
    x, w = op.inputs[:2]  # conv2d_bias_act: a bias follows
    a = op.attrs
    fmt = a["data_format"]
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise ValueError("conv2d '%s': input %s and filters %s must both be 4-D" % (op.name, x.shape, w.shape))
    n, c, h, wd = _nchw(x.shape, fmt)
    f, cg, kh, kw = w.shape if fmt == "NCHW" else (w.shape[0], w.shape[3], w.shape[1], w.shape[2])
    g = a["groups"]
    if g < 1 or c != cg * g or f % g:
        raise ValueError("conv2d '%s': input of %d channels (%s) and filters %s do not fit groups=%d" % (
            op.name, c, fmt, w.shape, g))
    if x.dtype is not w.dtype:
        raise TypeError("conv2d '%s': input dtype %s differs from filters dtype %s" % (op.name, x.dtype.name,
                                                                                       w.dtype.name))
    if op.attrs.get("activation") not in (None, "relu"):  # conv2d_bias_act
        raise ValueError("%s '%s': activation must be None or 'relu'" % (op.type, op.name))
    try:
        oh, ow = nn_k.conv_out_hw((h, wd), (kh, kw), a["strides"], a["pads"], a["dilations"])
    except ValueError as e:
        raise ValueError("conv2d '%s': %s" % (op.name, e)) from None
    shape = (n, f, oh, ow) if fmt == "NCHW" else (n, oh, ow, f)
    return [TensorMeta(shape, x.dtype, x.is_dynamic)]


def _conv_sbp(op):
    """Batch split with replicated filters first (legacy conv_op: in S(0), weight B -> out S(0)); filters split
    over output channels; input channels split with filters split the same way -> partial sums (groups == 1)."""
    fmt, g = op.attrs["data_format"], op.attrs["groups"]
    c_ax = _channel_axis(fmt)
    sigs = [_sig([S.S(0), S.B], [S.S(0)])]
    if g == 1:
        sigs += [_sig([S.B, S.S(0)], [S.S(c_ax)]), _sig([S.S(c_ax), S.S(c_ax)], [S.P])]
    return sigs + [_sig([S.B, S.B], [S.B]), _sig([S.P, S.B], [S.P]), _sig([S.B, S.P], [S.P])]


def _conv_grad(op, dys):
    x, w = op.inputs[:2]
    dy = dys[0]
    dx = apply("conv2d_grad_input", [dy, w], dict(_conv_attrs(op), input_shape=tuple(x.shape)))
    dw = apply("conv2d_grad_weight", [dy, x], dict(_conv_attrs(op), weight_shape=tuple(w.shape)))
    return [dx, dw]


def _conv_grad_input_sbp(op):
    """[dy, w] -> dx. Linear in each input; channel splits need groups == 1."""
    fmt, g = op.attrs["data_format"], op.attrs["groups"]
    c_ax = _channel_axis(fmt)
    sigs = [_sig([S.S(0), S.B], [S.S(0)])]
    if g == 1:
        # dy split over output channels with the matching filters: each device adds part of every dx element;
        # filters split over input channels: each device makes its slice of dx's channels
        sigs += [_sig([S.S(c_ax), S.S(0)], [S.P]), _sig([S.B, S.S(c_ax)], [S.S(c_ax)])]
    return sigs + [_sig([S.B, S.B], [S.B]), _sig([S.P, S.B], [S.P]), _sig([S.B, S.P], [S.P])]


def _conv_grad_weight_sbp(op):
    """[dy, x] -> dw: a sum over the batch, so batch splits give partial sums."""
    fmt, g = op.attrs["data_format"], op.attrs["groups"]
    c_ax = _channel_axis(fmt)
    sigs = [_sig([S.S(0), S.S(0)], [S.P])]
    if g == 1:
        sigs += [_sig([S.S(c_ax), S.B], [S.S(0)]), _sig([S.B, S.S(c_ax)], [S.S(c_ax)])]
    return sigs + [_sig([S.B, S.B], [S.B]), _sig([S.P, S.B], [S.P]), _sig([S.B, S.P], [S.P])]


register(OpDef("conv2d", infer=_conv_meta, kernel=nn_k.conv2d, kernel_attrs=_conv_attrs, grad=_conv_grad,
               sbp=_conv_sbp))
register(OpDef("conv2d_grad_input", infer=lambda op: [TensorMeta(op.attrs["input_shape"], op.inputs[0].dtype,
                                                                 op.inputs[0].is_dynamic)],
               kernel=nn_k.conv2d_grad_input, kernel_attrs=_conv_attrs,
               local_attrs=lambda op, dev: {"input_shape": tuple(dev.out_shapes[0])}, sbp=_conv_grad_input_sbp))
register(OpDef("conv2d_grad_weight", infer=lambda op: [TensorMeta(op.attrs["weight_shape"], op.inputs[0].dtype)],
               kernel=nn_k.conv2d_grad_weight, kernel_attrs=_conv_attrs,
               local_attrs=lambda op, dev: {"weight_shape": tuple(dev.out_shapes[0])}, sbp=_conv_grad_weight_sbp,
               fresh_output=True))


# --- pooling (kernels/pool_nd.py: the 2-D kernels of kernels/nn.py where the options allow) -------------------------
# Besides the legacy attrs, OneFlow 0.9's modules may set `dilations` (max) and `count_include_pad` /
# `divisor_override` (average); ops built without them (legacy jobs, fusions) keep the legacy meaning.
_POOL_EXTRAS = {"max": ("dilations",), "avg": ("count_include_pad", "divisor_override")}


def _pool_attrs(op):
    attrs = {k: op.attrs[k] for k in _POOL_ATTRS}
    attrs.update({k: op.attrs[k] for k in _POOL_EXTRAS[op.type[:3]] if k in op.attrs})
    return attrs


def _pool_meta(op):
    x = op.inputs[0]
    a = op.attrs
    if len(x.shape) != 4:
        raise ValueError("%s '%s': input must be 4-D, got shape %s" % (op.type, op.name, x.shape))
    n, c, h, w = _nchw(x.shape, a["data_format"])
    try:
        dilations = a.get("dilations", 1) if op.type.startswith("max") else 1
        oh, ow = nn_k.conv_out_hw((h, w), a["ksize"], a["strides"], a["pads"], dilations, a["ceil_mode"])
    except ValueError as e:
        raise ValueError("%s '%s': %s" % (op.type, op.name, e)) from None
    shape = (n, c, oh, ow) if a["data_format"] == "NCHW" else (n, oh, ow, c)
    return [TensorMeta(shape, x.dtype, x.is_dynamic)]


def _pool_sbp(op, linear):
    """Windows never cross the batch or channel axes."""
    c_ax = _channel_axis(op.attrs["data_format"])
    k = len(op.inputs)
    sigs = [_sig([S.S(0)] * k, [S.S(0)]), _sig([S.S(c_ax)] * k, [S.S(c_ax)]), _sig([S.B] * k, [S.B])]
    if linear:
        sigs.append(_sig([S.P] * k, [S.P]))
    return sigs


def _max_pool_grad_sbp(op):
    # [dy, x, y]: linear in dy only
    return _pool_sbp(op, False) + [_sig([S.P, S.B, S.B], [S.P])]


def _same_as_input(op, i):
    x = op.inputs[i]
    return [TensorMeta(x.shape, op.inputs[0].dtype, x.is_dynamic)]


register(OpDef("max_pool2d", infer=_pool_meta, kernel=pool_k.max_pool, kernel_attrs=_pool_attrs,
               sbp=lambda op: _pool_sbp(op, False),
               grad=lambda op, dys: [apply("max_pool2d_grad", [dys[0], op.inputs[0], op.outputs[0]], op.attrs)]))
register(OpDef("max_pool2d_grad", infer=lambda op: _same_as_input(op, 1), kernel=pool_k.max_pool_grad,
               kernel_attrs=_pool_attrs, sbp=_max_pool_grad_sbp))
register(OpDef("avg_pool2d", infer=_pool_meta, kernel=pool_k.avg_pool, kernel_attrs=_pool_attrs,
               sbp=lambda op: _pool_sbp(op, True),
               grad=lambda op, dys: [apply("avg_pool2d_grad", [dys[0]],
                                           dict(op.attrs, input_shape=tuple(op.inputs[0].shape)))]))
register(OpDef("avg_pool2d_grad", infer=lambda op: [TensorMeta(op.attrs["input_shape"], op.inputs[0].dtype,
                                                               op.inputs[0].is_dynamic)],
               kernel=pool_k.avg_pool_grad, kernel_attrs=_pool_attrs,
               local_attrs=lambda op, dev: {"input_shape": tuple(dev.out_shapes[0])},
               sbp=lambda op: _pool_sbp(op, True)))


# --- dropout ------------------------------------------------------------------------------------------------------
def dropout_seed(op, session):
    """The op's seed: the user's, else one derived from the session's root seed and the job and op names, so every
    rank and device count agrees on it."""
    if op.attrs.get("seed") is not None:
        return int(op.attrs["seed"])
    root = (session.root_seed if session is not None and session.root_seed is not None else 0)
    # an activation checkpointing recomputation draws with its original's seed (passes/checkpointing.py)
    name = getattr(op.job, "recompute_of", {}).get(op.name, op.name)
    return random_k.derived_seed(root, "%s/%s" % (op.job.name, name))


def _call_counters(session):
    """{(job, op, device): calls so far}. Call counts live with the session (its `op_state`), not with one built
    closure: eager mode rebuilds the op on every call of the job, and the mask must still change from call to
    call."""
    if session is None:
        return {}
    return session.op_state.setdefault("dropout calls", {})


def _dropout_build(op, dev):
    """Each call draws a fresh mask; the mask of the logical tensor depends only on (seed, call index, logical
    shape), and each device takes its piece of it, so 1 and N devices give the same numbers."""
    xp, rate = dev.xp, op.attrs["rate"]
    seed = dropout_seed(op, dev.session)
    logical = tuple(op.inputs[0].shape)
    sbp = dev.sbp_in[0]
    mirrored = sbp == S.M
    piece = S.local_slices(logical, sbp, dev.index, dev.parallel_num)
    calls = _call_counters(dev.session)
    counter = (op.job.name, op.name, dev.index)

    def next_key():
        call = calls.get(counter, 0)
        calls[counter] = call + 1
        # mirrored: each device holds an independent tensor (its batch may be dynamic): its own stream
        return random_k.call_key(seed, call, dev.index) if mirrored else random_k.call_key(seed, call)

    geometry = None if mirrored else cuda_random.piece_geometry(logical, piece)
    if xp is not np and hasattr(xp, "RawModule") and cuda_random.supported(op.inputs[0].dtype.np) and \
            (mirrored or geometry is not None):
        # on a device: one Philox launch draws the mask and applies it (kernels/cuda_random.py); the call's key is
        # a step scalar (uploaded with the call), or uploaded here where the running code has none (eager ops)
        scalars = step_scalars.for_device(xp, dev.index)
        key = scalars.add(np.uint64, next_key) if scalars is not None else None

        def run_device(x):
            k = key if key is not None else xp.asarray(np.uint64(next_key()))
            geo = cuda_random.piece_geometry(tuple(x.shape)) if mirrored else geometry
            return cuda_random.dropout(xp, xp.ascontiguousarray(x), k, rate, geo)

        return run_device

    def run(x):
        step_scalars.refuse_in_capture("dropout '%s' draws its key on the host" % op.name)
        key = next_key()
        if mirrored:
            mask = random_k.dropout_mask(xp, key, tuple(x.shape), rate)
        else:
            mask = random_k.dropout_mask(xp, key, logical, rate, piece)
        return random_k.dropout(xp, x, mask, rate=rate), mask

    return run


def _dropout_meta(op):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise TypeError("dropout '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic), TensorMeta(x.shape, dtypes.int8, x.is_dynamic)]


def _dropout_sbp(op):
    # a partial-sum input is scaled by the same full mask on every device (dropout is linear in x)
    nd = len(op.inputs[0].shape)
    return [_sig([S.S(i)], [S.S(i), S.S(i)]) for i in range(nd)] + [_sig([S.B], [S.B, S.B]),
                                                                    _sig([S.P], [S.P, S.B])]


def _dropout_grad(op, dys):
    if dys[0] is None:
        return [None]
    return [apply("dropout_grad", [dys[0], op.outputs[1]], {"rate": op.attrs["rate"]})]


def _dropout_grad_sbp(op):
    nd = len(op.inputs[0].shape)
    return [_sig([S.S(i), S.S(i)], [S.S(i)]) for i in range(nd)] + [_sig([S.B, S.B], [S.B]),
                                                                    _sig([S.P, S.B], [S.P])]


register(OpDef("dropout", infer=_dropout_meta, build=_dropout_build, grad=_dropout_grad, sbp=_dropout_sbp,
               num_outputs=2))
# (the kernel: one launch on a device, the host formula of random_k.dropout_grad elsewhere)
register(OpDef("dropout_grad", infer=lambda op: _same_as_input(op, 0), kernel=cuda_random.dropout_grad,
               kernel_attrs=lambda op: {"rate": op.attrs["rate"]}, sbp=_dropout_grad_sbp))


# --- cross entropy with dense labels ------------------------------------------------------------------------------
def _check_pair(op):
    logits, labels = op.inputs
    if tuple(logits.shape) != tuple(labels.shape):
        raise ValueError("%s '%s': labels shape %s differs from logits shape %s" % (
            op.type, op.name, labels.shape, logits.shape))
    if not logits.dtype.is_floating or labels.dtype is not logits.dtype:
        raise TypeError("%s '%s': logits and labels must have the same floating dtype, got %s and %s" % (
            op.type, op.name, logits.dtype.name, labels.dtype.name))
    return logits, labels


def _softmax_ce_meta(op):
    logits, labels = _check_pair(op)
    if len(logits.shape) < 2:
        raise ValueError("softmax_cross_entropy '%s': logits must have a class axis, got shape %s" % (
            op.name, logits.shape))
    return [TensorMeta(logits.shape[:-1], logits.dtype, logits.is_dynamic or labels.is_dynamic)]


def _softmax_ce_grad(op, dys):
    # labels get no gradient (legacy); the probabilities are recomputed rather than kept from the forward
    logits, labels = op.inputs
    prob = apply("softmax", [logits], {"axis": -1})
    return [apply("softmax_cross_entropy_grad", [dys[0], prob, labels]), None]


def _rows_sbp(op, n_in, linear_first):
    """Ops over whole rows of the last axis: every leading axis may be split."""
    nd = len(op.inputs[-1].shape)
    sigs = [_sig([S.S(i)] * n_in, [S.S(i)]) for i in range(nd - 1)] + [_sig([S.B] * n_in, [S.B])]
    if linear_first:
        sigs.append(_sig([S.P] + [S.B] * (n_in - 1), [S.P]))
    return sigs


def _elementwise_sbp(op, n_in, linear_first):
    nd = len(op.inputs[-1].shape)
    sigs = [_sig([S.S(i)] * n_in, [S.S(i)]) for i in range(nd)] + [_sig([S.B] * n_in, [S.B])]
    if linear_first:
        sigs.append(_sig([S.P] + [S.B] * (n_in - 1), [S.P]))
    return sigs


register(OpDef("softmax_cross_entropy", infer=_softmax_ce_meta, kernel=loss_k.softmax_cross_entropy,
               grad=_softmax_ce_grad,
               sbp=lambda op: _rows_sbp(op, 2, False)))
register(OpDef("softmax_cross_entropy_grad", infer=lambda op: _same_as_input(op, 1),
               kernel=loss_k.softmax_cross_entropy_grad, sbp=lambda op: _rows_sbp(op, 3, True)))


def _sigmoid_ce_meta(op):
    # OneFlow v0.4.0 registers sigmoid_cross_entropy for labels of the prediction's dtype, int32 or int8
    # (user/kernels/sigmoid_cross_entropy_kernel.cpp): Wide&Deep feeds its int32 click labels as they are
    logits, labels = op.inputs
    if labels.dtype in (dtypes.int32, dtypes.int8) and logits.dtype.is_floating:
        if tuple(logits.shape) != tuple(labels.shape):
            raise ValueError("%s '%s': labels shape %s differs from logits shape %s" % (
                op.type, op.name, labels.shape, logits.shape))
    else:
        _check_pair(op)
    return [TensorMeta(logits.shape, logits.dtype, logits.is_dynamic or labels.is_dynamic)]


def _sigmoid_ce_grad(op, dys):
    logits, labels = op.inputs
    return [apply("sigmoid_cross_entropy_grad", [dys[0], logits, labels]), None]


register(OpDef("sigmoid_cross_entropy", infer=_sigmoid_ce_meta, kernel=loss_k.sigmoid_cross_entropy,
               grad=_sigmoid_ce_grad, sbp=lambda op: _elementwise_sbp(op, 2, False)))
register(OpDef("sigmoid_cross_entropy_grad", infer=lambda op: _same_as_input(op, 1),
               kernel=loss_k.sigmoid_cross_entropy_grad, sbp=lambda op: _elementwise_sbp(op, 3, True)))


# --- fused ops (made by passes/fusion.py from the ops they replace, with the same values) -------------------------
def _act_grad(op, dy):
    """dy through the fused activation: relu_grad of the op's own output, as the relu op's gradient rule."""
    return apply("relu_grad", [dy, op.outputs[0]]) if op.attrs["activation"] == "relu" else dy


def _conv_bias_act_meta(op):
    x, w, b = op.inputs
    meta = _conv_meta(op)
    c_ax = _channel_axis(op.attrs["data_format"])
    if tuple(b.shape) != (meta[0].shape[c_ax],) or b.dtype is not x.dtype:
        raise ValueError("conv2d_bias_act '%s': bias %s %s does not fit %d filters of %s" % (
            op.name, b.shape, b.dtype.name, meta[0].shape[c_ax], x.dtype.name))
    return meta


def _conv_bias_act_grad(op, dys):
    x, w, _ = op.inputs
    dz = _act_grad(op, dys[0])
    c_ax = _channel_axis(op.attrs["data_format"])
    db = bias_grad_sum(dz, [i for i in range(4) if i != c_ax])
    dx = apply("conv2d_grad_input", [dz, w], dict(_conv_attrs(op), input_shape=tuple(x.shape)))
    dw = apply("conv2d_grad_weight", [dz, x], dict(_conv_attrs(op), weight_shape=tuple(w.shape)))
    return [dx, dw, db]


def _conv_bias_act_sbp(op):
    """conv2d's batch and filter splits, the bias following the filters (no partial sums: the activation is not
    linear)."""
    c_ax = _channel_axis(op.attrs["data_format"])
    sigs = [_sig([S.S(0), S.B, S.B], [S.S(0)])]
    if op.attrs["groups"] == 1:
        sigs.append(_sig([S.B, S.S(0), S.S(0)], [S.S(c_ax)]))
    return sigs + [_sig([S.B, S.B, S.B], [S.B])]


register(OpDef("conv2d_bias_act", infer=_conv_bias_act_meta, kernel=nn_k.conv2d_bias_act,
               kernel_attrs=lambda op: dict(_conv_attrs(op), activation=op.attrs["activation"]),
               grad=_conv_bias_act_grad, sbp=_conv_bias_act_sbp, fresh_output=True))


def _matmul_bias_act_meta(op):
    a, b, bias = op.inputs
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ValueError("matmul_bias_act '%s': inputs must be 2-D, got %s and %s" % (op.name, a.shape, b.shape))
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    m, ka = (a.shape[1], a.shape[0]) if ta else a.shape
    kb, n = (b.shape[1], b.shape[0]) if tb else b.shape
    if ka != kb or tuple(bias.shape) != (n,):
        raise ValueError("matmul_bias_act '%s': shapes %s, %s and bias %s do not match (transpose_a=%s, "
                         "transpose_b=%s)" % (op.name, a.shape, b.shape, bias.shape, ta, tb))
    return [TensorMeta((m, n), a.dtype, a.is_dynamic or b.is_dynamic)]


def _matmul_bias_act_grad(op, dys):
    a, b, _ = op.inputs
    ta, tb, al = op.attrs["transpose_a"], op.attrs["transpose_b"], op.attrs["alpha"]
    dz = _act_grad(op, dys[0])

    def mm(p, q, tp, tq):
        return apply("matmul", [p, q], {"transpose_a": tp, "transpose_b": tq, "alpha": al})

    da = mm(dz, b, False, not tb) if not ta else mm(b, dz, tb, True)
    db = mm(a, dz, not ta, False) if not tb else mm(dz, a, True, ta)
    return [da, db, bias_grad_sum(dz, [0])]


def _matmul_bias_act_sbp(op):
    """matmul's row and column splits, the bias following the columns (no partial sums)."""
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    return [_sig([S.S(1 if ta else 0), S.B, S.B], [S.S(0)]),
            _sig([S.B, S.S(0 if tb else 1), S.S(0)], [S.S(1)]),
            _sig([S.B, S.B, S.B], [S.B])]


register(OpDef("matmul_bias_act", infer=_matmul_bias_act_meta, kernel=linalg.matmul_bias_act,
               kernel_attrs=lambda op: {k: op.attrs[k] for k in ("transpose_a", "transpose_b", "alpha",
                                                                 "activation")},
               grad=_matmul_bias_act_grad, sbp=_matmul_bias_act_sbp, fresh_output=True))

register(OpDef("max_pool2d_relu_grad", infer=lambda op: _same_as_input(op, 1), kernel=pool_k.max_pool_relu_grad,
               kernel_attrs=_pool_attrs, sbp=_max_pool_grad_sbp, fresh_output=True))
