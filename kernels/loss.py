"""Cross-entropy losses over the last axis, with their gradients.

The sparse softmax loss returns the probabilities too (its op's second output), so its gradient kernel need not
recompute them. Log-probabilities go through the legacy "safe log", log(max(p, 1e-20)), so a vanishing
probability gives a large finite loss.
"""
import numpy

from . import activation, checks, cuda_loss, dense_jit

_SAFE_LOG_FLOOR = 1e-20


def _safe_log(xp, p):
    return xp.log(xp.maximum(p, p.dtype.type(_SAFE_LOG_FLOOR)))


_LABEL_OUT_OF_RANGE = "sparse_softmax_cross_entropy: label %d is out of range [0, %d)"


def _check_labels(xp, labels, depth):
    """The labels as indices; a label outside [0, depth) is a ValueError naming it: at once on the host, with the
    step's results on a device (`checks`: no wait for the device here), where the step runs on clipped labels."""
    if labels.size == 0:
        return labels
    if xp is numpy and labels.dtype.kind in "iu":
        # one reduction: seen as unsigned, a negative label is larger than any depth
        if labels.view(labels.dtype.str.replace("i", "u")).max() >= depth:
            low, high = labels.min(), labels.max()
            raise ValueError(_LABEL_OUT_OF_RANGE % (low if low < 0 else high, depth))
        return labels
    low, high = xp.min(labels), xp.max(labels)
    checks.require(xp, (low < 0) | (high >= depth), _LABEL_OUT_OF_RANGE, xp.where(low < 0, low, high), depth)
    return labels if xp is numpy else xp.clip(labels, 0, depth - 1)


def _flat_label_index(xp, labels, depth):
    """Indices of each row's label in the rows laid end to end (a C-ordered (..., depth) array read flat)."""
    return xp.arange(0, labels.size * depth, depth) + labels.reshape(-1)


def _device_rows(xp, logits, labels):
    """Whether one CUDA launch (kernels/cuda_loss.py) computes the loss: a device module that builds raw kernels,
    float logits, int32/int64 labels, at least one row and one class."""
    return xp is not numpy and hasattr(xp, "RawModule") and cuda_loss.supported(logits.dtype, labels.dtype) and \
        labels.size > 0 and logits.shape[-1] > 0


def _softmax_xent_on_device(xp, logits, labels, seed, gradient):
    depth = logits.shape[-1]
    loss, out, check = cuda_loss.softmax_xent(xp, xp.ascontiguousarray(logits), xp.ascontiguousarray(labels), seed,
                                              gradient)
    # the labels' check, read with the step's results (`checks`): views of the kernel's (failed, label) pair
    checks.require(xp, check[0:1].reshape(()), _LABEL_OUT_OF_RANGE, check[1:2].reshape(()), depth)
    return loss.reshape(labels.shape), out.reshape(logits.shape)


def sparse_softmax_cross_entropy(xp, logits, labels):
    """-> (loss, prob). loss[i] = -log(max(softmax(logits)[i, labels[i]], 1e-20)).

    labels: integers of shape logits.shape[:-1], each in [0, depth) with depth = logits.shape[-1]; otherwise
    ValueError naming the label.
    """
    depth = logits.shape[-1]
    if _device_rows(xp, logits, labels):
        return _softmax_xent_on_device(xp, logits, labels, 1.0, False)
    labels = _check_labels(xp, labels, depth)
    prob = activation.softmax(xp, logits, axis=-1)
    picked = xp.ascontiguousarray(prob).reshape(-1)[_flat_label_index(xp, labels, depth)]
    loss = -_safe_log(xp, picked)
    return loss.reshape(labels.shape).astype(logits.dtype, copy=False), prob


def sparse_softmax_cross_entropy_grad(xp, dloss, prob, labels):
    """d logits = (prob - onehot(labels)) * dloss[..., None]; the one-hot is subtracted at the labels only."""
    depth = prob.shape[-1]
    grad = xp.array(prob, order="C")
    if xp is not numpy:  # the forward kernel checked them (see `_check_labels`)
        labels = xp.clip(labels, 0, depth - 1)
    grad.reshape(-1)[_flat_label_index(xp, labels, depth)] -= 1
    grad *= dloss[..., None]
    return grad


