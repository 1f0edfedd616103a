"""OneFlow 0.9's losses for tensors: the `flow.nn.functional` forms (`cross_entropy` and `nll_loss` with class
weights, `ignore_index` and, for the first, label smoothing; `binary_cross_entropy`,
`binary_cross_entropy_with_logits`, `smooth_l1_loss`, `kl_div`, `margin_ranking_loss`, `triplet_margin_loss`) and
the modules (`BCELoss`, `BCEWithLogitsLoss`, `L1Loss`,
`SmoothL1Loss`, `KLDivLoss`, `NLLLoss`, `MarginRankingLoss`, `TripletMarginLoss`, `CombinedMarginLoss`), composed
from the registry's ops (smooth_l1_loss and combined_margin_loss are ops of their own), so they run eagerly, in
`nn.Graph` and on global tensors alike.

Formulas are OneFlow 0.9's (which are PyTorch's: log terms of BCE clamped at -100, KL divergence 0 where the target
is 0, `batchmean`). Like OneFlow 0.9's, these modules print without arguments (`BCELoss()`).
"""

import numpy as np

from oneflow_compat._global import functional as F
from oneflow_compat._global import loss_op_checks
from oneflow_compat._global.dispatch import apply_op, apply_op_list
from oneflow_compat._global.modules import Module

_REDUCTIONS = ("none", "mean", "sum")


ReductionError = F.ReductionError  # (OneFlow 0.9's RuntimeError; defined beside mse_loss, which raises it too)


def _reduce(loss, reduction, what):
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    if reduction == "none":
        return loss
    raise ReductionError(what, reduction)


def _check_same_shape(input, target, what):  # noqa: A002
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError("%s: Using a target size (%s) that is different to the input size (%s) is not supported"
                         % (what, tuple(target.shape), tuple(input.shape)))


# --- functional forms -------------------------------------------------------------------------------------------
class _DefaultIgnoreIndex(int):
    """-100, cross_entropy's default ignore_index, told apart from one the caller passed (see `cross_entropy`)."""

    def __repr__(self):
        return "-100"


IGNORE_INDEX = _DefaultIgnoreIndex(-100)


def cross_entropy(input, target, weight=None, ignore_index=IGNORE_INDEX, reduction="mean",  # noqa: A002
                  label_smoothing=0.0):
    """OneFlow 0.9's cross entropy of logits `input` (N, C, d...) with class indices `target` (any shape holding
    one label per row N·d1·…, as OneFlow flattens it: (N,), (N, 1), (N, d...)) or with probabilities shaped like
    `input`. Class `weight`s (C,), `label_smoothing` in (0, 1] and `ignore_index` (samples with that label count
    neither in the loss nor in the mean's divisor) as OneFlow computes them: the mean divides by the summed weights
    of the samples kept.

    Without weights and smoothing, one fused op (the loss and its gradient in one kernel in nn.Graph) computes the
    loss; the mean then divides by the number of labels, which needs no communication. That equals OneFlow's mean
    unless a label is `ignore_index`: when ignore_index names a class, or was passed explicitly, or the labels are
    local host arrays that hold it, the loss is computed as OneFlow composes it, and on data-parallel ranks its mean
    sums the kept weights across them (one more all-reduce). A label equal to the default -100 on global tensors of
    several ranks or in nn.Graph, where the labels are not at hand, is an out-of-range label."""
    if reduction not in _REDUCTIONS:
        raise ReductionError("cross_entropy", reduction)
    x = F._floating(F._check(input, "cross_entropy"))
    t = F._check(target, "cross_entropy")
    if x.ndim < 2:
        raise ValueError("cross_entropy(): input of shape %s has no class axis (expected (N, C, ...))"
                         % (tuple(x.shape),))
    classes = x.shape[1]
    rows = F.permute(x, [0] + list(range(2, x.ndim)) + [1]) if x.ndim > 2 else x  # (N, d..., C)
    if tuple(t.shape) == tuple(x.shape) and t.dtype.is_floating:
        if ignore_index >= 0:
            raise RuntimeError("cross_entropy(): ignore_index is not supported for floating point target")
        _check_smoothing(label_smoothing)
        probs = F.permute(t, [0] + list(range(2, t.ndim)) + [1]) if t.ndim > 2 else t
        # composed as OneFlow 0.9's CrossEntropyProbFunctor (nn_functor.cpp@v0.9.0): -sum(log_softmax(x) * t),
        # whose gradient softmax(x) * sum(t) - t holds for targets that do not sum to 1 (the fused
        # softmax_cross_entropy op's gradient, softmax(x) - t, is the legacy op's and assumes they do)
        if label_smoothing:
            probs = F.add(F.mul(probs, 1.0 - label_smoothing), label_smoothing / classes)
        terms = F.mul(F.log_softmax(rows, dim=-1), F.cast(probs, rows.dtype))
        if weight is not None:
            terms = F.mul(terms, weight)
        loss = F.neg(F.sum(terms, -1))
        return _reduce(loss, reduction, "cross_entropy")
    if t.dtype.is_floating:
        raise ValueError("cross_entropy(): target of shape %s does not fit input of shape %s (class indices are "
                         "integers; probabilities are floating and shaped like the input)"
                         % (tuple(t.shape), tuple(x.shape)))
    labels_shape = tuple(rows.shape[:-1])
    if t.numel() != int(np.prod(labels_shape, dtype=np.int64)):
        raise ValueError("cross_entropy(): target of shape %s does not fit input of shape %s"
                         % (tuple(target.shape), tuple(input.shape)))
    labels = t if tuple(t.shape) == labels_shape else F.reshape(t, labels_shape)
    _check_smoothing(label_smoothing)
    exact = weight is not None or label_smoothing or 0 <= ignore_index < classes or \
        ignore_index is not IGNORE_INDEX or _holds(labels, ignore_index)
    if not exact:  # every label is a class (the fused kernel checks): OneFlow's mean is over all of them
        try:
            loss = apply_op_list("sparse_softmax_cross_entropy", [rows, labels])[0]
        except ValueError as e:
            if "label %d is out of range" % ignore_index in str(e) and hasattr(e, "add_note"):
                e.add_note("cross_entropy: labels equal to the default ignore_index (-100) are looked for in local "
                           "host labels only; on global tensors of several ranks and in nn.Graph pass "
                           "ignore_index=-100 explicitly to ignore them (the mean then sums the kept labels across "
                           "the ranks)")
            raise
        return _reduce(F.reshape(loss, tuple(t.shape)) if reduction == "none" else loss, reduction, "cross_entropy")
    flat = F.reshape(rows, (-1, classes))
    log_p = F.log_softmax(flat, dim=1)
    nll, kept, w = _nll_rows(log_p, F.reshape(labels, (-1,)), weight, ignore_index)
    loss = nll
    if label_smoothing:  # OneFlow's: (1 - s) nll + s / C · (-Σ_c w_c log p_c), 0 for ignored samples
        spread = log_p if weight is None else F.mul(log_p, F.reshape(weight, (1, -1)))
        smooth = F.mul(F.neg(F.sum(spread, 1)), F.cast(kept, log_p.dtype))
        loss = F.add(F.mul(nll, 1.0 - label_smoothing), F.mul(smooth, label_smoothing / classes))
    if reduction == "none":
        return F.reshape(loss, tuple(t.shape))
    if reduction == "sum":
        return F.sum(loss)
    return F.div(F.sum(loss), F.sum(w))


