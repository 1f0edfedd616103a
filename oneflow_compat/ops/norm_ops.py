"""Normalization ops (kernels: `kernels/norm.py`):

* `normalization` (x, mean, variance, [gamma], [beta]) -> y: per-channel normalization of axis `axis` with given
  statistics (OneFlow's normalization op without training, legacy `flow.nn.batch_normalization`). Batch
  normalization in training feeds it the batch's mean and variance computed by reduction ops, so the full gradient
  flows through them (its rule gives d mean and d variance) and a batch split across devices reduces to partial
  sums: N devices compute the statistics of the whole batch, as one device does.
* `layer_norm` (x, [gamma], [beta]) -> (y, mean, inv_variance, normalized), with `layer_norm_grad` and
  `layer_norm_param_grad` as OneFlow has them (v0.4.0 user/ops/layer_norm_op.cpp, signatures included); group and
  instance normalization are layer norms of reshaped inputs.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import norm as norm_k
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _is_param_dtype(x, p):
    """Parameters and statistics have x's dtype, or float32 for float16 data (OneFlow keeps them in float32)."""
    return p.dtype is x.dtype or (x.dtype.name == "float16" and p.dtype.name == "float32")


# --- normalization --------------------------------------------------------------------------------------------
def _norm_attrs(op):
    return {k: op.attrs[k] for k in ("axis", "epsilon", "center", "scale")}


