"""CTC: `ctc_loss` (outputs loss (N,) and alpha (N, T, 2 S + 1), the log forward variables its gradient reads),
`ctc_loss_grad`, and `ctc_greedy_decoder` (outputs decoded (N, T) and neg_sum_logits (N, 1)), OneFlow's user ops
(v0.4.0 oneflow/user/ops/ctc_loss_op.cpp; v0.9.0 adds the `max_target_length` attr, 1-D concatenated targets and
the decoder). Kernels: `kernels/ctc.py`.

Attrs: blank, zero_infinity (read by the gradient), max_target_length (S: alpha's width; the padded targets' second
axis, or the longest target where targets are 1-D); the decoder's merge_repeated.

SBP (OneFlow's): every sequence is computed on its own, so the batch splits: log_probs along axis 1 (T, N, C),
everything else along axis 0. Concatenated 1-D targets cannot be split by sequence without knowing every
device's lengths, so with them the op runs broadcast only (OneFlow declares the split regardless). The gradient
is linear in the loss's gradient, so a partial sum of it passes through.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import ctc as ctc_k
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _check_inputs(op, log_probs, targets, lengths):
    what = "%s '%s'" % (op.type, op.name)
    if len(log_probs.shape) != 3 or not log_probs.dtype.is_floating:
        raise ValueError("%s: log_probs must be a floating (T, N, C) tensor, got %s of shape %s"
                         % (what, log_probs.dtype.name, tuple(log_probs.shape)))
    n = log_probs.shape[1]
    for name, x in lengths:
        if x.dtype.np.kind not in "iu" or tuple(x.shape) != (n,):
            raise ValueError("%s: %s must be integers of shape (%d,) (the batch of log_probs), got %s of shape %s"
                             % (what, name, n, x.dtype.name, tuple(x.shape)))
    if targets is None:
        return n
    if targets.dtype.np.kind not in "iu" or len(targets.shape) not in (1, 2):
        raise ValueError("%s: targets must be integers, (N, S) padded or 1-D concatenated, got %s of shape %s"
                         % (what, targets.dtype.name, tuple(targets.shape)))
    s = int(op.attrs["max_target_length"])
    if len(targets.shape) == 2 and (targets.shape[0] != n or targets.shape[1] < s):
        raise ValueError("%s: targets of shape %s do not fit batch %d and max_target_length %d"
                         % (what, tuple(targets.shape), n, s))
    blank = int(op.attrs["blank"])
    if not 0 <= blank < log_probs.shape[2]:
        raise ValueError("%s: blank %d must lie in [0, %d) (the classes of log_probs)" % (what, blank,
                                                                                          log_probs.shape[2]))
    return n


def _loss_meta(op):
    lp, tg, il, tl = op.inputs[:4]
    n = _check_inputs(op, lp, tg, [("input_lengths", il), ("target_lengths", tl)])
    dyn = any(x.is_dynamic for x in op.inputs)
    width = 2 * int(op.attrs["max_target_length"]) + 1
    return [TensorMeta((n,), lp.dtype, dyn), TensorMeta((n, lp.shape[0], width), lp.dtype, dyn)]


def _loss_attrs(op):
    return {"blank": int(op.attrs["blank"]), "max_target_length": int(op.attrs["max_target_length"])}


def _grad_attrs(op):
    return dict(_loss_attrs(op), zero_infinity=bool(op.attrs["zero_infinity"]))


def _targets_split(op, index):
    return len(op.inputs[index].shape) == 2


def _loss_sbp(op):
    sigs = []
    if _targets_split(op, 1):
        sigs.append(_sig([S.S(1), S.S(0), S.S(0), S.S(0)], [S.S(0), S.S(0)]))
    sigs.append(_sig([S.B] * 4, [S.B, S.B]))
    return sigs


def _grad_sbp(op):
    sigs = []
    if _targets_split(op, 2):
        sigs.append(_sig([S.S(0), S.S(1)] + [S.S(0)] * 5, [S.S(1)]))
    sigs.append(_sig([S.B] * 7, [S.B]))
    sigs.append(_sig([S.P] + [S.B] * 6, [S.P]))
    return sigs


def _loss_grad(op, dys):
    if dys[0] is None:
        return [None] * 4
    g = apply("ctc_loss_grad", [dys[0]] + list(op.inputs[:4]) + list(op.outputs[:2]), dict(op.attrs))
    return [g, None, None, None]


register(OpDef("ctc_loss", infer=_loss_meta, kernel=ctc_k.ctc_loss, kernel_attrs=_loss_attrs, sbp=_loss_sbp,
               num_outputs=2, grad=_loss_grad))


def _grad_meta(op):
    dy, lp, tg, il, tl = op.inputs[:5]
    n = _check_inputs(op, lp, tg, [("input_lengths", il), ("target_lengths", tl)])
    if tuple(dy.shape) != (n,):
        raise ValueError("%s '%s': the loss gradient of shape %s must have shape (%d,)" % (op.type, op.name,
                                                                                          tuple(dy.shape), n))
    return [TensorMeta(lp.shape, lp.dtype, any(x.is_dynamic for x in op.inputs))]


register(OpDef("ctc_loss_grad", infer=_grad_meta, kernel=ctc_k.ctc_loss_grad, kernel_attrs=_grad_attrs,
               sbp=_grad_sbp))


def _decoder_meta(op):
    lp, il = op.inputs
    if il.dtype.np.kind not in "iu":
        raise ValueError("%s '%s': input_lengths must be integers, got %s" % (op.type, op.name, il.dtype.name))
    n = _check_inputs(op, lp, None, [("input_lengths", il)])
    dyn = lp.is_dynamic or il.is_dynamic
    # decoded takes input_lengths' dtype (OneFlow's CtcGreedyDecoderOp::InferDataType)
    return [TensorMeta((n, lp.shape[0]), il.dtype, dyn), TensorMeta((n, 1), lp.dtype, dyn)]


register(OpDef("ctc_greedy_decoder", infer=_decoder_meta, kernel=ctc_k.ctc_greedy_decoder,
               kernel_attrs=lambda op: {"merge_repeated": bool(op.attrs.get("merge_repeated", True))},
               num_outputs=2,
               sbp=lambda op: [_sig([S.S(1), S.S(0)], [S.S(0), S.S(0)]), _sig([S.B, S.B], [S.B, S.B])]))
