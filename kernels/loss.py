"""Cross-entropy losses over the last axis, with their gradients.

The softmax losses return the probabilities too, so the gradient kernels need not
recompute them. Log-probabilities go through the legacy "safe log",
log(max(p, 1e-20)), so a vanishing probability gives a large finite loss.
"""
from . import activation

_SAFE_LOG_FLOOR = 1e-20


def _safe_log(xp, p):
    return xp.log(xp.maximum(p, _SAFE_LOG_FLOOR))


def _squeeze_labels(logits, labels):
    leading = tuple(logits.shape[:-1])
    if tuple(labels.shape) == leading:
        return labels
    if tuple(labels.shape) == leading + (1,):
        return labels.reshape(leading)
    raise ValueError("sparse cross entropy: labels shape %s does not match logits shape %s"
                     % (tuple(labels.shape), tuple(logits.shape)))


def _check_labels(xp, labels, depth):
    if labels.dtype.kind not in "iu":
        raise TypeError("sparse cross entropy: labels must be int32 or int64, got %s" % labels.dtype)
    if labels.size == 0:
        return
    low, high = int(xp.min(labels)), int(xp.max(labels))
    if low < 0:
        raise ValueError("sparse cross entropy: label %d is out of range [0, %d)" % (low, depth))
    if high >= depth:
        raise ValueError("sparse cross entropy: label %d is out of range [0, %d)" % (high, depth))


def _one_hot_like(xp, labels, prob):
    return (labels[..., None] == xp.arange(prob.shape[-1], dtype=labels.dtype)).astype(prob.dtype)


def sparse_softmax_cross_entropy(xp, logits, labels):
    """-> (loss, prob). loss[i] = -log(max(softmax(logits)[i, labels[i]], 1e-20)).

    labels: integers of shape logits.shape[:-1] (a trailing 1 is accepted), each in
    [0, depth) with depth = logits.shape[-1]; otherwise ValueError naming the label.
    """
    depth = logits.shape[-1]
    labels = _squeeze_labels(logits, labels)
    _check_labels(xp, labels, depth)
    prob = activation.softmax(xp, logits, axis=-1)
    picked = xp.take_along_axis(prob, labels[..., None].astype(xp.int64), axis=-1)[..., 0]
    loss = -_safe_log(xp, picked)
    return loss.astype(logits.dtype, copy=False), prob


def sparse_softmax_cross_entropy_grad(xp, dloss, prob, labels):
    """d logits = (prob - onehot(labels)) * dloss[..., None]."""
    labels = _squeeze_labels(prob, labels)
    return (prob - _one_hot_like(xp, labels, prob)) * dloss[..., None]


def softmax_cross_entropy(xp, logits, labels):
    """-> (loss, prob) with dense labels (a distribution per row):
    loss = -sum(labels * log(max(softmax(logits), 1e-20)), axis=-1)."""
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError("softmax cross entropy: labels shape %s differs from logits shape %s"
                         % (tuple(labels.shape), tuple(logits.shape)))
    prob = activation.softmax(xp, logits, axis=-1)
    loss = -xp.sum(labels * _safe_log(xp, prob), axis=-1)
    return loss.astype(logits.dtype, copy=False), prob


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
