"""OneFlow 0.9's indexing, counting and searching functions of its API reference (docs/source/oneflow.rst,
tensor.rst at v0.9.0): `batch_gather`, `index_add` (`Tensor.index_add_` is its in-place form, tensor_methods), `repeat_interleave`, `searchsorted`,
`bincount`, `nms`, `roc_auc_score` (diag and in_top_k for Tensors: nd_functions.py).

Compositions of registered ops where the output shape follows from the input shapes (batch_gather, index_add
through unsorted_segment_sum, the searchsorted op, repeat_interleave with an
int): eager, nn.Graph and global tensors alike, with the ops' gradients. Where the shape depends on the values
(bincount's length, repeat_interleave with a tensor of repeats, nms's kept boxes) or OneFlow computes on the host
(roc_auc_score: "Currently this implementation can only be used on CPU"), the values are read on the host and the
function is refused inside nn.Graph (tensor_functions._eager_only). Signatures and error texts are OneFlow
v0.9.0's (oneflow/core/functional/functional_api.yaml, impl/array_functor.cpp, framework/docstr/*.py).
"""
import builtins

import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, functional as F, shape_extra, tensor_functions as TF
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import BOOL, Tensor

_INDEX_DTYPES = (dtypes.int32, dtypes.int64)


def _int_tensor(t, what, name):
    if not isinstance(t, Tensor):
        raise TypeError("%s(): %s must be a Tensor, got %s" % (what, name, type(t).__name__))
    if t.dtype.is_floating or t.dtype is BOOL:
        raise TypeError("%s(): %s must be an integer tensor, got %s" % (what, name, t.dtype.name))


def batch_gather(in_, indices):
    """out[b..., i, ...] = in[b..., indices[b..., i], ...]: the leading indices.ndim - 1 dims are batch dims
    (OneFlow's BatchGather(in, indices))."""
    # OneFlow 0.9's checks, in its order and words (user/ops/batch_gather_op.cpp)
    if not isinstance(in_, Tensor) or not isinstance(indices, Tensor):
        raise TypeError("batch_gather(): in and indices must be Tensors, got %s and %s"
                        % (type(in_).__name__, type(indices).__name__))
    if in_.ndim == 0:
        raise RuntimeError("The dimension of the input tensor should be greater than zero, but got 0")
    if indices.ndim == 0:
        raise RuntimeError("The dimension of the indices tensor should be greater than zero, but got 0")
    if indices.ndim > in_.ndim:
        raise RuntimeError("The dimension of the input tensor should be greater than or equal to the dimension of "
                           "the indices tensor, but found that the dimension of the input tensor is %d, and the "
                           "dimension of the indices tensor is %d" % (in_.ndim, indices.ndim))
    for i in range(indices.ndim - 1):
        if indices.shape[i] != in_.shape[i]:
            raise RuntimeError("The size of indices tensor must match the size of input tensor at dimension %d when "
                               "two tensors are both dynamic or neither" % i)
    if indices.dtype not in _INDEX_DTYPES:
        raise TypeError("The dtype of the indices tensor must be int32 or int64 (batch_gather(): indices of dtype "
                        "%s)" % indices.dtype.name)
    return apply_op("batch_gather", [in_, indices])


def index_add(input, dim, index, source, alpha=1):  # noqa: A002
    """input + alpha * source summed into the rows index[i] along dim (repeated indices add up).

    The sum is the unsorted_segment_sum op (source's slices along dim gathered by segment id = index), whose
    gradient gathers back: d/dinput = dy, d/dsource = alpha * dy[index]."""
    d = TF._dim(dim, input.ndim, "index_add")
    if not isinstance(index, Tensor) or index.dtype not in _INDEX_DTYPES:
        raise TypeError("index_add(): Input(Index) holds the wrong type, it holds %s , but desires to be int32_t or "
                        "int64_t" % (index.dtype.name if isinstance(index, Tensor) else type(index).__name__))
    if index.ndim > 1:
        raise IndexError("index_add(): Index is supposed to be a vector, got %d dims" % index.ndim)
    src = source if source.ndim else F.reshape(source, (1,) * builtins.max(input.ndim, 1))
    if source.ndim and index.numel() != source.shape[d]:
        raise RuntimeError("index_copy_(): Number of indices (,%d, \") should be equal to source.size(dim) (,%d, \")"
                           % (index.numel(), source.shape[d]))
    want = tuple(input.shape[:d]) + (index.numel(),) + tuple(input.shape[d + 1:])
    if tuple(src.shape) != want:
        src = TF.expand(src, want) if source.ndim == 0 else src
        if tuple(src.shape) != want:
            raise RuntimeError("index_add(): source %s must match input %s outside dim %d"
                               % (tuple(source.shape), tuple(input.shape), d))
    ids = F.reshape(index, (index.numel(),))
    added = apply_op("unsorted_segment_sum", [F.cast(src, input.dtype), ids],
                     {"axis": d, "num_segments": int(input.shape[d])})
    return F.add(input, added if alpha == 1 else F.mul(added, alpha))


