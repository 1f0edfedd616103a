"""The legacy `flow.ctc_loss` (OneFlow v0.4.0 oneflow/python/ops/loss_ops.py): the `ctc_loss` op (ops/ctc_ops.py)
and OneFlow's composition after it, op names included: with zero_infinity, infinite losses replaced by 0
(`_constant`, `_equal`, `_zeros`, `_where`); "mean" divides each loss by its target length clipped at 1 and
averages over the batch (`_clip_by_value`, `_cast`, `_xdivy`, `_reduce_mean`); "sum" adds the losses
(`_reduce_sum`); "none" returns them."""
from oneflow_compat import math as _math
from oneflow_compat._api import array_api, ops_api
from oneflow_compat.ir import builder
from oneflow_compat.ops.registry import apply

_REDUCTIONS = ("none", "mean", "sum")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False,
             name=None):
    """CTC loss of log_probs (T, N, C) against targets (N, S) padded, with per-sequence lengths (N,)."""
    if reduction not in _REDUCTIONS:
        # OneFlow v0.4.0 returned the unreduced loss for any other string; a typo should not pass silently
        raise ValueError("flow.ctc_loss: reduction must be one of %s, got %r" % (list(_REDUCTIONS), reduction))
    if len(targets.shape) != 2:
        raise ValueError("flow.ctc_loss: targets must be (batch_size, max_target_length), got shape %s"
                         % (tuple(targets.shape),))
    if name is None:
        name = builder.current("flow.ctc_loss").job.unique_name("CTCLoss_")
    loss, _ = apply("ctc_loss", [log_probs, targets, input_lengths, target_lengths],
                    {"blank": int(blank), "zero_infinity": bool(zero_infinity),
                     "max_target_length": int(targets.shape[1])}, name=name)
    if zero_infinity:
        inf = ops_api.constant(float("inf"), dtype=loss.dtype, shape=loss.shape, name=name + "_constant")
        cond = _math.equal(loss, inf, name=name + "_equal")
        loss = array_api.where(cond, ops_api.zeros(dtype=loss.dtype, shape=loss.shape, name=name + "_zeros"), loss,
                               name=name + "_where")
    if reduction == "mean":
        lengths = ops_api.cast(array_api.clip_by_value(target_lengths, min_value=1, name=name + "_clip_by_value"),
                               dtype=log_probs.dtype, name=name + "_cast")
        return _math.reduce_mean(_math.xdivy(loss, lengths, name=name + "_xdivy"), name=name + "_reduce_mean")
    if reduction == "sum":
        return _math.reduce_sum(loss, name=name + "_reduce_sum")
    return loss
