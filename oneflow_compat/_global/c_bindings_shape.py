"""`oneflow._C`'s shape, indexing and scatter/gather names (OneFlow v0.9.0 functional_api.yaml; functors in
`oneflow/core/functional/impl/array_functor.cpp`): the yaml's argument names, order and defaults, TensorTuple
results as Python tuples, over the registered ops the top-level functions use.
"""
import builtins
import numbers

from oneflow_compat._global import functional as _F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global import nd_functions as _ND
from oneflow_compat._global import tensor_functions as _T
from oneflow_compat._global import views as _views
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.ir import dtypes as _dtypes


def _tensor(x, fn, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    return x


def _ints(v):
    return [int(v)] if isinstance(v, numbers.Integral) else [int(d) for d in v]


# --- permutations and views -----------------------------------------------------------------------------------------
def permute(input, dims):  # noqa: A002
    return _F.permute(_tensor(input, "permute"), *_ints(dims))


def T(input):  # noqa: A002,N802  (OneFlow's name: Tensor.T, every axis reversed)
    x = _tensor(input, "T")
    return _F.permute(x, *range(x.ndim - 1, -1, -1)) if x.ndim > 1 else x


def t(input):  # noqa: A002
    """TransposeAllDimFunction: a 2-D tensor transposed, a 0-D or 1-D one as it is."""
    x = _tensor(input, "t")
    if x.ndim > 2:
        raise RuntimeError("t() expects a tensor with <= 2 dimensions, but self is %dD" % x.ndim)
    return _F.permute(x, 1, 0) if x.ndim == 2 else x


def flatten(x, start_dim=0, end_dim=-1):
    return _F.flatten(_tensor(x, "flatten", "x"), start_dim, end_dim)


def view(x, shape):
    return _F.view(_tensor(x, "view", "x"), *_ints(shape))


def contiguous_(input):  # noqa: A002
    """InplaceToContiguous: the tensor itself, its storage made contiguous."""
    x = _tensor(input, "contiguous_")
    return _views.contiguous_(x)  # (a non-contiguous view takes contiguous storage of its own)


def expand(x, shape):
    return _T.expand(_tensor(x, "expand", "x"), *_ints(shape))


def repeat(input, repeat_shape):  # noqa: A002
    return _T.repeat(_tensor(input, "repeat"), *_ints(repeat_shape))


def tile(input, dims):  # noqa: A002
    return _T.tile(_tensor(input, "tile"), tuple(_ints(dims)))


def expand_dims(input, dim):  # noqa: A002
    return _F.unsqueeze(_tensor(input, "expand_dims"), int(dim))


def unsqueeze(input, dim):  # noqa: A002
    return _F.unsqueeze(_tensor(input, "unsqueeze"), int(dim))


def squeeze(x, dim=None):
    x = _tensor(x, "squeeze", "x")
    if dim is None or isinstance(dim, numbers.Integral):
        return _F.squeeze(x, dim)
    dims = sorted({d % x.ndim for d in dim}, reverse=True)
    for d in dims:
        x = _F.squeeze(x, d)
    return x


def broadcast_like(x, like, broadcast_axes=()):
    """BroadcastLike: x broadcast to like's shape; `broadcast_axes` names like's axes that x lacks (or holds as
    1), else x's shape is aligned to like's from the right (the functional form's checks and words:
    `_ND.broadcast_like`, OneFlow v0.9.0 array_functor.cpp BroadcastLikeFunctor)."""
    _tensor(x, "broadcast_like", "x"), _tensor(like, "broadcast_like", "like")
    return _ND.broadcast_like(x, like, list(broadcast_axes) if broadcast_axes else None)


def reshape_like(input, like):  # noqa: A002  (the yaml's `in`)
    x = _tensor(input, "reshape_like", "in")
    _tensor(like, "reshape_like", "like")
    if x.numel() != like.numel():  # OneFlow v0.9.0 user/ops/reshape_like_op.cpp: its check and words
        raise RuntimeError("The element number of the in tensor must be equal to the element number of the like "
                           "tensor, but got %d and %d" % (x.numel(), like.numel()))
    # (an op of its own in OneFlow; its kernel relabels its input, so the result is given its memory)
    return _views.make(x, apply_op("reshape_like", [x, _tensor(like, "reshape_like", "like")]), None)


def reduce_sum_like(input, like, axis):  # noqa: A002
    """ReduceSumLike: the sum over `axis`, shaped as `like` (the reduced axes kept or dropped as like has them)."""
    x = _tensor(input, "reduce_sum_like", "in")
    _tensor(like, "reduce_sum_like", "like")
    axis = _ints(axis)
    if not axis and tuple(x.shape) != tuple(like.shape):  # OneFlow v0.9.0 user/ops/reduce_like_ops.cpp's words
        raise RuntimeError("The shape of the x tensor must be consistent to the shape of the like tensor when the "
                           "input axis list is empty")
    out = _F.sum(x, axis, True) if axis else x
    if out.numel() != like.numel():
        raise RuntimeError("reduce_sum_like: the sum of %s over axis %s does not fit like's shape %s"
                           % (tuple(x.shape), axis, tuple(like.shape)))
    return _F.reshape(out, tuple(like.shape))


# --- gathers and scatters -------------------------------------------------------------------------------------------
def gather(x, indices, axis):
    """Gather: x's slices along `axis` at `indices` (of any shape: out is x.shape[:axis] + indices.shape +
    x.shape[axis+1:])."""
    x = _tensor(x, "gather", "x")
    _tensor(indices, "gather", "indices")
    return apply_op("gather", [x, indices], {"axis": int(axis) % x.ndim})


def dim_gather(input, dim, index, sparse_grad=False):  # noqa: A002
    return _F.gather(_tensor(input, "dim_gather"), int(dim), index)


def index_select(input, dim, index):  # noqa: A002
    return _T.index_select(_tensor(input, "index_select"), int(dim), index)


def arg_sort(input, direction):  # noqa: A002  (the yaml's `in`)
    """ArgSort along the last axis: direction 'ASCENDING' or 'DESCENDING'."""
    x = _tensor(input, "arg_sort", "in")
    if direction not in ("ASCENDING", "DESCENDING"):
        # OneFlow v0.9.0 array_functor.cpp ArgSortFunctor: its check and words
        raise RuntimeError('expected the input direction parameter value is "ASCENDING" or "DESCENDING", '
                           'but found the value is "%s"' % (direction,))
    return _F.cast(_T.argsort(x, -1, direction == "DESCENDING"), _dtypes.int32)


def gather_nd(params, indices):
    return _ND.gather_nd(_tensor(params, "gather_nd", "params"), indices)


def scatternd(indices, updates, shape):
    return _ND.scatter_nd(indices, updates, tuple(_ints(shape)))


def tensor_scatter_nd_update(tensor, indices, updates, inplace=False):
    out = _ND.tensor_scatter_nd_update(_tensor(tensor, "tensor_scatter_nd_update", "tensor"), indices, updates)
    return _inplace.rebind(tensor, out) if inplace else out


def scatterndlike(like, updates, indices):
    """ScatterNdLike: `updates` scattered at `indices` into zeros shaped as `like`."""
    _tensor(like, "scatterndlike", "like")
    return apply_op("scatter_nd_like", [like, indices, updates])


def scatter_add(input, dim, index, src, *, inplace=False):  # noqa: A002
    """DimScatterAdd / DimScatterAddScalar (`src` a number: added at every index)."""
    x = _tensor(input, "scatter_add")
    if not isinstance(src, Tensor):
        src = _F.add(_F.cast(_F.mul(index, 0), x.dtype), src)
    out = _T.scatter_add(x, int(dim), index, src)
    return _inplace.rebind(x, out) if inplace else out


def unsorted_segment_sum(x, segment_ids, axis, num_segments):
    _tensor(x, "unsorted_segment_sum", "x")
    return apply_op("unsorted_segment_sum", [x, segment_ids], {"axis": int(axis) % x.ndim,
                                                               "num_segments": int(num_segments)})


def tensor_setitem(x, index, value):
    """TensorSetItem: `x[index] = value` (returns None, as OneFlow's Void functor)."""
    _tensor(x, "tensor_setitem", "x")[index] = value


# --- slices ---------------------------------------------------------------------------------------------------------
def narrow(input, dim, start, length):  # noqa: A002
    return _T.narrow(_tensor(input, "narrow"), int(dim), int(start), int(length))


def _slice_bounds(start, stop, step, count):
    """OneFlow 0.9's checks of a slice op's attributes (user/ops/slice_op.cpp, its RuntimeErrors and words):
    the functional forms take them as the op does, normalized (0 <= start <= stop, step > 0), not Python's."""
    for i in range(count):
        if step[i] <= 0:
            raise RuntimeError("The step list elements must be greater than 0, but got %d at index %d" % (step[i], i))
        if start[i] < 0:
            raise RuntimeError("The start list elements must be greater than or equal to 0, but got %d at index %d"
                               % (start[i], i))
        if stop[i] < 0:
            raise RuntimeError("The stop list elements must be greater than or equal to 0, but got %d at index %d"
                               % (stop[i], i))
        if start[i] > stop[i]:
            raise RuntimeError("The element in start list must be less than or equal to the element in stop list at "
                               "index %d, but got %d and %d" % (i, start[i], stop[i]))


def slice(x, start, stop, step, enable_view_slice=None):  # noqa: A001
    _tensor(x, "slice", "x")
    start, stop, step = _ints(start), _ints(stop), _ints(step)
    for name, v in (("start_vec", start), ("stop_vec", stop), ("step_vec", step)):
        if len(v) != x.ndim:  # (SliceOp::GetSbp's words)
            raise RuntimeError("%s's dim not equal to ref shape's dim: %d vs %d" % (name, len(v), x.ndim))
    _slice_bounds(start, stop, step, x.ndim)
    tup = [list(t) for t in zip(start, stop, step)]
    out = _ND.slice(x, tup)
    if not enable_view_slice or not _views.applicable(x):
        return out
    # OneFlow's SliceFunctor with enable_view_slice: `view::Slice` of a local eager tensor (steps > 0)
    bounds = [builtins.slice(*t).indices(n) for t, n in zip(_ND._slice_tup(tup, tuple(x.shape)), x.shape)]
    if any(b[2] <= 0 for b in bounds):
        return out
    return _views.make(x, out, _views.slice_layout(_views.layout_of(x), bounds))


def slice_view_1d_contiguous(x, start, end):
    """SliceView1dContiguous: elements [start, end) of a 1-D tensor."""
    x = _tensor(x, "slice_view_1d_contiguous", "x")
    if x.ndim != 1:
        raise RuntimeError("slice_view_1d_contiguous: x must be 1-D, got %d dims" % x.ndim)
    return _T.narrow(x, 0, int(start), int(end) - int(start))


def slice_update(ref, value, start, stop, step, inplace=False):
    """SliceUpdate: `ref` with ref[start:stop:step] = value; in place or on a copy of ref."""
    _tensor(ref, "slice_update", "ref")
    _tensor(value, "slice_update", "value")
    start, stop, step = _ints(start), _ints(stop), _ints(step)
    # SliceUpdateOp::InferLogicalTensorDesc, then its GetSbp's list sizes (user/ops/slice_op.cpp, v0.9.0); value
    # is cast to ref's dtype first (SliceUpdateFunctor's TensorProcessor), so no dtype error
    count = builtins.min(len(start), len(stop), len(step))
    _slice_bounds(start, stop, step, count)
    for i in range(count):
        want = (stop[i] - start[i] + step[i] - 1) // step[i]
        have = value.shape[i] if i < value.ndim else 1
        if want != have:
            raise RuntimeError("The size of slice tuple must be equal to the size of value tensor at dimension %d, "
                               "but got %d and %d" % (i, want, have))
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if len(v) != ref.ndim:
            raise RuntimeError("The size of %s list must be equal to the dimension of ref tensor, but got %d and %d"
                               % (name, len(v), ref.ndim))
    target = ref if inplace else ref.clone()
    return _ND.slice_update(target, value, [list(t) for t in zip(start, stop, step)])


# --- joins and splits -----------------------------------------------------------------------------------------------
def stack(inputs, dim=0):
    return _F.stack(list(inputs), int(dim))


def unbind(x, dim=0):
    return tuple(_T.unbind(_tensor(x, "unbind", "x"), int(dim)))


def chunk(x, chunks, dim=0):
    return tuple(_T.chunk(_tensor(x, "chunk", "x"), int(chunks), int(dim)))


_MAX_INPUT_COUNT = 128  # OneFlow v0.9.0 core/functional/impl/common.h kMaxInputCount


def split_like(x, like, axis):
    """SplitLike: x cut along `axis` into pieces as long as the `like` tensors are there; like may have fewer
    axes than x (each piece is like's shape followed by x's trailing sizes). OneFlow 0.9's checks in its order
    and words (core/functional/impl/array_functor.cpp SplitLikeFunctor, user/ops/split_like_op.cpp)."""
    _tensor(x, "split_like", "x")
    like = list(like)
    if len(like) < 2:
        raise RuntimeError("like.size() must not less than 2, but got %d" % len(like))
    if len(like) > _MAX_INPUT_COUNT:
        raise RuntimeError("like.size() must not greater than %d, but got %d" % (_MAX_INPUT_COUNT, len(like)))
    for i, t in enumerate(like):
        _tensor(t, "split_like", "like[%d]" % i)
    in_nd, like_nd = x.ndim, like[0].ndim
    if like_nd > in_nd:
        raise RuntimeError("The dimension of like (%d) should be less than or equal to input (%d)" % (like_nd, in_nd))
    axis = int(axis)
    if axis >= like_nd:
        raise RuntimeError("The axis (%d) should be less than the dimension of like (%d)" % (axis, like_nd))
    axis %= like_nd  # (a negative axis counts from like's last, where OneFlow 0.9 leaves it undefined)
    total = 0
    for t in like:
        if t.ndim != like_nd:
            raise RuntimeError("The dimension of like_i (%d) must match the dimension of the first like (%d)"
                               % (t.ndim, like_nd))
        for j in range(like_nd):
            if j == axis:
                total += t.shape[j]
            elif x.shape[j] != t.shape[j]:
                raise RuntimeError("The size of input (%d) must match the size of like_i (%d) at dimension %d"
                                   % (x.shape[j], t.shape[j], j))
    if total != x.shape[axis]:
        raise RuntimeError("In non-dynamic shape situation, the total size of like (%d) should be equal to the size "
                           "of input (%d) at dimension %d" % (total, x.shape[axis], axis))
    if like_nd < in_nd:  # pieces keep x's trailing axes: the split along the axis
        return tuple(_T.split(x, [t.shape[axis] for t in like], axis))
    out = apply_op("split_like", [x] + like, {"axis": axis})
    return tuple(out) if isinstance(out, list) else (out,)


def meshgrid(tensors, indexing="ij"):
    return tuple(_T.meshgrid(*tensors, indexing=indexing))


def select_top_n(inputs, n):
    """SelectTopN: the first `n` of the tensors (DDP's bucketing picks its ready ones with it)."""
    inputs = list(inputs)
    if not 0 <= int(n) <= len(inputs):
        raise ValueError("select_top_n: n must be in [0, %d], got %d" % (len(inputs), n))
    return tuple(inputs[:int(n)])


# --- selections -----------------------------------------------------------------------------------------------------
def argwhere(x, dtype=_dtypes.int32):
    """ArgWhere: (the coordinates of the non-zero elements, their count as a 1-element tensor)."""
    res, size = apply_op("argwhere", [_tensor(x, "argwhere", "x")], {"dtype": dtype})
    return res, size


def nonzero(x, as_tuple=False):
    """NonZero: a tuple: (the (n, ndim) coordinates,) or, as_tuple, one index tensor per axis."""
    x = _tensor(x, "nonzero", "x")
    if as_tuple:
        return tuple(_T.nonzero(x, as_tuple=True))
    return (_T.nonzero(x),)


def unique(x, sorted=True, return_inverse=False, return_counts=False, dtype=_dtypes.int32):  # noqa: A002
    """Unique (the values) / UniqueWithCounts (values with the inverse indices and/or counts); `unique(x, sorted,
    dtype)` positionally is the first overload's."""
    if isinstance(return_inverse, _dtypes.DType):
        return_inverse, dtype = False, return_inverse
    return _T.unique(_tensor(x, "unique", "x"), sorted=sorted, return_inverse=return_inverse,
                     return_counts=return_counts, dtype=dtype)


def triu(x, diagonal=0):
    return _T.triu(_tensor(x, "triu", "x"), int(diagonal))


def triu_(x, diagonal=0):
    return _inplace.rebind(_tensor(x, "triu_", "x"), _T.triu(x, int(diagonal)))


def one_hot(input, num_classes=-1, on_value=1, off_value=0):  # noqa: A002
    return _F.one_hot(_tensor(input, "one_hot"), num_classes, on_value, off_value)


def fill_(input, value):  # noqa: A002  (the yaml's `in`)
    """FillTensor (a 0-d tensor's value) / Fill (a number): every element of the tensor, in place."""
    x = _tensor(input, "fill_", "in")
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with %d dimensions."
                               % value.ndim)
        v = _F.reshape(_F.cast(value, x.dtype), (1,) * x.ndim)
        return _inplace.rebind(x, _T.expand(v, *x.shape).contiguous() if x.ndim else v)
    return x.fill_(value)


