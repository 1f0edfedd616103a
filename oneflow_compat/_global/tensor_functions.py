"""OneFlow 0.9's tensor functions beyond `functional.py` that its users call at run time (flowvision's models, the
basics pages; issue 21): splitting and joining (`split`, `chunk`, `narrow`, `unbind`, `roll`, `flip`, `rot90`,
`meshgrid`, `expand`, `repeat`, `tile`), ordering (`sort`, `argsort`, `topk`), selection (`masked_select`,
`argwhere`, `nonzero`, `index_select`, `scatter`), running sums and triangles (`cumsum`, `tril`, `triu`), checks
(`isnan`, `isinf`, `isfinite`), products (`einsum`, `baddbmm`, `addmm`), norms (`norm`, `normalize`,
`logsumexp`), `diff`, `var_mean`, `unique`, `bernoulli`.

Each is a registered op (`ops/tensor_ops.py`, `ops/shape_ops.py`) or a composition of registered ops, so it runs
eagerly, in nn.Graph and on global tensors through the ops' SBP signatures, and autograd follows the ops' rules.
Functions whose output shape depends on the values (`masked_select`, `argwhere`, `nonzero`, `unique`) read the
values on the host, as OneFlow's eager kernels do, and are refused inside nn.Graph with a message naming them.
Argument names and defaults are OneFlow 0.9's (`python/oneflow/framework/docstr/*.py`, `nn/functional`).
"""
import builtins
import collections
import math

import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation, functional as F, lazy, views
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import BOOL, Tensor


def _dim(dim, ndim, what):
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError("%s(): Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (what, -n, n - 1, dim))
    return dim % n


def _eager_only(x, what):
    if lazy.is_lazy(x):
        raise RuntimeError("%s(): the output's shape depends on the input's values, which nn.Graph does not "
                           "support; call it outside the graph's build()" % what)


def _host_like(array, like, dtype):
    """A tensor of host values `array` on `like`'s device or placement (broadcast): indices and masks."""
    return creation.new_tensor_like(np.asarray(array), like, dtype=dtype)


def _slice_along(x, dim, start, stop):
    key = (slice(None),) * dim + (slice(start, stop),)
    return F.index(x, key)


class MeshgridIndexingError(RuntimeError, ValueError):
    """An unknown meshgrid indexing: OneFlow 0.9's RuntimeError; a ValueError as this project raised before."""


class IndexDtypeError(RuntimeError, TypeError):
    """An index of a non-integer dtype: OneFlow 0.9's RuntimeError; a TypeError as this project raised before."""


def _shape_text(shape):
    """OneFlow's Shape::ToString: (2,4), (5,)."""
    shape = [int(d) for d in shape]
    return "(%d,)" % shape[0] if len(shape) == 1 else "(%s)" % ",".join(map(str, shape))


# --- splitting and joining -------------------------------------------------------------------------------------
def split(x, split_size_or_sections, dim=0):
    """Pieces of `split_size_or_sections` each along `dim` (the last one smaller), or of the listed sizes."""
    d = _dim(dim, x.ndim, "split")
    n = x.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            # OneFlow 0.9's words (core/functional/impl/array_functor.cpp SplitWithSizeFunctor)
            raise RuntimeError("split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at "
                               "dimension %d), but got sum(split_sizes)=%d" % (n, d, builtins.sum(sizes)))
    else:
        step = int(split_size_or_sections)
        if step < 0:  # OneFlow 0.9's words (SplitFunctor)
            raise RuntimeError("split expects split_size be non-negative, but got split_size=%d" % step)
        if step == 0:
            raise RuntimeError("split(): split_size must be positive, got 0")
        sizes = [builtins.min(step, n - s) for s in range(0, n, step)] or [0]
    out, start = [], 0
    for s in sizes:
        out.append(_slice_along(x, d, start, start + s))
        start += s
    return tuple(out)


def chunk(x, chunks, dim=0):
    """`chunks` pieces along `dim` of ceil(size / chunks) each (fewer when the size runs out)."""
    # OneFlow 0.9's checks and words (core/functional/impl/array_functor.cpp ChunkFunctor)
    if x.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor.")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: %d" % chunks)
    d = _dim(dim, x.ndim, "chunk")
    return split(x, builtins.max(1, -(-x.shape[d] // chunks)), d)


def narrow(x, dim, start, length):
    # OneFlow 0.9's checks and words (core/functional/impl/array_functor.cpp NarrowFunctor)
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, x.ndim, "narrow")
    n = x.shape[d]
    if not -n <= start <= n:
        raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-x.ndim, x.ndim, start))
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError("start (%d) + length (%d) exceeds dimension size (%d)" % (start, length, n))
    return _slice_along(x, d, start, start + length)