def repeat_interleave(input, repeats, dim=None, output_size=None):  # noqa: A002
    """Each element (slice along dim; of the flattened input when dim is None) repeated `repeats` times in place,
    as numpy.repeat. An int repeats is a reshape / expand / reshape; a tensor of repeats (one per slice, or one
    for all) is read on the host (the output's length depends on it) and the slices gathered."""
    x = input
    if dim is None:
        x, d = F.reshape(input, (input.numel(),)), 0
    else:
        d = TF._dim(dim, input.ndim, "repeat_interleave")
        if x.ndim == 0:
            x = F.reshape(x, (1,))
    if isinstance(repeats, (int, np.integer)):
        r = int(repeats)
        if r < 0:
            raise RuntimeError("repeats can not be negative")
        shape = tuple(x.shape)
        inner = shape[:d + 1] + (1,) + shape[d + 1:]
        target = shape[:d + 1] + (r,) + shape[d + 1:]
        return F.reshape(TF.expand(F.reshape(x, inner), target), shape[:d] + (shape[d] * r,) + shape[d + 1:])
    # a tensor of repeats: OneFlow 0.9's checks, in its order and words (core/functional/impl/array_functor.cpp
    # RepeatInterLeaveTensorFunctor): one int64 count per slice along dim (no broadcast of a single count)
    if not isinstance(repeats, Tensor):
        raise TypeError("repeat_interleave(): repeats must be an int or a Tensor, got %s" % type(repeats).__name__)
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats.dtype is not dtypes.int64:
        raise RuntimeError("repeats has to be Long tensor (repeat_interleave(): repeats of dtype %s)"
                           % repeats.dtype.name)
    TF._eager_only(input, "repeat_interleave")
    counts = np.asarray(repeats.numpy()).reshape(-1).astype(np.int64)
    n = x.shape[d]
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    if counts.size != n:
        raise RuntimeError("repeats must have the same size as input along dim (%d repeats for size %d)"
                           % (counts.size, n))
    if output_size is not None and int(output_size) != int(counts.sum()):
        raise RuntimeError("repeat_interleave(): output_size %d is not the sum of repeats %d"
                           % (int(output_size), int(counts.sum())))
    positions = np.repeat(np.arange(n, dtype=np.int64), counts)
    return apply_op("gather", [x, creation.new_tensor_like(positions, x, dtype=dtypes.int64)], {"axis": d})


def searchsorted(sorted_sequence, values, out_int32=False, right=False):
    """For each value the index where it would be inserted into the innermost dim of sorted_sequence keeping it
    sorted: the first i with value <= seq[i] (right=False) or value < seq[i] (right=True); a NaN value gets the
    row's length. The searchsorted op (ops/linalg_ops.py): eager, nn.Graph, global tensors."""
    scalar = not isinstance(values, Tensor)
    if scalar:
        values = shape_extra.host_constant([values], sorted_sequence, sorted_sequence.dtype)
    if not scalar and values.ndim == 0:
        raise RuntimeError("for searchsorted op, input values tensor should have positive dimension")
    if sorted_sequence.ndim == 0:
        raise RuntimeError("for searchsorted op, input sorted_sequence should have positive dimension, but got 0 "
                           "dimension")
    seq_shape, val_shape = tuple(sorted_sequence.shape), tuple(values.shape)
    if sorted_sequence.ndim != 1 and seq_shape[:-1] != val_shape[:-1]:
        raise RuntimeError("for searchsorted op, sorted_sequence should be 1 dimension or the first N-1 dimensions "
                           "of boundaries tensor and input value tensor must match, but we got sorted_sequence "
                           "tensor %s and input value tensor %s" % (list(seq_shape), list(val_shape)))
    seq, vals = F._same_dtype(sorted_sequence.detach(), values.detach())
    out = apply_op("searchsorted", [seq, vals], {"out_int32": bool(out_int32), "right": bool(right)})
    return F.reshape(out, ()) if scalar else out


