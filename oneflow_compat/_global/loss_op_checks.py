"""The checks OneFlow 0.9's loss user ops make on their inputs, in its order, error types and words (v0.9.0:
user/ops/softmax_cross_entropy_op.cpp, sparse_cross_entropy_op.cpp, sparse_softmax_cross_entropy_op.cpp,
smooth_l1_loss_op.cpp). An op checks shapes (its InferLogicalTensorDesc) before dtypes (its InferDataType:
core/framework/op_expr.cpp runs the tensor-desc function first), so a program that catches OneFlow's error
catches ours. The functionals that dispatch those ops (`_C.*`, `nn.functional.*`) call these before their op.

Shapes are written as OneFlow's Shape::ToString ("(2,3)", "(4,)"), dtypes as its DataType_Name ("kFloat").
"""
from oneflow_compat.ir import dtypes as _dtypes


def shape_text(shape):
    """OneFlow's Shape::ToString (core/common/shape.cpp, v0.9.0)."""
    shape = tuple(shape)
    return "(" + ",".join(str(int(d)) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def dtype_name(dtype):
    """OneFlow's DataType_Name (core/common/data_type.proto): kFloat, kDouble, kInt64, ..."""
    return getattr(dtype, "enum_name", None) or str(dtype)


def _is_index(dtype):
    # core/common/data_type_seq.h INDEX_DATA_TYPE_SEQ: int32 and int64
    return dtype in (_dtypes.int32, _dtypes.int64)


def _prediction_label(prediction, label, first="prediction"):
    """CheckPredictionLabelDesc (sparse_cross_entropy_op.cpp; sparse_softmax_cross_entropy_op.cpp's
    InferTensorDescFn / InferGradTensorDescFn with `first` = "prob")."""
    p, lb = tuple(prediction.shape), tuple(label.shape)
    if len(p) < 2:
        raise RuntimeError("The dimension of %s must be greater than or equal to 2, but found %d" % (first, len(p)))
    if len(lb) != len(p) - 1:
        # (the grad op's words say "prediction" too)
        raise RuntimeError("The dimension of label is expected to be less than that of prediction by 1, but found "
                           "%d and %d" % (len(lb), len(p) - 1))
    for i in range(len(p) - 1):
        if p[i] != lb[i]:
            raise RuntimeError("The size of %s (%d) must match the size of label (%d) at dimension %d"
                               % (first, p[i], lb[i], i))


def _index_label(label):
    if not _is_index(label.dtype):
        raise TypeError("The dtype of label must be integer, but found %s" % dtype_name(label.dtype))


def sparse_cross_entropy(prediction, label):
    """sparse_cross_entropy / sparse_cross_entropy_ms (and sparse_softmax_cross_entropy, whose checks are the
    same): prediction (d_0, ..., d_{r-1}, C) with r >= 1, label (d_0, ..., d_{r-1}) int32 / int64."""
    _prediction_label(prediction, label)
    _index_label(label)


sparse_softmax_cross_entropy = sparse_cross_entropy


def softmax_cross_entropy(prediction, label):
    """softmax_cross_entropy: prediction and label of one shape, 2-D at least, and one dtype."""
    p, lb = tuple(prediction.shape), tuple(label.shape)
    if len(p) < 2:
        raise RuntimeError("The dimension of prediction must be greater than or equal to 2, but found %d" % len(p))
    if lb != p:
        raise RuntimeError("The size of label %s must match the size of prediction %s"
                           % (shape_text(lb), shape_text(p)))
    if label.dtype != prediction.dtype:
        raise TypeError("label and prediction are expected to have the same dtype, but found %s and %s"
                        % (dtype_name(label.dtype), dtype_name(prediction.dtype)))


def softmax_cross_entropy_grad(dy, label, prob):
    """softmax_cross_entropy_grad: prob and label of one shape (2-D at least), dy that shape without its last
    axis; label and dy of prob's dtype."""
    pr, lb, d = tuple(prob.shape), tuple(label.shape), tuple(dy.shape)
    if len(pr) < 2:
        raise RuntimeError("The dimension of prob must be greater than or equal to 2, but found %d" % len(pr))
    if len(d) != len(pr) - 1:
        raise RuntimeError("The dimension of dy is expected to be less than that of prob by 1, but found %d and %d"
                           % (len(d), len(pr) - 1))
    for i in range(min(len(d), len(lb))):  # (a label of fewer axes fails the next check)
        if d[i] != lb[i]:
            raise RuntimeError("The size of dy (%d) must match the size of label (%d) at dimension %d"
                               % (d[i], lb[i], i))
    if lb != pr:
        raise RuntimeError("The size of label %s must match the size of prob %s" % (shape_text(lb), shape_text(pr)))
    if label.dtype != prob.dtype:
        raise TypeError("label and prob are expected to have the same dtype, but found %s and %s"
                        % (dtype_name(label.dtype), dtype_name(prob.dtype)))
    if dy.dtype != prob.dtype:
        raise TypeError("dy and prob are expected to have the same dtype, but found %s and %s"
                        % (dtype_name(dy.dtype), dtype_name(prob.dtype)))


def smooth_l1_loss(input, target, beta):  # noqa: A002
    """smooth_l1_loss: input and target of one shape and dtype, beta >= 0."""
    if tuple(input.shape) != tuple(target.shape):
        raise RuntimeError("The size of input %s must match the size of target %s"
                           % (shape_text(input.shape), shape_text(target.shape)))
    if not float(beta) >= 0:
        raise RuntimeError("beta must be greater than or equal to 0, but found it to be %s" % _float_text(beta))
    if input.dtype != target.dtype:
        raise TypeError("input and target are expected to have the same dtype, but found %s and %s"
                        % (dtype_name(input.dtype), dtype_name(target.dtype)))


def _float_text(v):
    """A float as C++'s ostream writes it (6 significant digits, no trailing zeros): -1, 0.5, 1e-07."""
    return "%g" % float(v)
