"""The nn ops family's losses: smooth_l1_loss, sparse_cross_entropy (its class-split form is OneFlow's
sparse_cross_entropy_ms), combined_margin_loss, and reduce_max_chunks, the per-chunk maxima the model-parallel
softmax cross entropy takes across a class split.

Ops over classes split across devices (S of the class axis, labels broadcast) learn the first class their device
holds from `local_attrs` (`lower`): a label another device holds contributes nothing there, so the per-device
results are partial sums of the value (OneFlow's kernels take the same offset from their SBP, v0.4.0
user/kernels/sparse_cross_entropy_kernel.cpp, combined_margin_loss_kernel.cpp). Kernels: `kernels/loss.py`.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import loss as loss_k
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _class_lower(op, dev, input_index=0):
    """The first class device `dev` holds where input `input_index` is split along its class (last) axis."""
    shape = op.inputs[input_index].shape  # (its piece's first class; on a mesh, nested along the mesh axes)
    return {"lower": S.piece_range(shape, dev.sbp_in[input_index], dev.index, dev.parallel_num, len(shape) - 1)[0]}


def _check_labels(op, x, labels, what):
    if labels.dtype.np.kind not in "iu":
        raise TypeError("%s '%s': labels must be integers, got %s" % (what, op.name, labels.dtype.name))
    if tuple(labels.shape) != tuple(x.shape[:-1]):
        raise ValueError("%s '%s': labels of shape %s do not fit input of shape %s (its shape without the class "
                         "axis)" % (what, op.name, tuple(labels.shape), tuple(x.shape)))


# --- smooth_l1_loss ------------------------------------------------------------------------------------------------
def _smooth_l1_meta(op):
    p, lab = op.inputs[-2:]
    if tuple(p.shape) != tuple(lab.shape) or p.dtype is not lab.dtype or not p.dtype.is_floating:
        raise ValueError("%s '%s': prediction %s %s and label %s %s must have one floating dtype and shape" % (
            op.type, op.name, tuple(p.shape), p.dtype.name, tuple(lab.shape), lab.dtype.name))
    return [TensorMeta(p.shape, p.dtype, p.is_dynamic or lab.is_dynamic)]


def _elementwise_sbp(op, linear_first=False):
    n, nd = len(op.inputs), len(op.inputs[-1].shape)
    sigs = [_sig([S.S(i)] * n, [S.S(i)]) for i in range(nd)] + [_sig([S.B] * n, [S.B])]
    if linear_first:
        sigs.append(_sig([S.P] + [S.B] * (n - 1), [S.P]))
    return sigs


def _beta(op):
    return {"beta": op.attrs["beta"]}


register(OpDef("smooth_l1_loss", infer=_smooth_l1_meta, kernel=loss_k.smooth_l1_loss, kernel_attrs=_beta,
               sbp=_elementwise_sbp,
               grad=lambda op, dys: [apply("smooth_l1_loss_grad", [dys[0], op.inputs[0], op.inputs[1]], _beta(op)),
                                     apply("negative", [apply("smooth_l1_loss_grad",
                                                              [dys[0], op.inputs[0], op.inputs[1]], _beta(op))])]))
register(OpDef("smooth_l1_loss_grad", infer=_smooth_l1_meta, kernel=loss_k.smooth_l1_loss_grad, kernel_attrs=_beta,
               sbp=lambda op: _elementwise_sbp(op, True)))


# --- sparse_cross_entropy (and its class-split form) ---------------------------------------------------------------
def _sce_meta(op):
    pred, labels = op.inputs[:2]
    _check_labels(op, pred, labels, op.type)
    if op.attrs["depth"] != pred.shape[-1]:
        raise ValueError("%s '%s': depth %d differs from the %d classes of the prediction" % (
            op.type, op.name, op.attrs["depth"], pred.shape[-1]))
    return [TensorMeta(labels.shape, pred.dtype, pred.is_dynamic or labels.is_dynamic)]


def _sce_sbp(op):
    """Rows split together; the classes split with the labels broadcast give partial sums (the _ms case)."""
    nd = len(op.inputs[0].shape)
    sigs = [_sig([S.S(i), S.S(i)], [S.S(i)]) for i in range(nd - 1)]
    sigs.append(_sig([S.S(nd - 1), S.B], [S.P]))
    return sigs + [_sig([S.B, S.B], [S.B])]


def _sce_grad_sbp(op):
    """[prediction, labels, dy] -> d prediction."""
    nd = len(op.inputs[0].shape)
    sigs = [_sig([S.S(i), S.S(i), S.S(i)], [S.S(i)]) for i in range(nd - 1)]
    sigs.append(_sig([S.S(nd - 1), S.B, S.B], [S.S(nd - 1)]))
    return sigs + [_sig([S.B, S.B, S.B], [S.B]), _sig([S.B, S.B, S.P], [S.P])]


def _depth(op):
    return {"depth": op.attrs["depth"]}


register(OpDef("sparse_cross_entropy", infer=_sce_meta, kernel=loss_k.sparse_cross_entropy, kernel_attrs=_depth,
               local_attrs=_class_lower, sbp=_sce_sbp,
               grad=lambda op, dys: [apply("sparse_cross_entropy_grad", [op.inputs[0], op.inputs[1], dys[0]],
                                           _depth(op)), None]))
register(OpDef("sparse_cross_entropy_grad", infer=lambda op: [TensorMeta(op.inputs[0].shape, op.inputs[0].dtype,
                                                                         op.inputs[0].is_dynamic)],
               kernel=loss_k.sparse_cross_entropy_grad, kernel_attrs=_depth, local_attrs=_class_lower,
               sbp=_sce_grad_sbp))


# --- combined_margin_loss ------------------------------------------------------------------------------------------
def _cml_meta(op):
    x, labels = op.inputs
    if len(x.shape) != 2:
        raise ValueError("combined_margin_loss '%s': x must be (instances, classes), got %s" % (op.name,
                                                                                             tuple(x.shape)))
    _check_labels(op, x, labels, "combined_margin_loss")
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic), TensorMeta(labels.shape, x.dtype, labels.is_dynamic)]


def _cml_attrs(op):
    return {k: op.attrs[k] for k in ("m1", "m2", "m3", "depth")}


def _cml_sbp(op):
    """OneFlow's combined_margin_loss_op.cpp: rows split with the labels, or classes split with the labels
    broadcast (theta, held by the device of each row's class, a partial sum)."""
    return [_sig([S.S(0), S.S(0)], [S.S(0), S.S(0)]), _sig([S.S(1), S.B], [S.S(1), S.P]),
            _sig([S.B, S.B], [S.B, S.B])]


def _cml_grad_sbp(op):
    """[dy, labels, theta] -> dx."""
    return [_sig([S.S(0), S.S(0), S.S(0)], [S.S(0)]), _sig([S.S(1), S.B, S.B], [S.S(1)]),
            _sig([S.B, S.B, S.B], [S.B])]


def _cml_grad(op, dys):
    if dys[0] is None:
        return [None, None]
    attrs = {k: op.attrs[k] for k in ("m1", "m2", "depth")}
    return [apply("combined_margin_loss_grad", [dys[0], op.inputs[1], op.outputs[1]], attrs), None]


register(OpDef("combined_margin_loss", infer=_cml_meta, kernel=loss_k.combined_margin_loss, kernel_attrs=_cml_attrs,
               local_attrs=_class_lower, sbp=_cml_sbp, grad=_cml_grad, num_outputs=2))
register(OpDef("combined_margin_loss_grad", infer=lambda op: [TensorMeta(op.inputs[0].shape, op.inputs[0].dtype,
                                                                         op.inputs[0].is_dynamic)],
               kernel=loss_k.combined_margin_loss_grad,
               kernel_attrs=lambda op: {k: op.attrs[k] for k in ("m1", "m2", "depth")}, local_attrs=_class_lower,
               sbp=_cml_grad_sbp))


# --- reduce_max_chunks ---------------------------------------------------------------------------------------------
def _chunks_meta(op):
    x = op.inputs[0]
    k = op.attrs["chunks"]
    if not (1 <= k <= x.shape[-1]):
        raise ValueError("reduce_max_chunks '%s': %d chunks of %d classes" % (op.name, k, x.shape[-1]))
    return [TensorMeta(tuple(x.shape[:-1]) + (k,), x.dtype, x.is_dynamic)]


def _chunks_local(op, dev):
    """The chunks of the last axis this device's piece holds: its own one where the classes are split across as
    many devices as chunks, else all of them (balanced ranges, the rule of S)."""
    x = op.inputs[0]
    sbp, nd = dev.sbp_in[0], len(x.shape)
    if S.splits_axis(sbp, nd - 1) and dev.parallel_num > 1:
        a, b = S.piece_range(x.shape, sbp, dev.index, dev.parallel_num, nd - 1)
        return {"ranges": ((0, b - a),)}
    return {"ranges": tuple(S.balanced_ranges(x.shape[-1], op.attrs["chunks"]))}


def _chunks_sbp(op):
    nd = len(op.inputs[0].shape)
    sigs = [_sig([S.S(i)], [S.S(i)]) for i in range(nd - 1)]
    if op.placement is not None and op.placement.parallel_num == op.attrs["chunks"]:
        sigs.append(_sig([S.S(nd - 1)], [S.S(nd - 1)]))  # each device the maximum of its own classes
    return sigs + [_sig([S.B], [S.B])]


# no gradient: the softmax it shifts does not depend on the shift
register(OpDef("reduce_max_chunks", infer=_chunks_meta, kernel=loss_k.reduce_max_chunks, local_attrs=_chunks_local,
               sbp=_chunks_sbp))
