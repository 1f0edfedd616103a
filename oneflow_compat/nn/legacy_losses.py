"""The legacy losses of OneFlow v0.3.4/v0.4.0: `flow.nn.L1Loss`, `BCELoss`, `BCEWithLogitsLoss`, `MSELoss`,
`MarginRankingLoss`, `TripletMarginLoss`, `KLDivLoss` (functions of blobs in ops/nn_ops.py, composed from math ops
as OneFlow composed them, op names included), `flow.nn.sparse_cross_entropy`, the model-parallel
`sparse_softmax_cross_entropy_with_logits` (logits split along the classes), `flow.smooth_l1_loss` and
`flow.combined_margin_loss` (ops/loss_ops.py, ops/combined_margin_loss.py)."""
from oneflow_compat import distribute as dist
from oneflow_compat import math as _math
from oneflow_compat._api import array_api, ops_api
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ops.registry import apply

_REDUCTIONS = ["none", "mean", "sum"]


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise AssertionError("{} is not a valid value for reduction, The reduction must be the one of `none`, "
                             "`mean`, `sum`. ".format(reduction))


def _same_shape(a, b):
    if tuple(a.shape) != tuple(b.shape):
        raise AssertionError("The Input shape must be the same as Target shape")


def _unique(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def _reduce(loss, reduction, name):
    if reduction == "mean":
        return _math.reduce_mean(loss, name=name + "_reduce_mean")
    if reduction == "sum":
        return _math.reduce_sum(loss, name=name + "_reduce_sum")
    return loss


def l1_loss(input, target, reduction="mean", name=None):  # noqa: A002
    _same_shape(input, target)
    _check_reduction(reduction)
    name = _unique(name, "L1Loss", "flow.nn.L1Loss")
    value = _math.abs(_math.subtract(target, input, name=name + "_sub"), name=name + "_abs")
    return _reduce(value, reduction, name)


def bce_loss(input, target, weight=None, reduction="mean", name=None):  # noqa: A002
    _same_shape(input, target)
    _check_reduction(reduction)
    name = _unique(name, "BCELoss", "flow.nn.BCELoss")
    loss = _math.negative(_math.add(_math.multiply(target, _math.log(input)),
                                    _math.multiply(_math.subtract(1, target), _math.log(_math.subtract(1, input)))))
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise AssertionError("The weight shape must be the same as Input shape")
        loss = _math.multiply(weight, loss)
    return _reduce(loss, reduction, name)


def bce_with_logits_loss(input, target, weight=None, pos_weight=None, reduction="mean", name=None):  # noqa: A002
    _same_shape(input, target)
    _check_reduction(reduction)
    name = _unique(name, "BCEWithLogitsLoss", "flow.nn.BCEWithLogitsLoss")
    neg_input = _math.negative(input)
    max_val = array_api.clip_by_value(neg_input, min_value=0)
    neg_max_val = _math.negative(max_val)
    log_term = _math.log(_math.add(_math.exp(neg_max_val), _math.exp(_math.subtract(neg_input, max_val))))
    if pos_weight is not None:
        if pos_weight.shape[0] != input.shape[-1]:
            raise AssertionError("The length of `pos_weight` must be equal to the number of classes. Found the "
                                 "length of pos_weight {} vs classes {}".format(pos_weight.shape[0], input.shape[-1]))
        log_weight = _math.add(_math.multiply(_math.subtract(pos_weight, 1), target), 1)
        loss = _math.add(_math.multiply(_math.subtract(1, target), input),
                         _math.multiply(log_weight, _math.add(log_term, max_val)))
    else:
        loss = _math.add(_math.add(_math.multiply(_math.subtract(1, target), input), max_val), log_term)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise AssertionError("The weight shape must be the same as Input shape")
        loss = _math.multiply(weight, loss)
    return _reduce(loss, reduction, name)


def mse_loss(input, target, reduction="mean", name=None):  # noqa: A002
    _same_shape(input, target)
    _check_reduction(reduction)
    name = _unique(name, "MSELoss", "flow.nn.MSELoss")
    value = _math.square(_math.subtract(target, input, name=name + "_mean_squared_subtract"),
                         name=name + "_mean_squared_square")
    return _reduce(value, reduction, name)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean", name=None):
    if tuple(input1.shape) != tuple(input2.shape):
        raise AssertionError("The shape of `input1`, `input2` must be the same. ")
    _check_reduction(reduction)
    name = _unique(name, "MarginRankingLoss", "flow.nn.MarginRankingLoss")
    loss = _math.add(margin, _math.multiply(target, _math.negative(_math.subtract(input1, input2))))
    loss = array_api.clip_by_value(loss, min_value=0.0)
    return _reduce(loss, reduction, name)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean",
                        name=None):
    _check_reduction(reduction)
    if swap:
        raise AssertionError("For now we only support `swap=True`, OneFlow still have backward error in minimum")
    name = _unique(name, "TripletMarginLoss", "flow.nn.TripletMarginLoss")

    def p_norm(x, what):
        value = _math.abs(x, name=what + "_abs")
        if p == 2.0:
            return _math.sqrt(_math.reduce_sum(_math.square(value, name=what + "_square"), axis=1,
                                               name=what + "_sum"), name=what + "_sqrt")
        total = _math.reduce_sum(_math.pow(value, float(p), name=what + "_pow1"), axis=1, name=what + "_sum")
        return _math.pow(total, 1.0 / p, name=what + "_norm_val")

    d1 = p_norm(_math.add(_math.subtract(anchor, positive), eps), name + "_distance_1")
    d2 = p_norm(_math.add(_math.subtract(anchor, negative), eps), name + "_distance_2")
    loss = array_api.clip_by_value(_math.subtract(_math.add(margin, d1), d2), min_value=0.0)
    return _reduce(loss, reduction, name)