def _check_smoothing(label_smoothing):
    if label_smoothing and not 0.0 < label_smoothing <= 1.0:
        raise RuntimeError("label_smoothing must be between 0.0 and 1.0. Got: %s" % (label_smoothing,))


def _holds(labels, value):
    """Whether local host labels (one process's array, not traced) hold `value`: False where that is not known."""
    if labels.is_lazy or (labels.is_global and len(labels.placement.rank_list) > 1):
        return False
    pieces = labels._value.pieces
    return bool(pieces) and isinstance(pieces[0], np.ndarray) and bool((pieces[0] == value).any())


def _nll_rows(log_p, labels, weight, ignore_index):
    """(-w[t] log_p[t] per row, the rows kept (label != ignore_index), their weights w[t] or 1; 0 where ignored) for
    log-probabilities (M, C) and labels (M,)."""
    kept = F.ne(labels, ignore_index)
    safe = F.where(kept, labels, F.zeros_like(labels))
    picked = F.reshape(F.gather(log_p, 1, F.unsqueeze(safe, 1)), tuple(labels.shape))
    w = F.cast(kept, log_p.dtype)
    if weight is not None:
        w = F.mul(w, F.gather(weight, 0, safe))
    return F.neg(F.mul(picked, w)), kept, w


def binary_cross_entropy(input, target, weight=None, reduction="mean"):  # noqa: A002
    """-w (t log x + (1 - t) log(1 - x)), each log clamped at -100."""
    _check_same_shape(input, target, "binary_cross_entropy")
    log_x = F.clamp(F.log(input), min=-100.0)
    log_1mx = F.clamp(F.log(F.sub(1.0, input)), min=-100.0)
    loss = F.neg(F.add(F.mul(target, log_x), F.mul(F.sub(1.0, target), log_1mx)))
    if weight is not None:
        loss = F.mul(loss, weight)
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):  # noqa: A002
    """(1 - t) x + (1 + (pw - 1) t) (log(1 + exp(-|x|)) + max(-x, 0)), weighted."""
    _check_same_shape(input, target, "binary_cross_entropy_with_logits")
    softplus_neg = F.add(F.log1p(F.exp(F.neg(F.abs(input)))), F.clamp(F.neg(input), min=0.0))
    if pos_weight is not None:
        log_weight = F.add(F.mul(F.sub(pos_weight, 1.0), target), 1.0)
        loss = F.add(F.mul(F.sub(1.0, target), input), F.mul(log_weight, softplus_neg))
    else:
        loss = F.add(F.mul(F.sub(1.0, target), input), softplus_neg)
    if weight is not None:
        loss = F.mul(loss, weight)
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):  # noqa: A002
    # OneFlow 0.9's functional.smooth_l1_loss is _C.smooth_l1_loss: the op's checks (no broadcast, no promotion)
    loss_op_checks.smooth_l1_loss(F._check(input, "smooth_l1_loss"), F._check(target, "smooth_l1_loss"), beta)
    return _reduce(apply_op("smooth_l1_loss", [input, target], {"beta": float(beta)}), reduction, "smooth_l1_loss")


