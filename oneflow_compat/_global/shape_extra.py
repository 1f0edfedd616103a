"""OneFlow 0.9's shape, joining and splitting functions of its API reference (docs/source/oneflow.rst, tensor.rst at
v0.9.0) that `functional.py` and `tensor_functions.py` lack: `atleast_1d/2d/3d`, `hstack`, `vstack`, `row_stack`,
`dstack`, `column_stack`, `tensor_split`, `hsplit`, `vsplit`, `movedim`, `select`, `swapaxes` / `swapdims`,
`diagonal`, `broadcast_shapes`, `broadcast_tensors`, `broadcast_to`, `as_strided`.

Each is a composition of registered ops (reshape, slice, concat, transpose, expand, gather), so it runs eagerly, in
nn.Graph and on global tensors through those ops' SBP signatures, and autograd follows their rules. Signatures,
defaults and error texts are OneFlow v0.9.0's (oneflow/core/functional/functional_api.yaml and
oneflow/core/functional/impl/{array,math}_functor.cpp).
"""
import builtins

import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat import sbp as flow_sbp
from oneflow_compat._global import creation, functional as F, tensor_functions as TF, views
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.size import Size
from oneflow_compat._global.tensor import Tensor


def host_constant(values, like, dtype):
    """A tensor of host values (positions, a scalar operand) on `like`'s device, or broadcast on its placement: made
    from the full value directly (creation._from_full, as arange / eye), so that inside nn.Graph a global one is a
    constant of the graph, where `tensor(...).to_global(...)` of a local tensor is refused."""
    values = np.asarray(values).astype(dtype.np)
    if not like.is_global:
        return creation.new_tensor_like(values, like, dtype=dtype)
    placement, ir_sbp, shown = creation._layout(like.placement, [flow_sbp.broadcast] * len(like.sbp), values.ndim,
                                                "constant")
    return creation._from_full(values, dtype, placement, ir_sbp, shown, False)


def _tensors(tensors, what):
    if isinstance(tensors, Tensor):
        return [tensors]
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("%s(): expects a non-empty TensorList" % what)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError("%s(): expected Tensors, got %s" % (what, type(t).__name__))
    return tensors


# --- at least n dims ----------------------------------------------------------------------------------------------
def _atleast(n, args):
    """One tensor gives one tensor; several (or one list) give a tuple, as OneFlow's AtLeast{1,2,3}D (a TensorTuple
    comes back to Python as a tuple: oneflow/api/python/functional/common.h, v0.9.0)."""
    single = len(args) == 1 and isinstance(args[0], Tensor)
    tensors = _tensors(args[0] if len(args) == 1 else args, "atleast_%dd" % n)
    out = []
    for t in tensors:
        if t.ndim == 0:
            t = F.reshape(t, (1,) * n)
        elif t.ndim == 1 and n >= 2:
            t = F.unsqueeze(t, 0)  # (N,) -> (1, N)
            if n == 3:
                t = F.unsqueeze(t, -1)  # -> (1, N, 1)
        elif t.ndim == 2 and n == 3:
            t = F.unsqueeze(t, -1)  # (M, N) -> (M, N, 1)
        out.append(t)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each input with at least 1 dim (a 0-dim tensor becomes shape (1,)); several inputs give a tuple."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each input with at least 2 dims: (N,) -> (1, N), a scalar -> (1, 1)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each input with at least 3 dims: (N,) -> (1, N, 1), (M, N) -> (M, N, 1), a scalar -> (1, 1, 1)."""
    return _atleast(3, tensors)


# --- stacking ------------------------------------------------------------------------------------------------------
def hstack(tensors):
    """Concatenated along dim 1 (dim 0 when the inputs are 1-D), after atleast_1d."""
    ts = atleast_1d(_tensors(tensors, "hstack"))
    return F.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """Concatenated along dim 0 after atleast_2d (1-D inputs become rows)."""
    return F.cat(atleast_2d(_tensors(tensors, "vstack")), 0)


def dstack(tensors):
    """Concatenated along dim 2 after atleast_3d."""
    return F.cat(atleast_3d(_tensors(tensors, "dstack")), 2)


def column_stack(tensors):
    """0-dim and 1-D inputs become columns (N, 1); then concatenated along dim 1."""
    ts = []
    for t in _tensors(tensors, "column_stack"):
        if t.ndim <= 1:
            t = F.reshape(t, (t.numel(), 1))
        ts.append(t)
    return F.cat(ts, 1)