# --- identities -----------------------------------------------------------------------------------------------------
def identity(input):  # noqa: A002  (the yaml's `in`)
    return apply_op("identity", [_tensor(input, "identity", "in")])


def amp_white_identity(input):  # noqa: A002
    """The AMP pass's marker that what follows runs in reduced precision; the value passes unchanged."""
    return apply_op("amp_white_identity", [_tensor(input, "amp_white_identity", "in")])


def amp_black_identity(input):  # noqa: A002
    """The AMP pass's marker that what follows stays in full precision; the value passes unchanged."""
    return apply_op("identity", [_tensor(input, "amp_black_identity", "in")])


# --- products -------------------------------------------------------------------------------------------------------
def batch_matmul(a, b, transpose_a=False, transpose_b=False, alpha=1.0):
    """BatchMatMul: 3-D a @ b per batch, either side transposed, scaled by alpha."""
    _tensor(a, "batch_matmul", "a"), _tensor(b, "batch_matmul", "b")
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch_matmul: expected 3-D tensors, got %dD and %dD" % (a.ndim, b.ndim))
    return _F.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b, alpha=alpha)


def baddbmm(input, batch1, batch2, *, beta=1.0, alpha=1.0):  # noqa: A002
    return _T.baddbmm(input, batch1, batch2, beta=beta, alpha=alpha)


def einsum(equation, operands):
    return _T.einsum(equation, *operands)