def _norm_meta(op):
    x = op.inputs[0]
    a = op.attrs
    nd = len(x.shape)
    if not (0 <= a["axis"] < nd):
        raise ValueError("normalization '%s': axis %r out of range for input of shape %s" % (op.name, a["axis"],
                                                                                          tuple(x.shape)))
    want = 3 + int(a["scale"]) + int(a["center"])
    if len(op.inputs) != want:
        raise ValueError("normalization '%s': %d inputs given, %d expected (x, mean, variance%s%s)" % (
            op.name, len(op.inputs), want, ", gamma" if a["scale"] else "", ", beta" if a["center"] else ""))
    c = x.shape[a["axis"]]
    if not x.dtype.is_floating:
        raise TypeError("normalization '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    for k, p in enumerate(op.inputs[1:], 1):
        if tuple(p.shape) != (c,) or not _is_param_dtype(x, p):
            raise ValueError("normalization '%s': input %d of shape %s %s does not fit %d channels of %s data" % (
                op.name, k, tuple(p.shape), p.dtype.name, c, x.dtype.name))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _norm_sbp(op):
    """x split along any other axis with the per-channel inputs broadcast; x split along the channels with them
    split alike."""
    nd, axis, k = len(op.inputs[0].shape), op.attrs["axis"], len(op.inputs) - 1
    sigs = [_sig([S.S(i)] + [S.B] * k, [S.S(i)]) for i in range(nd) if i != axis]
    sigs.append(_sig([S.S(axis)] + [S.S(0)] * k, [S.S(axis)]))
    return sigs + [_sig([S.B] * (k + 1), [S.B])]


def _norm_grad(op, dys):
    if dys[0] is None:
        return [None] * len(op.inputs)
    x, mean, variance = op.inputs[:3]
    a = op.attrs
    ins = [dys[0], x, mean, variance] + ([op.inputs[3]] if a["scale"] else [])
    dx, dmean, dvariance, dgamma, dbeta = apply("normalization_grad", ins,
                                                {"axis": a["axis"], "epsilon": a["epsilon"]})
    grads = [dx, dmean, dvariance]
    if a["scale"]:
        grads.append(dgamma)
    if a["center"]:
        grads.append(dbeta)
    return grads


def _norm_grad_meta(op):
    dy, x, mean = op.inputs[:3]
    c = x.shape[op.attrs["axis"]]
    return [TensorMeta(x.shape, dy.dtype, x.is_dynamic)] + [TensorMeta((c,), mean.dtype)] * 4


def _norm_grad_sbp(op):
    """[dy, x, mean, variance, (gamma)] -> (dx, d mean, d variance, d gamma, d beta): the per-channel gradients sum
    over every other axis, so splitting one gives partial sums; linear in dy."""
    nd, axis, k = len(op.inputs[1].shape), op.attrs["axis"], len(op.inputs) - 2
    sigs = [_sig([S.S(i), S.S(i)] + [S.B] * k, [S.S(i)] + [S.P] * 4) for i in range(nd) if i != axis]
    sigs.append(_sig([S.S(axis), S.S(axis)] + [S.S(0)] * k, [S.S(axis)] + [S.S(0)] * 4))
    return sigs + [_sig([S.B] * (k + 2), [S.B] * 5), _sig([S.P] + [S.B] * (k + 1), [S.P] * 5)]


register(OpDef("normalization", infer=_norm_meta, kernel=norm_k.normalization, kernel_attrs=_norm_attrs,
               sbp=_norm_sbp, grad=_norm_grad, recomputable=False))
register(OpDef("normalization_grad", infer=_norm_grad_meta, kernel=norm_k.normalization_grad,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"], "epsilon": op.attrs["epsilon"]},
               sbp=_norm_grad_sbp, num_outputs=5))


# --- layer_norm -----------------------------------------------------------------------------------------------
def _axis_of(nd, axis, what, op):
    a = axis + nd if axis < 0 else axis
    if not (0 <= a < nd):
        raise ValueError("%s '%s': %s %r out of range for %d axes" % (op.type, op.name, what, axis, nd))
    return a


def _ln_attrs(op):
    bna, bpa = _bna_bpa(op, len(op.inputs[0].shape))
    return dict({k: op.attrs[k] for k in ("epsilon", "center", "scale")}, begin_norm_axis=bna, begin_params_axis=bpa)


def _ln_meta(op):
    x = op.inputs[0]
    a = op.attrs
    nd = len(x.shape)
    bna = _axis_of(nd, a["begin_norm_axis"], "begin_norm_axis", op)
    bpa = _axis_of(nd, a["begin_params_axis"], "begin_params_axis", op)
    want = 1 + int(a["scale"]) + int(a["center"])
    if len(op.inputs) != want:
        raise ValueError("layer_norm '%s': %d inputs given, %d expected" % (op.name, len(op.inputs), want))
    if not x.dtype.is_floating:
        raise TypeError("layer_norm '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    pshape = tuple(x.shape[bpa:])
    for p in op.inputs[1:]:
        if tuple(p.shape) != pshape or p.dtype is not x.dtype:
            raise ValueError("layer_norm '%s': gamma/beta of shape %s %s must be %s %s (the input's shape from "
                             "begin_params_axis %d)" % (op.name, tuple(p.shape), p.dtype.name, pshape, x.dtype.name,
                                                        bpa))
    sdt = x.dtype if x.dtype.name != "float16" else _float32()
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic), TensorMeta(tuple(x.shape[:bna]), sdt),
            TensorMeta(tuple(x.shape[:bna]), sdt), TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _float32():
    from oneflow_compat.ir import dtypes

    return dtypes.float32


def _bna_bpa(op, nd):
    return (_axis_of(nd, op.attrs["begin_norm_axis"], "begin_norm_axis", op),
            _axis_of(nd, op.attrs["begin_params_axis"], "begin_params_axis", op))


def _ln_sbp(op):
    """OneFlow's: the axes before both the normalized and the parameters' axes split, gamma/beta broadcast."""
    nd = len(op.inputs[0].shape)
    bna, bpa = _bna_bpa(op, nd)
    k = len(op.inputs) - 1
    sigs = [_sig([S.S(i)] + [S.B] * k, [S.S(i)] * 4) for i in range(min(bna, bpa))]
    return sigs + [_sig([S.B] * (k + 1), [S.B] * 4)]


def _ln_grad(op, dys):
    x = op.inputs[0]
    a = op.attrs
    nd = len(x.shape)
    bna, bpa = _bna_bpa(op, nd)
    dy = dys[0]
    if dy is None:
        return [None] * len(op.inputs)
    _, mean, inv, normalized = op.outputs
    grads = []
    if a["scale"]:
        gamma = op.inputs[1]
        dnorm, dbeta, dgamma = apply("layer_norm_param_grad", [dy, normalized, gamma], {"begin_params_axis": bpa})
        grads.append(dgamma)
    else:
        dnorm = dy
        dbeta = apply("reduce_sum", [dy], {"axis": list(range(bpa)), "keepdims": False}) if bpa else dy
    if a["center"]:
        grads.append(dbeta)
    dx = apply("layer_norm_grad", [dnorm, x, mean, inv], {"begin_norm_axis": bna, "epsilon": a["epsilon"]})
    return [dx] + grads


def _ln_grad_sbp(op):
    """[dy, x, mean, inv_variance] -> dx: the axes before the normalized ones split (OneFlow's)."""
    bna = op.attrs["begin_norm_axis"]
    return [_sig([S.S(i)] * 4, [S.S(i)]) for i in range(bna)] + [_sig([S.B] * 4, [S.B])]


def _ln_param_grad_sbp(op):
    """[dy, normalized, gamma] -> (normalized_diff, beta_diff, gamma_diff): splitting an axis the parameters are
    summed over gives partial sums (OneFlow's); linear in dy."""
    bpa = op.attrs["begin_params_axis"] % len(op.inputs[0].shape)
    sigs = [_sig([S.S(i), S.S(i), S.B], [S.S(i), S.P, S.P]) for i in range(bpa)]
    return sigs + [_sig([S.B] * 3, [S.B] * 3), _sig([S.P, S.B, S.B], [S.P] * 3)]


def _ln_param_grad_meta(op):
    dy, normalized, gamma = op.inputs
    if tuple(dy.shape) != tuple(normalized.shape):
        raise ValueError("layer_norm_param_grad '%s': dy %s and normalized %s differ in shape" % (
            op.name, tuple(dy.shape), tuple(normalized.shape)))
    bpa = op.attrs["begin_params_axis"] % len(dy.shape)
    if tuple(gamma.shape) != tuple(dy.shape[bpa:]):
        raise ValueError("layer_norm_param_grad '%s': gamma of shape %s must be %s" % (
            op.name, tuple(gamma.shape), tuple(dy.shape[bpa:])))
    return [TensorMeta(dy.shape, dy.dtype, dy.is_dynamic), TensorMeta(gamma.shape, gamma.dtype),
            TensorMeta(gamma.shape, gamma.dtype)]


register(OpDef("layer_norm", infer=_ln_meta, kernel=norm_k.layer_norm, kernel_attrs=_ln_attrs, sbp=_ln_sbp,
               grad=_ln_grad, num_outputs=4))
register(OpDef("layer_norm_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype,
                                                               op.inputs[1].is_dynamic)],
               kernel=norm_k.layer_norm_grad,
               kernel_attrs=lambda op: {"begin_norm_axis": op.attrs["begin_norm_axis"]}, sbp=_ln_grad_sbp))