row_stack = vstack  # an alias (OneFlow's RowStack and VStack concatenate alike)


# --- splitting -----------------------------------------------------------------------------------------------------
def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """`sections` (an int) pieces along dim, the first size % sections of them one longer; or the pieces between
    the listed indices (views in OneFlow; here slices)."""
    d = TF._dim(dim, input.ndim, "tensor_split")
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise RuntimeError("number of sections must be larger than 0, got ,%d);" % k)
        small, extra = divmod(n, k)
        bounds, start = [], 0
        for i in range(k):
            stop = start + small + (1 if i < extra else 0)
            bounds.append((start, stop))
            start = stop
    else:
        cuts = [int(i) for i in indices_or_sections]
        bounds, start = [], 0
        for c in cuts + [n]:
            c = c + n if c < 0 else c
            c = builtins.min(builtins.max(c, start), n)
            bounds.append((start, c))
            start = c
    # OneFlow 0.9's TensorSplitVecFunctor slices with enable_view_slice=false: the pieces own their memory
    return tuple(views.unview(TF._slice_along(input, d, a, b)) for a, b in bounds)


def _split_dim(input, indices_or_sections, dim, name, min_ndim):  # noqa: A002
    if input.ndim < min_ndim:
        raise RuntimeError("flow.%s requires a tensor with at least %d dimension, but got a tensor with %d "
                           "dimensions!" % (name, min_ndim, input.ndim))
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise RuntimeError("indices_or_sections must greater than 0")
        if input.shape[dim] % k:
            raise RuntimeError("flow.%s attempted to split along dimension %d, but the size of the dimension %d is "
                               "not divisible by the split_size %d!" % (name, dim, input.shape[dim], k))
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):  # noqa: A002
    """tensor_split along dim 1 (dim 0 for a 1-D input); an int must divide that dim."""
    return _split_dim(input, indices_or_sections, 0 if input.ndim == 1 else 1, "hsplit", 1)


def vsplit(input, indices_or_sections):  # noqa: A002
    """tensor_split along dim 0 of an input with at least 2 dims; an int must divide that dim."""
    return _split_dim(input, indices_or_sections, 0, "vsplit", 2)


# --- dims: move, select, swap, diagonal ---------------------------------------------------------------------------
def movedim(input, source, destination):  # noqa: A002
    """The dims `source` moved to the positions `destination`, the others keeping their order."""
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError("movedim: Invalid source or destination dims: source (%d dims ) should contain the same "
                           "number of dims as destination (%d dims)" % (len(src), len(dst)))
    nd = input.ndim
    src = [TF._dim(s, nd, "movedim") for s in src]
    dst = [TF._dim(s, nd, "movedim") for s in dst]
    if len(set(src)) != len(src):
        raise RuntimeError("repeated dim in `source` (%s)" % (list(source),))
    if len(set(dst)) != len(dst):
        raise RuntimeError("repeated dim in `destination` (%s)" % (list(destination),))
    perm = [-1] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return F.permute(input, perm)


def select(input, dim, index):  # noqa: A002
    """input[..., index, ...] at `dim` (that dim removed)."""
    if input.ndim == 0:
        raise RuntimeError("select() cannot be applied to a 0-dim tensor.")
    d = TF._dim(dim, input.ndim, "select")
    size = input.shape[d]
    if not -size <= index < size:
        raise IndexError("Index out of range (expected to be in range of [%d,%d], but got %d)"
                         % (-size, size - 1, index))
    return F.index(input, (slice(None),) * d + (int(index),))


def swapaxes(input, axis0, axis1):  # noqa: A002
    """input with dims axis0 and axis1 exchanged (the same as transpose; `swapdims` is this function)."""
    TF._dim(axis0, input.ndim, "swapaxes")
    TF._dim(axis1, input.ndim, "swapaxes")
    return F.transpose(input, axis0, axis1)