def sparse_softmax_cross_entropy_and_grad(xp, logits, labels, *, seed=1.0):
    """-> (loss, d logits) of `sparse_softmax_cross_entropy` and of its gradient for the constant loss gradient
    `seed` (backward's seed), in one kernel: the probabilities become the gradient in place (one compiled pass
    over the rows where numba is there: `dense_jit.softmax_xent_rows`; one CUDA launch on a device)."""
    depth = logits.shape[-1]
    if _device_rows(xp, logits, labels):
        return _softmax_xent_on_device(xp, logits, labels, seed, True)
    if xp is numpy and dense_jit.AVAILABLE and logits.dtype.kind == "f" and labels.dtype.kind in "iu":
        rows = logits.reshape(-1, depth)
        loss = numpy.empty(rows.shape[0], dtype=logits.dtype)
        grad = numpy.empty(rows.shape, dtype=logits.dtype)
        if rows.shape[0] and depth:
            numpy.subtract(rows, rows.max(axis=1, keepdims=True), out=grad)
            numpy.exp(grad, out=grad)
        floor, seed = logits.dtype.type(_SAFE_LOG_FLOOR), logits.dtype.type(seed)
        if dense_jit.softmax_xent_rows(labels.reshape(-1), seed, floor, loss, grad) >= 0:
            _check_labels(xp, labels, depth)  # raises, naming the label
        return loss.reshape(labels.shape), grad.reshape(logits.shape)
    labels = _check_labels(xp, labels, depth)
    grad = xp.ascontiguousarray(activation.softmax(xp, logits, axis=-1))
    flat, index = grad.reshape(-1), _flat_label_index(xp, labels, depth)
    loss = -_safe_log(xp, flat[index])
    flat[index] -= 1
    if seed != 1.0:
        grad *= grad.dtype.type(seed)
    return loss.reshape(labels.shape).astype(logits.dtype, copy=False), grad


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
    labels = labels.astype(logits.dtype, copy=False)  # int32 / int8 labels (OneFlow's kernels take them)
    loss = xp.maximum(logits, 0) - logits * labels + xp.log1p(xp.exp(-xp.abs(logits)))
    return loss.astype(logits.dtype, copy=False)


def sigmoid_cross_entropy_grad(xp, dloss, logits, labels):
    labels = labels.astype(logits.dtype, copy=False)
    return ((activation.sigmoid(xp, logits) - labels) * dloss).astype(logits.dtype, copy=False)


# --- nn ops family: the losses of OneFlow's user ops smooth_l1_loss, sparse_cross_entropy(_ms),
# combined_margin_loss (v0.4.0 user/kernels/*_kernel.cpp) and the class-chunk maxima of the model-parallel softmax.
# `lower` is the first class a device holds when the classes are split across devices (0 otherwise): labels outside
# [lower, lower + local classes) contribute nothing on that device (their sum over the devices is the value).
def smooth_l1_loss(xp, prediction, label, *, beta=1.0):
    """Elementwise: 0.5 d² / beta where |d| < beta, else |d| - 0.5 beta (d = prediction - label)."""
    d = xp.abs(prediction - label)
    b = d.dtype.type(beta)
    if beta == 0:
        return d
    return xp.where(d < b, d.dtype.type(0.5) * d * d / b, d - d.dtype.type(0.5) * b).astype(prediction.dtype,
                                                                                         copy=False)


def smooth_l1_loss_grad(xp, dloss, prediction, label, *, beta=1.0):
    d = prediction - label
    b = d.dtype.type(beta)
    g = xp.where(xp.abs(d) < b, d / b, xp.sign(d)) if beta != 0 else xp.sign(d)
    return (dloss * g).astype(prediction.dtype, copy=False)


def _local_labels(xp, labels, classes, lower):
    """(labels shifted to the local classes, mask of the rows whose label is on this device)."""
    local = labels.astype(xp.int64) - lower
    return local, (local >= 0) & (local < classes)