register(OpDef("layer_norm_param_grad", infer=_ln_param_grad_meta, kernel=norm_k.layer_norm_param_grad,
               kernel_attrs=lambda op: {"begin_params_axis": op.attrs["begin_params_axis"]},
               sbp=_ln_param_grad_sbp, num_outputs=3))


# --- batch normalization in training (model zoo, issue 24; kernels/norm.py has the formulas) -------------------------
# channel_sum and centered_square_sum give the batch's per-channel sums (partial sums where the batch is split:
# the boxing all-reduces them, so N devices normalize with the whole batch's statistics as one device does);
# normalization_batch_stats normalizes with mean and variance made from them and carries the gradient of the whole
# batch normalization to x (none to the statistics: their dependence on x is in that gradient). The composed
# reduce_mean / reduce_variance / normalization graph gives the same values in many more passes over the data.
def _channel_axis_ok(op, x, axis):
    if not (0 <= axis < len(x.shape)) or not x.dtype.is_floating:
        raise ValueError("%s '%s': axis %r of a %s input of shape %s" % (op.type, op.name, axis, x.dtype.name,
                                                                       tuple(x.shape)))


def _channel_sum_meta(op):
    x, axis = op.inputs[0], op.attrs["axis"]
    _channel_axis_ok(op, x, axis)
    return [TensorMeta((x.shape[axis],), op.attrs["dtype"])]


