"""OneFlow 0.9's tensor functions whose names the legacy API binds too, for Tensors: `gather_nd`, `scatter_nd`,
`tensor_scatter_nd_update`, `slice`, `slice_update`, `broadcast_like`, `diag`, `in_top_k`.

Each runs the registered op the legacy function runs (so SBP, autograd and nn.Graph come with it); only the
argument forms are 0.9's (`python/oneflow/framework/docstr/array_ops.py`, `nn/modules/slice.py`,
`ops/array_ops.py`'s `parse_slice_tuple_list` at v0.9.0). `shared_names` binds them at the top, where a Tensor
argument takes these and a legacy blob the legacy function.
"""
import builtins

from oneflow_compat._global import functional as F, views
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.inplace import rebind as _rebind
from oneflow_compat._global.tensor import BOOL, Tensor


def _tensor(x, what, arg):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (what, arg, type(x).__name__))
    return x


def gather_nd(input, index):  # noqa: A002
    """Slices of `input` at the index rows of `index`: its last axis indexes input's first axes."""
    _tensor(input, "gather_nd", "input"), _tensor(index, "gather_nd", "index")
    return apply_op("gather_nd", [input, index])


def scatter_nd(index, update, shape):
    """Zeros of `shape` with the rows of `update` added at the index rows of `index`."""
    _tensor(index, "scatter_nd", "index"), _tensor(update, "scatter_nd", "update")
    return apply_op("scatter_nd", [index, update], {"shape": tuple(int(d) for d in shape)})


def tensor_scatter_nd_update(tensor, indices, updates):
    """A copy of `tensor` with its slices at the index rows of `indices` replaced by `updates`."""
    _tensor(tensor, "tensor_scatter_nd_update", "tensor"), _tensor(indices, "tensor_scatter_nd_update", "indices")
    _tensor(updates, "tensor_scatter_nd_update", "updates")
    if updates.dtype is not tensor.dtype:  # OneFlow 0.9 (array_functor.cpp TensorScatterNdUpdateFunctor)
        raise RuntimeError("The dtype of tensor and updates must be same.")
    return apply_op("tensor_scatter_nd_update", [tensor, updates, indices])


def _slice_tup(slice_tup_list, shape):
    """OneFlow 0.9's parse_slice_tuple_list: (start, stop, step) per axis (None: the whole axis in the step's
    direction), start clamped to [-dim, dim-1] and stop to [-dim-1, dim], an empty range where start and stop are
    crossed; missing trailing axes whole. The triples read as Python slices."""
    ndim = len(shape)
    if not isinstance(slice_tup_list, (list, tuple)) or len(slice_tup_list) > ndim:
        raise ValueError("slice_tup_list must be a list or tuple with length less than or equal to number of "
                         "dimensions of input tensor")
    entries = list(slice_tup_list) + [(None, None, None)] * (ndim - len(slice_tup_list))
    out = []
    for entry, dim in zip(entries, shape):
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            raise ValueError("element of slice_tup_list must be a list or tuple with form (start, stop, step)")
        if not all(e is None or (isinstance(e, int) and not isinstance(e, bool)) for e in entry):
            raise ValueError("element of slice tuple must int or None")
        start, stop, step = entry
        step = 1 if step is None else step
        if step == 0:
            raise ValueError("slice step can't be 0")
        start = (0 if step > 0 else dim) if start is None else start
        stop = (dim if step > 0 else -dim - 1) if stop is None else stop
        start = builtins.max(builtins.min(start, dim - 1), -dim)
        stop = builtins.max(builtins.min(stop, dim), -dim - 1)
        first, last = start % dim if dim else 0, stop + dim if stop < 0 else stop
        if (step > 0 and last < first) or (step < 0 and first < last):
            stop = start
        out.append((start, stop, step))
    return tuple(out)


def slice(input, slice_tup_list):  # noqa: A001 (OneFlow's name)
    """`input` sliced by (start, stop, step) per axis (see `_slice_tup`)."""
    _tensor(input, "slice", "input")
    return apply_op("slice", [input], {"slice_tup": _slice_tup(slice_tup_list, tuple(input.shape))})