def kl_div(input, target, reduction="mean", log_target=False):  # noqa: A002
    """target (log target − input), 0 where the target is not positive (OneFlow 0.9's kl_div kernel: a negative
    target gives 0 and no gradient, not −target·input); `batchmean` divides the sum by the batch size."""
    if log_target:
        loss = F.mul(F.exp(target), F.sub(target, input))
    else:
        positive = F.gt(target, 0.0)
        safe = F.where(positive, target, F.ones_like(target))  # (no log of a target that is not positive)
        loss = F.where(positive, F.mul(target, F.sub(F.log(safe), input)), F.zeros_like(target))
    if reduction == "batchmean":
        return F.div(F.sum(loss), float(input.shape[0]) if input.ndim else 1.0)
    return _reduce(loss, reduction, "kl_div")


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """max(0, -target (input1 - input2) + margin)."""
    loss = F.clamp(F.add(F.mul(F.neg(target), F.sub(input1, input2)), float(margin)), min=0.0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def _pairwise_distance(a, b, p, eps):
    d = F.abs(F.add(F.sub(a, b), float(eps)))
    if p == 2.0:
        return F.sqrt(F.sum(F.square(d), -1))
    return F.pow(F.sum(F.pow(d, float(p)), -1), 1.0 / p)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,  # noqa: A002
                        reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the p-norm distance (eps added to the difference); `swap` takes the
    smaller of d(a, n) and d(p, n)."""
    d_pos = _pairwise_distance(anchor, positive, p, eps)
    d_neg = _pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = F.minimum(d_neg, _pairwise_distance(positive, negative, p, eps))
    loss = F.clamp(F.add(F.sub(d_pos, d_neg), float(margin)), min=0.0)
    return _reduce(loss, reduction, "triplet_margin_loss")


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):  # noqa: A002
    """-w[target] input[target] per sample (input (N, C, ...), target (N, ...)); samples whose target is
    `ignore_index` count neither in the loss nor in the weighted mean's divisor."""
    x, t = F._check(input, "nll_loss"), F._check(target, "nll_loss")
    if x.ndim < 2 or tuple(t.shape) != (x.shape[0],) + tuple(x.shape[2:]):
        raise ValueError("nll_loss: target of shape %s does not fit input of shape %s" % (tuple(t.shape),
                                                                                          tuple(x.shape)))
    if reduction not in _REDUCTIONS:
        raise ReductionError("nll_loss", reduction)
    rows = F.permute(x, [0] + list(range(2, x.ndim)) + [1]) if x.ndim > 2 else x
    loss, _, w = _nll_rows(F.reshape(rows, (-1, x.shape[1])), F.reshape(t, (-1,)), weight, ignore_index)
    if reduction == "mean":
        return F.div(F.sum(loss), F.sum(w))
    return _reduce(F.reshape(loss, tuple(t.shape)), reduction, "nll_loss")


def combined_margin_loss(x, label, m1=1.0, m2=0.0, m3=0.0):
    y, _ = apply_op("combined_margin_loss", [x, label], {"m1": float(m1), "m2": float(m2), "m3": float(m3),
                                                         "depth": int(x.shape[1])})
    return y


# --- modules ----------------------------------------------------------------------------------------------------
class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise AssertionError("reduction must be one of %s, got %r" % (_REDUCTIONS, reduction))
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):  # noqa: A002
        return binary_cross_entropy(input, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(weight, reduction)
        self.pos_weight = pos_weight

    def forward(self, input, target):  # noqa: A002
        return binary_cross_entropy_with_logits(input, target, self.weight, self.reduction, self.pos_weight)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):  # noqa: A002
        return nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return smooth_l1_loss(input, target, self.reduction, self.beta)


class KLDivLoss(_Loss):
    def __init__(self, reduction="mean", log_target=False):
        if reduction == "batchmean":
            super().__init__("sum")
            self.reduction = "batchmean"
        else:
            super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        return kl_div(input, target, self.reduction, self.log_target)


class MarginRankingLoss(_Loss):
    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class TripletMarginLoss(Module):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.margin, self.p, self.eps, self.swap, self.reduction = margin, p, eps, swap, reduction

    def forward(self, anchor, positive, negative):
        return triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                   self.reduction)


class CombinedMarginLoss(Module):
    def __init__(self, m1=1.0, m2=0.0, m3=0.0):
        super().__init__()
        self.m1, self.m2, self.m3 = m1, m2, m3

    def forward(self, x, label):
        return combined_margin_loss(x, label, self.m1, self.m2, self.m3)