def _channel_sums_sbp(op, n_vectors_in=0, n_out=1, linear=True):
    nd, axis = len(op.inputs[0].shape), op.attrs["axis"]
    n_full = len(op.inputs) - n_vectors_in
    sigs = [_sig([S.S(i)] * n_full + [S.B] * n_vectors_in, [S.P] * n_out) for i in range(nd) if i != axis]
    sigs.append(_sig([S.S(axis)] * n_full + [S.S(0)] * n_vectors_in, [S.S(0)] * n_out))
    sigs.append(_sig([S.B] * len(op.inputs), [S.B] * n_out))
    if linear:
        sigs.append(_sig([S.P] + [S.B] * (len(op.inputs) - 1), [S.P] * n_out))
    return sigs


register(OpDef("channel_sum", infer=_channel_sum_meta, kernel=norm_k.channel_sum,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"], "dtype": op.attrs["dtype"].np},
               sbp=lambda op: _channel_sums_sbp(op)))


def _centered_meta(op):
    x, mean = op.inputs
    axis = op.attrs["axis"]
    _channel_axis_ok(op, x, axis)
    if tuple(mean.shape) != (x.shape[axis],):
        raise ValueError("centered_square_sum '%s': mean of shape %s for %d channels" % (op.name, mean.shape,
                                                                                        x.shape[axis]))
    return [TensorMeta(mean.shape, mean.dtype)]


register(OpDef("centered_square_sum", infer=_centered_meta, kernel=norm_k.centered_square_sum,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"]},
               sbp=lambda op: _channel_sums_sbp(op, n_vectors_in=1, linear=False)))


def _bs_attrs(op):
    return {k: op.attrs[k] for k in ("axis", "epsilon", "center", "scale", "count")}


def _bs_grad(op, dys):
    if dys[0] is None:
        return [None] * len(op.inputs)
    x, mean, variance = op.inputs[:3]
    a = op.attrs
    s_dy, s_dyx = apply("normalization_batch_stats_grad_sums", [dys[0], x, mean, variance],
                        {"axis": a["axis"], "epsilon": a["epsilon"]})
    gamma = [op.inputs[3]] if a["scale"] else []
    dx = apply("normalization_batch_stats_grad", [dys[0], x, mean, variance] + gamma + [s_dy, s_dyx],
               {"axis": a["axis"], "epsilon": a["epsilon"], "count": a["count"]})
    # no gradient to mean and variance: the total derivative through them is in dx
    return [dx, None, None] + ([s_dyx] if a["scale"] else []) + ([s_dy] if a["center"] else [])


register(OpDef("normalization_batch_stats", infer=_norm_meta, kernel=norm_k.normalization_batch_stats,
               kernel_attrs=_bs_attrs, sbp=_norm_sbp, grad=_bs_grad, recomputable=False))


def _bs_sums_meta(op):
    dy, x, mean = op.inputs[:3]
    return [TensorMeta(mean.shape, mean.dtype)] * 2


register(OpDef("normalization_batch_stats_grad_sums", infer=_bs_sums_meta,
               kernel=norm_k.normalization_batch_stats_grad_sums,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"], "epsilon": op.attrs["epsilon"]},
               sbp=lambda op: _channel_sums_sbp(op, n_vectors_in=2, n_out=2), num_outputs=2))


def _bs_dx_sbp(op):
    nd, axis = len(op.inputs[1].shape), op.attrs["axis"]
    k = len(op.inputs) - 2
    sigs = [_sig([S.S(i), S.S(i)] + [S.B] * k, [S.S(i)]) for i in range(nd) if i != axis]
    sigs.append(_sig([S.S(axis), S.S(axis)] + [S.S(0)] * k, [S.S(axis)]))
    return sigs + [_sig([S.B] * (k + 2), [S.B])]


register(OpDef("normalization_batch_stats_grad",
               infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype, op.inputs[1].is_dynamic)],
               kernel=norm_k.normalization_batch_stats_grad,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"], "epsilon": op.attrs["epsilon"],
                                        "count": op.attrs["count"]},
               sbp=_bs_dx_sbp))