def slice_update(input, update, slice_tup_list):  # noqa: A002
    """`input[slices] = update` in place (OneFlow 0.9 updates `input` and returns it); `update` is cast to
    input's dtype. Differentiable as the slice_update op: the update's gradient is the slice of the output's."""
    _tensor(input, "slice_update", "input"), _tensor(update, "slice_update", "update")
    if update.dtype != input.dtype:
        update = F.cast(update, input.dtype)
    out = apply_op("slice_update", [input, update], {"slice_tup": _slice_tup(slice_tup_list, tuple(input.shape))})
    return _rebind(input, out)


def broadcast_like(input, like, broadcast_axes=None):  # noqa: A002
    """`input` repeated to like's shape along `broadcast_axes` (input has like's shape with those axes 1, or
    without them). Without axes, as OneFlow 0.9's functional BroadcastLike: input is aligned on like's trailing
    axes and repeated along the axes it lacks and those where it has size 1."""
    _tensor(input, "broadcast_like", "input"), _tensor(like, "broadcast_like", "like")
    shape, target = tuple(input.shape), tuple(like.shape)
    if shape == target:
        return input
    if len(target) < len(shape):
        raise RuntimeError("The number of sizes provided (%d) must be greater or equal to the number of dimensions "
                           "in the tensor (%d). Target sizes: %s. Tensor sizes: %s"
                           % (len(target), len(shape), _text(target), _text(shape)))
    nd = len(target)
    if broadcast_axes is None or len(broadcast_axes) == 0:
        aligned = (1,) * (nd - len(shape)) + shape
        for i, (d, t) in enumerate(zip(aligned, target)):
            if d != t and d != 1:
                raise RuntimeError("The expanded size of the tensor (%d) must match the existing size (%d) at "
                                   "non-singleton dimension %d. Target sizes: %s. Tensor sizes: %s"
                                   % (t, d, i, _text(target), _text(shape)))
        kept = aligned
    else:
        if not isinstance(broadcast_axes, (list, tuple)):
            raise TypeError("broadcast_like(): broadcast_axes must be a list or tuple, got %r" % (broadcast_axes,))
        for a in broadcast_axes:
            if not -nd <= a < nd:
                raise IndexError("broadcast_like(): Dimension out of range (expected to be in range of [%d, %d], "
                                 "but got %d)" % (-nd, nd - 1, a))
        axes = {a % nd for a in broadcast_axes}
        kept = tuple(1 if i in axes else d for i, d in enumerate(target))
        # OneFlow's IsAxesLegal: like's shape with those axes 1 is input's shape, or, where input has fewer axes,
        # the two agree once their 1s are dropped
        legal = shape == kept if len(shape) == nd else \
            [d for d in shape if d != 1] == [d for d in kept if d != 1]
        if not legal:
            raise RuntimeError("Invalid input parameter: like shape:%s, in shape:%s, axis_vec size:%d"
                               % (_text(target), _text(shape), len(broadcast_axes)))
    if shape != kept:
        input = F.reshape(input, kept)
    out = apply_op("broadcast_like", [input, like.detach()])
    # the kernel returns a read-only broadcast of its input; OneFlow's op allocates its output, which
    # in-place ops may then write
    return views.make(input, out, None)


def _text(shape):
    """OneFlow's Shape::ToString (core/common/shape.cpp, v0.9.0): "(2,3)", "(4,)", "()"."""
    return "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def diag(input, diagonal=0):  # noqa: A002
    """A 1-d input: the square matrix with it on the `diagonal`-th diagonal; a 2-d input: that diagonal."""
    _tensor(input, "diag", "input")
    if input.ndim not in (1, 2):
        raise RuntimeError("diag(): the input must be a 1-D or 2-D tensor, got %d dims" % input.ndim)
    return apply_op("diag", [input], {"diagonal": int(diagonal)})


def in_top_k(targets, predictions, k):
    """Whether each target class is among the `k` largest of its row of `predictions` (bool; the op, as v0.4's,
    gives int8)."""
    _tensor(targets, "in_top_k", "targets"), _tensor(predictions, "in_top_k", "predictions")
    # OneFlow 0.9's checks, order and words (core/functional/impl/array_functor.cpp InTopKFunctor)
    if targets.shape[0] != predictions.shape[0]:
        raise RuntimeError("The num of targets must equal the num of predictions")
    if targets.ndim != 1:
        raise RuntimeError("The dimension of targets must be 1")
    if predictions.ndim != 2:
        raise RuntimeError("The dimension of predictions must be 2")
    return F.cast(apply_op("in_top_k", [targets, predictions], {"k": int(k)}, requires_grad=False), BOOL)