def sparse_cross_entropy(xp, prediction, labels, *, depth, lower=0):
    """out[i] = -log(max(prediction[i, labels[i]], 1e-20)) (prediction: probabilities (..., classes)); 0 where
    the label is another device's class."""
    _check_labels(xp, labels, depth)
    classes = prediction.shape[-1]
    local, here = _local_labels(xp, labels, classes, lower)
    flat = xp.ascontiguousarray(prediction).reshape(-1)
    picked = flat[_flat_label_index(xp, xp.where(here, local, 0), classes)].reshape(labels.shape)
    out = xp.where(here, -_safe_log(xp, picked), picked.dtype.type(0))
    return out.astype(prediction.dtype, copy=False)


def sparse_cross_entropy_grad(xp, prediction, labels, dy, *, depth, lower=0):
    """d prediction: -dy / max(prediction, 1e-20) at each row's label (on the device holding it), 0 elsewhere."""
    classes = prediction.shape[-1]
    local, here = _local_labels(xp, labels, classes, lower)
    dx = xp.zeros(prediction.shape, dtype=prediction.dtype)
    index = _flat_label_index(xp, xp.where(here, local, 0), classes)
    flat_p = xp.ascontiguousarray(prediction).reshape(-1)[index]
    value = xp.where(here.reshape(-1), -dy.reshape(-1) / xp.maximum(flat_p, flat_p.dtype.type(_SAFE_LOG_FLOOR)), 0)
    dx.reshape(-1)[index] += value.astype(dx.dtype, copy=False)
    return dx


def combined_margin_loss(xp, x, labels, *, m1=1.0, m2=0.0, m3=0.0, depth, lower=0):
    """-> (y, theta): y = x except at each row's label, where y = cos(m1 acos(x) + m2) - m3 and theta = acos(x)
    (InsightFace's combined margin; theta 0 for a row whose label is another device's class)."""
    _check_labels(xp, labels, depth)
    rows = int(labels.size)
    classes = x.shape[-1] if x.ndim > 1 else 1
    x2 = x.reshape(rows, -1)
    local, here = _local_labels(xp, labels.reshape(-1), classes, lower)
    safe = xp.where(here, local, 0)
    picked = x2[xp.arange(rows), safe]
    theta = xp.where(here, xp.arccos(xp.clip(picked, -1, 1)), picked.dtype.type(0))
    y2 = xp.array(x2)
    margin = xp.cos(theta * x.dtype.type(m1) + x.dtype.type(m2)) - x.dtype.type(m3)
    # every row written (its own value where the label is another device's): no boolean-mask indexing, whose
    # result size the host would have to wait for on a device
    y2[xp.arange(rows), safe] = xp.where(here, margin, picked)
    return y2.reshape(x.shape), theta.astype(x.dtype, copy=False)


def combined_margin_loss_grad(xp, dy, labels, theta, *, m1=1.0, m2=0.0, depth, lower=0):
    """dx = dy, times m1 sin(m1 theta + m2) / sin(theta) at each row's label."""
    rows = int(labels.size)
    classes = dy.shape[-1] if dy.ndim > 1 else 1
    d2 = xp.array(dy.reshape(rows, -1))
    local, here = _local_labels(xp, labels.reshape(-1), classes, lower)
    safe = xp.where(here, local, 0)
    t = theta.reshape(-1)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        factor = xp.sin(t * dy.dtype.type(m1) + dy.dtype.type(m2)) * dy.dtype.type(m1) / xp.sin(t)
    idx = xp.arange(rows)
    # every row's label cell rewritten (times 1 where the label is another device's): no boolean-mask indexing
    d2[idx, safe] = d2[idx, safe] * xp.where(here, factor, dy.dtype.type(1))
    return d2.reshape(dy.shape)


def reduce_max_chunks(xp, x, *, ranges):
    """The maxima of x over ranges of its last axis, stacked along a new last axis: (..., len(ranges))."""
    return xp.stack([xp.max(x[..., a:b], axis=-1) for a, b in ranges], axis=-1)
