"""Cross-entropy losses over the last axis, with their gradients.

The sparse softmax loss returns the probabilities too (its op's second output), so its gradient kernel need not
recompute them. Log-probabilities go through the legacy "safe log", log(max(p, 1e-20)), so a vanishing
probability gives a large finite loss.
"""
from . import activation

_SAFE_LOG_FLOOR = 1e-20


def _safe_log(xp, p):
    return xp.log(xp.maximum(p, p.dtype.type(_SAFE_LOG_FLOOR)))


def _check_labels(xp, labels, depth):
    if labels.size == 0:
        return
    low, high = int(xp.min(labels)), int(xp.max(labels))
    if low < 0 or high >= depth:
        raise ValueError("sparse_softmax_cross_entropy: label %d is out of range [0, %d)"
                         % (low if low < 0 else high, depth))


def sparse_softmax_cross_entropy(xp, logits, labels):
    """-> (loss, prob). loss[i] = -log(max(softmax(logits)[i, labels[i]], 1e-20)).

    labels: integers of shape logits.shape[:-1], each in [0, depth) with depth = logits.shape[-1]; otherwise
    ValueError naming the label.
    """
    _check_labels(xp, labels, logits.shape[-1])
    prob = activation.softmax(xp, logits, axis=-1)
    picked = xp.take_along_axis(prob, labels[..., None].astype(xp.int64), axis=-1)[..., 0]
    loss = -_safe_log(xp, picked)
    return loss.astype(logits.dtype, copy=False), prob


def sparse_softmax_cross_entropy_grad(xp, dloss, prob, labels):
    """d logits = (prob - onehot(labels)) * dloss[..., None]; the one-hot is subtracted at the labels only."""
    grad = prob.copy()
    index = labels[..., None].astype(xp.int64)
    xp.put_along_axis(grad, index, xp.take_along_axis(grad, index, axis=-1) - 1, axis=-1)
    grad *= dloss[..., None]
    return grad


def softmax_cross_entropy(xp, logits, labels):
    """Loss with dense labels (a distribution per row): -sum(labels * log(max(softmax(logits), 1e-20)), axis=-1)."""
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError("softmax cross entropy: labels shape %s differs from logits shape %s"
                         % (tuple(labels.shape), tuple(logits.shape)))
    prob = activation.softmax(xp, logits, axis=-1)
    loss = -xp.sum(labels * _safe_log(xp, prob), axis=-1)
    return loss.astype(logits.dtype, copy=False)


def softmax_cross_entropy_grad(xp, dloss, prob, labels):
    """(prob - labels) * dloss[..., None], as the legacy kernel: this is the exact
    gradient when each row of labels sums to 1 (the documented use)."""
    return ((prob - labels) * dloss[..., None]).astype(prob.dtype, copy=False)


def sigmoid_cross_entropy(xp, logits, labels):
    """Element-wise -(z log s(x) + (1 - z) log(1 - s(x))), computed in the overflow-free
    form max(x, 0) - x z + log(1 + exp(-|x|))."""
    loss = xp.maximum(logits, 0) - logits * labels + xp.log1p(xp.exp(-xp.abs(logits)))
    return loss.astype(logits.dtype, copy=False)


def sigmoid_cross_entropy_grad(xp, dloss, logits, labels):
    return ((activation.sigmoid(xp, logits) - labels) * dloss).astype(logits.dtype, copy=False)
