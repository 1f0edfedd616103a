"""`flow.nn.CrossEntropyLoss` and `flow.nn.MSELoss`: modules over the functional losses (mean by default)."""
from oneflow_compat._global import functional
from oneflow_compat._global.modules import Module
from oneflow_compat._global.nn_losses import IGNORE_INDEX, cross_entropy

_REDUCTIONS = ("none", "mean", "sum")


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError("%s: reduction must be one of %s, got %r" % (type(self).__name__, _REDUCTIONS,
                                                                         reduction))
        self.reduction = reduction

    def extra_repr(self):
        return "reduction=%s" % self.reduction if self.reduction != "mean" else ""


class CrossEntropyLoss(_Loss):
    """Softmax cross entropy of logits (N, C, …) against class indices (N, …) (or probabilities shaped like the
    logits), averaged over the samples by default (`nn_losses.cross_entropy`); `weight` is a buffer, as
    OneFlow's: it moves with the module."""

    def __init__(self, weight=None, ignore_index=IGNORE_INDEX, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):  # noqa: A002
        return cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                             reduction=self.reduction, label_smoothing=self.label_smoothing)


class MSELoss(_Loss):
    """(input − target)², averaged (`reduction="mean"`), summed ("sum") or kept per element ("none")."""

    def forward(self, input, target):  # noqa: A002
        return functional.mse_loss(input, target, reduction=self.reduction)