swapdims = swapaxes  # an alias: swapdims(input, dim0, dim1) exchanges the same dims


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """The diagonal `offset` of the matrices spanned by dims dim1 and dim2 (above the main one when offset > 0),
    as the last dim of the output (OneFlow 0.9 `diagonal(x, offset=0, dim1=0, dim2=1)`).

    The two dims are moved last and flattened; the diagonal is then a strided slice (step m + 1), so the gradient
    and the SBP signatures are those of reshape and slice."""
    if input.ndim < 2:
        raise RuntimeError("diagonal(): the input must have at least 2 dimensions, got %d" % input.ndim)
    a, b = TF._dim(dim1, input.ndim, "diagonal"), TF._dim(dim2, input.ndim, "diagonal")
    if a == b:
        raise RuntimeError("diagonal dimensions cannot be identical %d, %d" % (dim1, dim2))
    x = movedim(input, [a, b], [-2, -1])
    n, m = x.shape[-2], x.shape[-1]
    lead = tuple(x.shape[:-2])
    length = builtins.max(0, builtins.min(n, m - offset) if offset >= 0 else builtins.min(n + offset, m))
    if length == 0:
        return views.unview(F.index(F.reshape(x, lead + (n * m,)), (Ellipsis, slice(0, 0))))
    start = offset if offset >= 0 else -offset * m
    flat = F.reshape(x, lead + (n * m,))
    out = F.index(flat, (Ellipsis, slice(start, start + (length - 1) * (m + 1) + 1, m + 1)))
    # a view of a local eager input (OneFlow's `view::Diagonal`), its gradient that of the ops above
    lay = views.diagonal_layout(views.layout_of(input), offset, a, b) if views.applicable(input) else None
    return views.make(input, out, lay)


# --- broadcasting -------------------------------------------------------------------------------------------------
def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (flow.Size), without making tensors."""
    if not shapes:
        raise RuntimeError("shapes should not be empty.")
    sizes = [(int(s),) if isinstance(s, (int, np.integer)) else tuple(int(d) for d in s) for s in shapes]
    nd = builtins.max(len(s) for s in sizes)
    out = [1] * nd
    for s in sizes:
        for j, d in enumerate(s):
            k = nd - len(s) + j
            if out[k] == 1:
                out[k] = d
            elif d != 1 and d != out[k]:
                raise RuntimeError("input and other can't be broadcasted to a single shape. [input's shape: %s, "
                                   "other's shape: %s]." % (Size(out), Size(s)))
    return Size(out)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape."""
    if not tensors or (len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) and not tensors[0]):
        raise RuntimeError("tensors should not be empty.")  # OneFlow 0.9's words (array_functor.cpp)
    ts = _tensors(tensors[0] if len(tensors) == 1 and not isinstance(tensors[0], Tensor) else tensors,
                  "broadcast_tensors")
    shape = tuple(broadcast_shapes(*[tuple(t.shape) for t in ts]))
    return tuple(TF.expand(t, shape) for t in ts)


def broadcast_to(input, shape):  # noqa: A002
    """input expanded to `shape` (-1 keeps a dim), as Tensor.expand."""
    return TF.expand(input, tuple(shape))


# --- as_strided ----------------------------------------------------------------------------------------------------
def as_strided(input, size, stride, storage_offset=0):  # noqa: A002
    """The view of input's storage with the given size, strides and storage offset (a local eager tensor's storage
    is its view root's; a global tensor's, its contiguous values).

    The element positions depend on the shapes alone, so they are computed here once and gathered from the
    flattened input by the gather op (its gradient scatters back, positions read twice adding up)."""
    size = [int(s) for s in size]
    stride = [int(s) for s in stride]
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    for s, t in zip(size, stride):
        if s < 0:
            raise RuntimeError("Trying to create tensor with negative dimension%d" % s)
        if t < 0:
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides:%d" % t)
    positions = np.full(tuple(size), int(storage_offset), dtype=np.int64)
    for k, (s, t) in enumerate(zip(size, stride)):
        positions = positions + (np.arange(s, dtype=np.int64) * t).reshape((s,) + (1,) * (len(size) - k - 1))
    # a local eager input is a view of its storage (its root): OneFlow's `view::AsStrided` counts the positions
    # in that storage, so they are read from the root (through which a view's gradient goes anyway; a detached
    # view's storage is read detached); elsewhere the input is its own storage
    source, lay = input, None
    if views.applicable(input):
        root = views.root_of(input)
        source = root if input._view_differentiable else root.detach()
        lay = (tuple(size), tuple(stride), int(storage_offset))
    n = source.numel()
    if positions.size and int(positions.max()) >= n:
        raise RuntimeError("as_strided: setStorage: sizes %s, strides %s, storage offset %d require %d elements, "
                           "but the input has %d" % (size, stride, storage_offset, int(positions.max()) + 1, n))
    flat = F.reshape(source, (n,))
    index = host_constant(positions.reshape(-1), source, dtypes.int64)
    out = F.reshape(apply_op("gather", [flat, index], {"axis": 0}), tuple(size))
    return views.make(input, out, lay)
