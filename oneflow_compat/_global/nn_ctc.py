"""OneFlow 0.9's CTC for tensors: `flow.nn.CTCLoss` (python/oneflow/nn/modules/loss.py), `flow._C.ctc_loss` (its
functor, oneflow/core/functional/impl/nn_functor.cpp CtcLossFunctor) and `flow.nn.functional.ctc_greedy_decoder`
(framework/docstr/ctc_decode.py), on the registry's `ctc_loss` / `ctc_greedy_decoder` ops (ops/ctc_ops.py), eager,
in nn.Graph and on global tensors (batch splits stay split; 1-D concatenated targets run broadcast).

The functor's composition: with zero_infinity, infinite losses become 0; "mean" divides each loss by its target
length clamped at 1 and averages over the batch; "sum" adds them. Targets other than int32 are cast to int64.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation
from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op_list
from oneflow_compat._global.modules import Module
from oneflow_compat._global.tensor import Tensor

_REDUCTIONS = ("none", "sum", "mean")


def _lengths(value, what):
    """Tuples and lists of lengths (CTCLoss accepts them) as int64 tensors."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (tuple, list)):
        return creation.local_tensor(list(value), dtype=dtypes.int64)
    raise TypeError("ctc_loss: %s must be a tensor or a tuple of ints, got %s" % (what, type(value).__name__))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, max_target_length, blank, zero_infinity,
             reduction):
    """`flow._C.ctc_loss`: max_target_length is the width of the alignment table (targets.shape[1] for padded
    targets, the longest target for 1-D ones)."""
    if reduction not in _REDUCTIONS:
        raise RuntimeError("Reduction should be none, sum or mean.")
    F._check(log_probs, "ctc_loss")
    input_lengths = _lengths(input_lengths, "input_lengths")
    target_lengths = _lengths(target_lengths, "target_lengths")
    if targets.dtype is not dtypes.int32:
        targets = F.cast(targets, dtypes.int64)
    loss, _ = apply_op_list("ctc_loss", [log_probs, targets, input_lengths, target_lengths],
                            {"blank": int(blank), "zero_infinity": bool(zero_infinity),
                             "max_target_length": int(max_target_length)})
    if zero_infinity:
        loss = F.where(F.eq(loss, float("inf")), 0.0, loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "mean":
        lengths = F.cast(F.clamp(target_lengths, min=1), loss.dtype)
        return F.mean(F.div(loss, lengths))
    return loss


class CTCLoss(Module):
    """The Connectionist Temporal Classification loss, OneFlow 0.9's module (blank=0, reduction="mean",
    zero_infinity=False)."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError("{} is not a valid value for reduction".format(reduction))
        self.reduction = reduction
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        target_lengths = _lengths(target_lengths, "target_lengths")
        if targets.ndim == 1:
            # OneFlow reads the longest target's length; inside nn.Graph there is no value to read, and the
            # concatenation's length bounds it (same losses, a wider alignment table)
            max_target_length = targets.shape[0] if target_lengths.is_lazy else int(target_lengths.max().item())
        elif targets.ndim == 2:
            max_target_length = targets.shape[1]
        else:
            raise ValueError("CTCLoss: targets must be (N, S) padded or 1-D concatenated, got shape %s"
                             % (tuple(targets.shape),))
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, max_target_length, self.blank,
                        self.zero_infinity, self.reduction)


def ctc_greedy_decoder(log_probs, input_lengths, merge_repeated=True):
    """(decoded (N, T) with input_lengths' dtype, neg_sum_logits (N, 1)): best path, the last class the blank."""
    F._check(log_probs, "ctc_greedy_decoder")
    decoded, neg_sum_logits = apply_op_list("ctc_greedy_decoder", [log_probs, input_lengths],
                                            {"merge_repeated": bool(merge_repeated)}, requires_grad=False)
    return decoded, neg_sum_logits