def unbind(x, dim=0):
    d = _dim(dim, x.ndim, "unbind")
    return tuple(F.squeeze(p, d) for p in split(x, 1, d))


def flip(x, dims):
    dims = [dims] if isinstance(dims, int) else list(dims)
    axes = tuple(sorted({_dim(d, x.ndim, "flip") for d in dims}))
    return apply_op("flip", [x], {"dims": axes})


def roll(x, shifts, dims=None):
    """Entries shifted by `shifts` along `dims`, wrapping around (the flattened tensor when dims is None)."""
    if dims is None:
        return F.reshape(roll(F.reshape(x, (-1,)), shifts, 0), tuple(x.shape))
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(shifts) != len(dims):
        raise RuntimeError("shifts and dimensions must align. shifts: %d, dims: %d" % (len(shifts), len(dims)))
    out = x
    for s, d in zip(shifts, dims):
        d = _dim(d, x.ndim, "roll")
        n = x.shape[d]
        s = s % n if n else 0
        if s:
            out = F.cat([_slice_along(out, d, n - s, n), _slice_along(out, d, 0, n - s)], d)
    return out


def rot90(x, k=1, dims=(0, 1)):
    d0, d1 = (_dim(d, x.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError("rot90(): dims must differ, got %s" % (list(dims),))
    k %= 4
    if k == 1:
        return F.transpose(flip(x, [d1]), d0, d1)
    if k == 2:
        return flip(x, [d0, d1])
    if k == 3:
        return F.transpose(flip(x, [d0]), d0, d1)
    return x


def _size_list(sizes):
    """`f(x, 2, 3)` or `f(x, (2, 3))` / a Size: the sizes as a list of ints."""
    if len(sizes) == 1 and hasattr(sizes[0], "__len__"):
        sizes = tuple(sizes[0])
    return [int(s) for s in sizes]


def expand(x, *sizes):
    """x broadcast to `sizes` (-1 keeps a dim): a view of a local eager tensor, as in OneFlow."""
    sizes = _size_list(sizes)
    lead = len(sizes) - x.ndim
    # OneFlow v0.9.0's checks and words (core/functional/impl/array_functor.cpp:857-892 ExpandFunctor)
    if lead < 0:
        raise RuntimeError("expand(tensor{%s}, size=%d): the number of sizes provided (%d) must be greater or equal "
                           "to the number of dimensions in the tensor (%d)"
                           % (_shape_text(x.shape), x.ndim, len(sizes), x.ndim))
    target = []
    for j, s in enumerate(sizes):
        own = x.shape[j - lead] if j >= lead else None
        if s < -1:
            raise RuntimeError("Trying to create tensor with negative dimension %d" % s)
        if s == -1:
            if own is None:
                raise RuntimeError("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                                   "dimension %d" % j)
            s = own
        if own is not None and own != 1 and own != s:
            # OneFlow 0.9's words (core/functional/impl/array_functor.cpp ExpandFunctor)
            raise RuntimeError("The expanded size of the tensor (%d) must match the existing size (%d) at "
                               "non-singleton dimension %d. Target sizes: %s. Tensor sizes: %s"
                               % (s, own, j, _shape_text(sizes), _shape_text(x.shape)))
        target.append(s)
    if tuple(target) == tuple(x.shape) and not views.applicable(x):
        return x  # (a local eager tensor gets a new view whatever the shape: 0.9's view::Expand, :893-895)
    out = apply_op("expand", [x], {"shape": tuple(target)})
    # a view (OneFlow's `view::Expand`: stride 0 on the expanded dims; writable, as OneFlow's)
    return views.make(x, out, views.expand_layout(views.layout_of(x), tuple(target)) if views.applicable(x) else None)


def expand_as(x, other):
    return expand(x, tuple(other.shape))


def repeat(x, *sizes):
    """x tiled `sizes` times along each dim (more sizes than dims add leading dims)."""
    sizes = _size_list(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor (repeat(): %d repeat dims for %d dimensions)" % (len(sizes), x.ndim))
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    inter, target, final = [], [], []
    for r, d in zip(sizes, shape):  # a repeat axis before each axis: (r0, d0, r1, d1, ...)
        inter += [1, d]
        target += [r, d]
        final.append(r * d)
    return F.reshape(expand(F.reshape(x, tuple(inter)), tuple(target)), tuple(final))


def tile(x, dims):
    dims = [dims] if isinstance(dims, int) else list(dims)
    for d in dims:  # OneFlow 0.9's words (core/functional/impl/array_functor.cpp TileFunctor)
        if d < 0:
            raise RuntimeError("Trying to create tensor with negative dimension %d" % d)
    return repeat(x, [1] * (x.ndim - len(dims)) + dims)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 1-D tensors: output k varies along dim k ('ij'), or dims 0 and 1 swapped ('xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    # OneFlow 0.9's checks, order and words (core/functional/impl/array_functor.cpp MeshgridFunctor)
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for cur, nxt in zip(tensors[:-1], tensors[1:]):
        if cur.dtype is not nxt.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if cur.is_local and not nxt.is_local:
            raise RuntimeError("meshgrid expects all tensors are local tensor")
        if not cur.is_local and nxt.is_local:
            raise RuntimeError("meshgrid expects all tensors are global tensor")
        if not cur.is_local and cur.placement != nxt.placement:
            raise RuntimeError("meshgrid expects all tensors to have the same placement")
    if indexing not in ("ij", "xy"):
        raise MeshgridIndexingError('meshgrid: indexing must be one of "xy" or "ij", but received: %s' % (indexing,))
    n = len(tensors)
    pos = list(range(n))
    if indexing == "xy" and n >= 2:
        pos[0], pos[1] = 1, 0
    shape = [0] * n
    for t, p in zip(tensors, pos):
        if t.ndim > 1:
            raise RuntimeError("Expected scalar or 1D tensor in the tensor list but got %d" % t.ndim)
        shape[p] = t.numel()
    out = []
    for t, p in zip(tensors, pos):
        view = [1] * n
        view[p] = shape[p]
        out.append(expand(F.reshape(t, tuple(view)), tuple(shape)))
    return out


# --- ordering ----------------------------------------------------------------------------------------------------
_TopK = collections.namedtuple("topk", ["values", "indices"])
_Sort = collections.namedtuple("sort", ["values", "indices"])


def _last(x, d):
    """(x with dim d moved last, the permutation back)."""
    if d == x.ndim - 1:
        return x, None
    perm = [i for i in range(x.ndim) if i != d] + [d]
    return F.permute(x, perm), [perm.index(i) for i in range(x.ndim)]


def _ordered(x, k, d, largest):
    """(values, int64 indices) of the k largest (smallest) entries along d, in order; ties keep the lower index."""
    moved, back = _last(x, d)
    key = moved if x.dtype.is_floating else F.cast(moved, dtypes.int64)
    if not largest:
        key = F.neg(key)
    idx = F.cast(apply_op("top_k", [key], {"k": int(k), "sorted": True}, requires_grad=False), dtypes.int64)
    values = apply_op("batch_gather", [moved, idx])
    if back is not None:
        values, idx = F.permute(values, back), F.permute(idx, back)
    return values, idx


def topk(input, k, dim=None, largest=True, sorted=True):  # noqa: A002
    x = input
    d = x.ndim - 1 if dim is None else _dim(dim, x.ndim, "topk")
    if x.ndim == 0:
        return _TopK(x, creation.zeros_like(x, dtype=dtypes.int64))
    if not 0 <= k <= x.shape[d]:
        raise RuntimeError("topk(): k (%d) is out of range for dim %d of size %d" % (k, d, x.shape[d]))
    return _TopK(*_ordered(x, k, d, largest))


def sort(input, dim=-1, descending=False):  # noqa: A002
    """(values, indices) along dim; the indices are int32, as OneFlow 0.9's arg_sort gives them (topk's are int64)."""
    x = input
    if x.ndim == 0:
        return _Sort(x, creation.zeros_like(x, dtype=dtypes.int32))
    d = _dim(dim, x.ndim, "sort")
    values, idx = _ordered(x, x.shape[d], d, descending)
    return _Sort(values, F.cast(idx, dtypes.int32))


def argsort(input, dim=-1, descending=False):  # noqa: A002
    return sort(input, dim, descending).indices


# --- selection ---------------------------------------------------------------------------------------------------
def _broadcast_pair(x, mask):
    shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(mask.shape)))
    return expand(x, shape), expand(mask, shape)


def masked_select(input, mask):  # noqa: A002
    """The entries of input where the (broadcast) mask is true, as a 1-D tensor (differentiable in input)."""
    _eager_only(input, "masked_select")
    # any mask dtype: OneFlow 0.9 (nn/modules/masked_select.py) selects where the mask is non-zero (argwhere)
    if not isinstance(mask, type(input)):
        raise TypeError("masked_select(): mask must be a Tensor, got %s" % type(mask).__name__)
    x, m = _broadcast_pair(input, mask)
    flat = np.flatnonzero(np.asarray(m.numpy()).reshape(-1))
    return apply_op("gather", [F.reshape(x, (-1,)), _host_like(flat, x, dtypes.int64)], {"axis": 0})


def argwhere(input, dtype=dtypes.int32):  # noqa: A002
    """(count, ndim) indices of the non-zero entries, row-major (int32 unless `dtype` says, as OneFlow 0.9)."""
    _eager_only(input, "argwhere")
    idx = np.argwhere(np.asarray(input.numpy()))
    return _host_like(idx, input, dtype)


def nonzero(input, as_tuple=False):  # noqa: A002
    _eager_only(input, "nonzero")
    values = np.asarray(input.numpy())
    # as a tuple a 0-d input reads as 1-d (OneFlow 0.9's docstring: nonzero(tensor(5), as_tuple=True) is
    # (tensor([0]),)); as one tensor it gives (1, 0) or (0, 0) indices, numpy's argwhere
    idx = np.argwhere(values.reshape(-1) if as_tuple and input.ndim == 0 else values)
    if as_tuple:
        return tuple(_host_like(idx[:, i].copy(), input, dtypes.int64) for i in range(idx.shape[1]))
    return _host_like(idx, input, dtypes.int64)


def index_select(input, dim, index):  # noqa: A002
    d = _dim(dim, input.ndim, "index_select")
    # OneFlow 0.9's checks and words (core/functional/impl/array_functor.cpp IndexSelectFunctor)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in (dtypes.int32, dtypes.int64):
        raise IndexDtypeError("index_select(): Expected dtype int32 or int64 for index")
    if index.ndim == 0:
        index = F.reshape(index, (1,))
    return apply_op("gather", [input, index], {"axis": d})


def _scatter_src(input, index, src):  # noqa: A002
    """src as a tensor of input's dtype: a number fills a tensor shaped like index."""
    if isinstance(src, Tensor):
        return F.cast(src, input.dtype)
    return creation.full_like(index, src, dtype=input.dtype)


def scatter(input, dim, index, src=None, reduce=None, value=None):  # noqa: A002
    """A copy of input with src (a tensor or a number) written at `index` along `dim`; reduce='add' adds."""
    if src is None:
        src = value
    d = _dim(dim, input.ndim, "scatter")
    src = _scatter_src(input, index, src)
    if reduce is None:
        return apply_op("dim_scatter_update", [input, index, src], {"dim": d})
    if reduce == "add":
        return apply_op("dim_scatter_add", [input, index, src], {"dim": d})
    if reduce == "multiply":  # OneFlow 0.9's DimScatterFunctor: reduce "add" or "multiply"
        return apply_op("dim_scatter_mul", [input, index, src], {"dim": d})
    raise RuntimeError("Invalid reduce type: %s" % (reduce,))


def scatter_add(input, dim, index, src):  # noqa: A002
    return scatter(input, dim, index, src, reduce="add")


# --- running sums, triangles, checks ----------------------------------------------------------------------------
def cumsum(input, dim, dtype=None):  # noqa: A002
    x = input if dtype is None else F.cast(input, dtype)
    if x.ndim == 0:
        return x
    return apply_op("cumsum", [x], {"dim": _dim(dim, x.ndim, "cumsum")})


def triu(input, diagonal=0):  # noqa: A002
    return apply_op("triu", [input], {"diagonal": int(diagonal)})


def tril(input, diagonal=0):  # noqa: A002
    """The lower triangle: the upper triangle of the transpose, transposed back (triu(xᵀ, -k)ᵀ)."""
    t = F.transpose(input, -2, -1)
    return F.transpose(apply_op("triu", [t], {"diagonal": -int(diagonal)}), -2, -1)


def isnan(input):  # noqa: A002
    return F.cast(apply_op("isnan", [input], requires_grad=False), BOOL)


def isinf(input):  # noqa: A002
    return F.cast(apply_op("isinf", [input], requires_grad=False), BOOL)


def isfinite(input):  # noqa: A002
    bad = apply_op("add", [apply_op("isnan", [input], requires_grad=False),
                           apply_op("isinf", [input], requires_grad=False)], requires_grad=False)
    return F.logical_not(bad)


def any(input, dim=None, keepdim=False):  # noqa: A001,A002
    return F.cast(F._reduce("reduce_any", F.cast(input, dtypes.int8), dim, keepdim), BOOL)


def all(input, dim=None, keepdim=False):  # noqa: A001,A002
    return F.cast(F._reduce("reduce_all", F.cast(input, dtypes.int8), dim, keepdim), BOOL)


def amax(input, dim=None, keepdim=False):  # noqa: A002
    return F._reduce("reduce_max", input, dim, keepdim)


def amin(input, dim=None, keepdim=False):  # noqa: A002
    return F._reduce("reduce_min", input, dim, keepdim)


def is_floating_point(input):  # noqa: A002
    return input.dtype.is_floating


# --- products ----------------------------------------------------------------------------------------------------
def baddbmm(input, batch1, batch2, beta=1.0, alpha=1.0):  # noqa: A002
    """beta * input + alpha * (batch1 @ batch2)."""
    prod = F.matmul(batch1, batch2, alpha=alpha)
    return prod if beta == 0 else F.add(F.mul(input, beta) if beta != 1 else input, prod)


def addmm(input, mat1, mat2, alpha=1, beta=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2) on matrices. OneFlow 0.9 takes alpha before beta (positionally too)
    and always scales input, so beta=0 still carries input's nan/inf (python/oneflow/nn/modules/math_ops.py:195-199
    at v0.9.0); torch's order (beta first) differs."""
    if len(input.shape) > 2 or len(mat1.shape) > 2 or len(mat2.shape) > 2:
        raise ValueError("input matrixes shape can not be greater than 2")  # (OneFlow 0.9's words)
    return F.add(F.mul(input, beta), F.matmul(mat1, mat2, alpha=alpha))


def _einsum_reduce(x, term, keep):
    """Sum x over the subscripts of `term` that are not in `keep`."""
    drop = [i for i, c in enumerate(term) if c not in keep]
    if not drop:
        return x, term
    return F.sum(x, drop), "".join(c for c in term if c in keep)


def _einsum_pair(a, ta, b, tb, keep):
    """a (subscripts ta) times b (tb), summed over the shared subscripts not in `keep`, as one batched matmul:
    batch = shared and kept, m = a's own, k = shared and summed, n = b's own."""
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    m = [c for c in ta if c not in tb]
    n = [c for c in tb if c not in ta]
    size = {c: a.shape[ta.index(c)] for c in ta}
    size.update({c: b.shape[tb.index(c)] for c in tb})

    def prod(cs):
        p = 1
        for c in cs:
            p *= size[c]
        return p

    a3 = F.reshape(F.permute(a, [ta.index(c) for c in batch + m + contract]),
                   (prod(batch), prod(m), prod(contract)))
    b3 = F.reshape(F.permute(b, [tb.index(c) for c in batch + contract + n]),
                   (prod(batch), prod(contract), prod(n)))
    out = F.matmul(a3, b3)
    return F.reshape(out, tuple(size[c] for c in batch + m + n)), "".join(batch + m + n)


def einsum(equation, *operands):
    """Einstein summation over two or more operands as batched matmuls (pairwise, left to right), one operand as
    sums and a permutation."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    from oneflow_compat._global import einsum_subscripts

    terms, out, operands = einsum_subscripts.expand(equation, operands)
    x, tx = operands[0], terms[0]
    for i in range(1, len(operands)):
        later = out + "".join(terms[i + 1:])
        x, tx = _einsum_reduce(x, tx, later + terms[i])
        y, ty = _einsum_reduce(operands[i], terms[i], later + tx)
        x, tx = _einsum_pair(x, tx, y, ty, later)
    x, tx = _einsum_reduce(x, tx, out)
    return F.permute(x, [tx.index(c) for c in out]) if tx != out else x


# --- norms -------------------------------------------------------------------------------------------------------
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    """The vector p-norm over `dim` (every entry when None): 'fro' and 2 the Euclidean norm, inf / -inf the largest
    / smallest magnitude, 0 the count of non-zeros, others (sum |x|^p)^(1/p); `normalize`'s. flow.norm and
    Tensor.norm are OneFlow 0.9's full `norm` (matrix norms too): `_global/norm_forms.py`, bound by the api-gaps
    blocks of the package's __init__ and of tensor_methods (it builds on the linalg norms, which import this
    module)."""
    x = input if dtype is None else F.cast(input, dtype)
    if p == "fro" or p == 2 or p is None:
        return F.sqrt(F.sum(F.square(x), dim, keepdim))
    if p == math.inf:
        return amax(F.abs(x), dim, keepdim)
    if p == -math.inf:
        return amin(F.abs(x), dim, keepdim)
    if p == 0:
        return F.sum(F.cast(F.ne(x, 0), x.dtype), dim, keepdim)
    if p == 1:
        return F.sum(F.abs(x), dim, keepdim)
    if isinstance(p, str):
        raise RuntimeError("norm(): p=%r names no vector norm" % p)
    return F.pow(F.sum(F.pow(F.abs(x), float(p)), dim, keepdim), 1.0 / p)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    """input / max(||input||_p along dim, eps) (OneFlow 0.9 `nn.functional.normalize`)."""
    if out is not None:
        raise NotImplementedError("normalize(): out= is not supported")
    return F.div(input, F.clamp(norm(input, p, dim, keepdim=True), min=eps))


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """log(sum(exp(x))) along `dim`, as OneFlow 0.9's LogSumExpFunctor (math_functor.cpp@v0.9.0) computes it: a
    0-dim input is its own value as float32, an empty input takes no max (log of the sum: -inf where nothing is
    summed), otherwise the max is subtracted first and an infinite max is replaced by 0 (inf inputs stay inf)."""
    x = F._floating(input)
    axes = F._axes(dim, x.ndim)
    if x.ndim == 0:
        return F.cast(x, dtypes.float32)
    if x.numel() == 0:
        return F.log(F.sum(F.exp(x), axes, keepdim))
    top = F._reduce("reduce_max", x, axes, True).detach()
    top = F.masked_fill(top, isinf(top), 0.0)
    out = F.add(F.log(F.sum(F.exp(F.sub(x, top)), axes, True)), top)
    return out if keepdim else F.squeeze(out, axes) if axes else out


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    d = _dim(dim, input.ndim, "diff")
    x = input
    if prepend is not None or append is not None:
        x = F.cat([t for t in (prepend, x, append) if t is not None], d)
    for _ in range(n):
        size = x.shape[d]
        x = F.sub(_slice_along(x, d, 1, size), _slice_along(x, d, 0, size - 1))
    return x


def var_mean(input, dim=None, unbiased=True, keepdim=False):  # noqa: A002
    return F.var(input, dim, unbiased, keepdim), F.mean(input, dim, keepdim)


# --- values on the host and randomness --------------------------------------------------------------------------
def unique(input, sorted=True, return_inverse=False, return_counts=False, dtype=dtypes.int32):  # noqa: A002
    """The distinct values of the flattened input: ascending, or with `sorted=False` in the order they first
    appear; the inverse indices (input's shape) and counts are of `dtype` (OneFlow 0.9's signature, `flow.int`)."""
    _eager_only(input, "unique")
    values, first, inverse, counts = np.unique(np.asarray(input.numpy()).reshape(-1), return_index=True,
                                               return_inverse=True, return_counts=True)
    if not sorted:
        order = np.argsort(first, kind="stable")
        position = np.empty_like(order)
        position[order] = np.arange(len(order))
        values, inverse, counts = values[order], position[inverse], counts[order]
    out = [_host_like(values, input, input.dtype)]
    if return_inverse:
        out.append(_host_like(inverse.reshape(tuple(input.shape)), input, dtype))
    if return_counts:
        out.append(_host_like(counts, input, dtype))
    return out[0] if len(out) == 1 else tuple(out)


def bernoulli(input, p=None, generator=None):  # noqa: A002
    """1 where a uniform draw falls below the probability (input's entries, or the number p), else 0; drawn on
    input's layout, so N devices draw what 1 device draws."""
    if input.is_global:
        draw = creation.rand(*input.shape, generator=generator, dtype=F._floating(input).dtype,
                             placement=input.placement, sbp=input.sbp)
    else:
        draw = creation.rand(*input.shape, generator=generator, dtype=F._floating(input).dtype,
                             device=input._device)
    prob = input.detach() if p is None else p
    return F.cast(F.lt(draw, prob), input.dtype)


def multinomial(input, num_samples, replacement=False, generator=None):  # noqa: A002
    """Indices (int64) drawn from each row of `input`'s (unnormalized) probabilities, (K,) or (B, K) -> (n,) or
    (B, n) (OneFlow 0.9). With replacement each draw is the first index whose cumulative probability exceeds a
    uniform draw; without, the n largest of log p + Gumbel noise (the Gumbel-top-k trick: distributed as drawing
    one at a time and removing what was drawn). The uniform draws come from the generators on input's layout, so N
    devices draw what 1 device draws."""
    x = F._floating(input)
    if x.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim, got %d" % x.ndim)
    k, n = x.shape[-1], int(num_samples)
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = F.reshape(x, (1, k)) if x.ndim == 1 else x
    layout = {"placement": rows.placement, "sbp": rows.sbp} if rows.is_global else {"device": rows._device}
    draws = (rows.shape[0], n) if replacement else tuple(rows.shape)
    u = creation.rand(*draws, generator=generator, dtype=rows.dtype, **layout)
    probs = F.div(rows, F.sum(rows, -1, keepdim=True)).detach()
    if replacement:  # the count of cumulative probabilities at or below u is the drawn index
        cdf = F.unsqueeze(cumsum(probs, -1), 1)  # (B, 1, K)
        picked = F.sum(F.cast(F.le(cdf, F.unsqueeze(u, 2)), dtypes.int64), -1)
        out = F.clamp(picked, max=k - 1)  # (u below 1 and the last cdf 1 up to rounding)
    else:
        gumbel = F.neg(F.log(F.neg(F.log(F.clamp(u, min=1e-30)))))
        log_p = F.where(F.gt(probs, 0), F.log(F.clamp(probs, min=1e-38)), float("-inf"))  # (no log of 0 warned)
        out = F.cast(topk(F.add(log_p, gumbel), n, dim=-1)[1], dtypes.int64)
    return F.reshape(out, (n,)) if x.ndim == 1 else out


# --- small arithmetic of the flowvision layers ---------------------------------------------------------------------
def log2(input):  # noqa: A002
    return F.log2(input)


def floor_divide(input, other):  # noqa: A002
    """Division rounded down; integer inputs stay integer (OneFlow 0.9 `floor_divide`)."""
    integer = not input.dtype.is_floating and (not isinstance(other, Tensor) or not other.dtype.is_floating) \
        and not isinstance(other, float)
    out = F.floor(F.div(input, other))
    return F.cast(out, input.dtype) if integer else out


def logical_and(input, other):  # noqa: A002
    x, y = F._tensor_pair(input, other, "logical_and")
    return F.cast(apply_op("logical_and", [x, y], requires_grad=False), BOOL)


def logical_or(input, other):  # noqa: A002
    """Also with a number as `other` (OneFlow 0.9's ScalarLogicalOr)."""
    x, y = F._tensor_pair(input, other, "logical_or")
    return F.logical_not(logical_and(F.logical_not(x), F.logical_not(y)))


def get_default_dtype():
    """The default floating dtype (float32 unless `flow.set_default_dtype` changed it)."""
    from oneflow_compat._global import default_dtype

    return default_dtype.get_default_dtype()


def _typed_tensor(dtype):
    def make(*args, **kwargs):
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            return creation.tensor(args[0], dtype=dtype, **kwargs)
        return creation.zeros(*args, dtype=dtype, **kwargs)
    return make


LongTensor = _typed_tensor(dtypes.int64)
FloatTensor = _typed_tensor(dtypes.float32)
DoubleTensor = _typed_tensor(dtypes.float64)
IntTensor = _typed_tensor(dtypes.int32)


def erfinv(input):  # noqa: A002
    return apply_op("erfinv", [F._floating(input)])


# --- the math of the legacy family's elementwise ops (ops/elementwise_math_ops.py) on tensors -------------------
def _math_unary(op_type):
    def fn(input):  # noqa: A002
        return apply_op(op_type, [F._floating(input)])

    fn.__name__ = op_type
    fn.__doc__ = "OneFlow 0.9's `%s` (floating; integer inputs become float32)." % op_type
    return fn


erf, erfc, lgamma = _math_unary("erf"), _math_unary("erfc"), _math_unary("lgamma")
tan, atan, asin, acos = _math_unary("tan"), _math_unary("atan"), _math_unary("asin"), _math_unary("acos")
sinh, cosh, asinh, acosh, atanh = (_math_unary(n) for n in ("sinh", "cosh", "asinh", "acosh", "atanh"))


def atan2(input, other):  # noqa: A002
    """The angle of (other, input) in (-pi, pi]; the two broadcast together first (the op takes equal shapes)."""
    x, y = F._tensor_pair(input, other, "atan2")
    x, y = F._floating(x), F._floating(y)
    shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
    return apply_op("atan2", [expand(x, shape), expand(y, shape)])