def bincount(input, weights=None, minlength=None):  # noqa: A002
    """The count of each value 0..max(input) of a 1-D non-negative integer tensor (at least `minlength` bins); with
    weights, the sum of the weights of each value. The length depends on the largest value: read on the host."""
    if input.dtype.is_floating:
        raise RuntimeError("bincount can only support int tensor")
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    TF._eager_only(input, "bincount")
    host = np.asarray(input.numpy())
    if host.size and int(host.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength is not None and int(minlength) < 0:
        raise RuntimeError("minlength should be >= 0")
    size = builtins.max(int(host.max()) + 1 if host.size else 0, int(minlength or 0))
    if weights is None:
        data = creation.ones_like(input, dtype=dtypes.int64)
    else:
        if tuple(weights.shape) != tuple(input.shape):
            raise RuntimeError("bincount(): weights should have the same shape as input, got %s and %s"
                               % (tuple(weights.shape), tuple(input.shape)))
        data = weights
    return apply_op("unsorted_segment_sum", [data, input], {"axis": 0, "num_segments": size})


def nms(boxes, scores, iou_threshold):
    """Indices (int64) of the boxes kept by non-maximum suppression, in decreasing order of score: a box is
    dropped when its IoU with a kept higher-scoring box is greater than iou_threshold. Boxes are (x1, y1, x2, y2).
    As OneFlow's nms_op: the boxes sorted by score, the nms op's mask, the marked indices (read on the host: their
    count depends on the values; eager only)."""
    if boxes.ndim != 2 or boxes.shape[-1] != 4:
        raise RuntimeError("nms(): boxes must be a Tensor[N, 4], got shape %s" % (tuple(boxes.shape),))
    if scores.ndim != 1 or scores.shape[0] != boxes.shape[0]:
        raise RuntimeError("nms(): scores must be a Tensor[N] with N = %d boxes, got shape %s"
                           % (boxes.shape[0], tuple(scores.shape)))
    TF._eager_only(boxes, "nms")
    order = np.argsort(-np.asarray(scores.numpy(), dtype=np.float64), kind="stable")
    sorted_boxes = apply_op("gather", [boxes.detach(), shape_extra.host_constant(order, boxes, dtypes.int64)],
                            {"axis": 0})
    keep = np.asarray(c_nms(sorted_boxes, iou_threshold).numpy()).astype(bool)
    return shape_extra.host_constant(order[keep], boxes, dtypes.int64)


def c_nms(x, iou_threshold, keep_n=-1):
    """`flow._C.nms(x, iou_threshold, keep_n=-1)`: the int8 mask of the kept boxes of x (sorted by score)."""
    return apply_op("nms", [x], {"iou_threshold": float(iou_threshold), "keep_n": int(keep_n)})


def roc_auc_score(label, pred):
    """The area under the ROC curve of scores `pred` for binary labels `label` (float32, shape (1,)): the
    probability that a positive scores above a negative, ties counting one half (Mann-Whitney). Computed on the
    host, as OneFlow's CPU-only kernel."""
    TF._eager_only(pred, "roc_auc_score")
    y = np.asarray(label.numpy()).reshape(-1)
    p = np.asarray(pred.numpy(), dtype=np.float64).reshape(-1)
    if y.shape != p.shape:
        raise RuntimeError("roc_auc_score(): label and pred must have the same number of elements, got %d and %d"
                           % (y.size, p.size))
    pos = y != 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    _, group, counts = np.unique(p, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # 1-based rank of each distinct score's last entry; tied entries share the mean rank
    ranks = (ends - (counts - 1) / 2.0)[group.reshape(-1)]
    if n_pos == 0 or n_neg == 0:
        auc = np.nan
    else:
        auc = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return creation.new_tensor_like(np.asarray([auc], dtype=np.float32), pred, dtype=dtypes.float32)