def kldivloss(input, target, log_target=False, reduction="mean", name=None):  # noqa: A002
    _check_reduction(reduction)
    name = _unique(name, "KLDivLoss_", "flow.nn.KLDivLoss")
    if log_target:
        loss = _math.multiply(_math.exp(target, name=name + "exp"), _math.subtract(target, input))
    else:
        out = _math.multiply(target, _math.subtract(_math.log(target, name=name + "log"), input))
        zeros = ops_api.zeros_like(out, dtype=out.dtype, name=name + "zeros")
        # OneFlow: cast(rint(target + 0.5), int8) as the condition, so that a zero target gives 0, not nan
        condition = ops_api.cast(_math.round(_math.add(target, 0.5), name=name + "rint"), dtypes.int8,
                                 name=name + "cast2int")
        loss = array_api.where(condition, out, zeros, name=name + "where")
    return _reduce(loss, reduction, name)


def smooth_l1_loss(prediction, label, beta=1.0, name=None):
    """Elementwise smooth L1 (no reduction), OneFlow's smooth_l1_loss op."""
    name = _unique(name, "SmoothL1Loss_", "flow.smooth_l1_loss")
    return apply("smooth_l1_loss", [prediction, label], {"beta": float(beta)}, name=name)


def combined_margin_loss(x, label, m1=1, m2=0, m3=0, name=None):
    """InsightFace's combined margin: cos(m1 θ + m2) − m3 at each row's label (θ = acos(x)), x elsewhere."""
    name = _unique(name, "CombinedMarginLoss_", "flow.combined_margin_loss")
    y, _ = apply("combined_margin_loss", [x, label], {"m1": float(m1), "m2": float(m2), "m3": float(m3),
                                                      "depth": int(x.shape[1])}, name=name)
    return y


def _labels_without_last(labels, logits, what):
    if len(labels.shape) == len(logits.shape):
        if labels.shape[-1] != 1:
            raise AssertionError("%s: labels of shape %s do not fit logits of shape %s" % (what, labels.shape,
                                                                                          logits.shape))
        labels = array_api.squeeze(labels, axis=[-1])
    elif len(labels.shape) != len(logits.shape) - 1:
        raise AssertionError("%s: labels of shape %s do not fit logits of shape %s" % (what, labels.shape,
                                                                                      logits.shape))
    return labels


def _split_along_classes(blob):
    return blob.distribute is dist.split(len(blob.shape) - 1)


def sparse_cross_entropy(labels=None, prediction=None, name=None):
    """-log(prediction[label]) of probabilities `prediction` (OneFlow's sparse_cross_entropy op; with the
    prediction split along the classes, its _ms form: partial sums over the devices)."""
    if labels is None or prediction is None:
        raise AssertionError("labels and prediction are required")
    labels = _labels_without_last(labels, prediction, "flow.nn.sparse_cross_entropy")
    default = "SparseCrossEntropyMs_" if _split_along_classes(prediction) else "SparseCrossEntropy_"
    name = _unique(name, default, "flow.nn.sparse_cross_entropy")
    if _split_along_classes(prediction):
        prediction = prediction.with_distribute(dist.split(len(prediction.shape) - 1))
    return apply("sparse_cross_entropy", [prediction, labels], {"depth": int(prediction.shape[-1])}, name=name)


def sparse_softmax_cross_entropy_ms(labels, logits, name):
    """The model-parallel softmax cross entropy of logits split along the classes (labels broadcast), as OneFlow's
    sparse_softmax_cross_entropy_ms was computed: each device's maximum of its classes, their maximum, exp of the
    shifted logits, their sum across the devices (a partial sum, all-reduced), the probabilities, and
    -log(prob[label]) on the device holding each label (a partial sum). Returns the loss."""
    nd = len(logits.shape)
    classes = dist.split(nd - 1)
    parts = builder.current("flow.nn.sparse_softmax_cross_entropy_with_logits").placement.parallel_num
    logits = logits.with_distribute(classes)
    chunk_max = apply("reduce_max_chunks", [logits], {"chunks": max(1, min(parts, logits.shape[-1]))},
                      name=name + "-chunk_max")
    row_max = _math.reduce_max(chunk_max, axis=[nd - 1], keepdims=True, name=name + "-max")
    shifted = _math.subtract(logits, row_max, name=name + "-sub")
    e = _math.exp(shifted, name=name + "-exp")
    total = _math.reduce_sum(e, axis=[nd - 1], keepdims=True, name=name + "-sum")
    prob = _math.divide(e, total, name=name + "-prob")
    return apply("sparse_cross_entropy", [prob.with_distribute(classes), labels],
                 {"depth": int(logits.shape[-1])}, name=name)


def distributed_sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    """v0.4.0's always-model-parallel form: the logits are read split along their classes."""
    if labels is None or logits is None:
        raise AssertionError("labels and logits are required")
    labels = _labels_without_last(labels, logits, "flow.nn.distributed_sparse_softmax_cross_entropy_with_logits")
    name = _unique(name, "DistributedSparseSoftmaxCrossEntropy_",
                   "flow.nn.distributed_sparse_softmax_cross_entropy_with_logits")
    return sparse_softmax_cross_entropy_ms(labels, logits, name)
