"""View semantics of local eager tensors, as OneFlow 0.9 has them: a view op's result shares its input's storage.

OneFlow v0.9.0 (`oneflow/core/framework/tensor_methods.cpp`, namespace `view`) makes the result of `reshape`/`view`
(when the strides allow), `slice` with `enable_view_slice` (basic indexing `x[1]`, `x[:, 2:5]`, `x[..., None]`),
`narrow` (and so `split`/`chunk`/`unbind`), `select`, `squeeze`/`unsqueeze`, `expand`, `transpose`/`permute`/`T`,
`diagonal`, `as_strided` and `unfold_tensor` a tensor on the SAME storage as its input, with its own shape, strides
and storage offset — but only where `view::IsViewApplicable(input)` holds: a local tensor, not in lazy mode
(nn.Graph), with at least one element, and `ONEFLOW_DISABLE_VIEW` unset. Global tensors and graph tensors keep
value semantics (each result owns its memory). `detach()` (and `.data`) share the storage too.

Here a local tensor's value is one array (`_value.pieces[0]`). A view is a Tensor whose array is a strided numpy
(CuPy) view of its ROOT's array — the tensor that owns the storage, never itself a view — described by its
OneFlow layout `(shape, stride, offset)` in elements of the root's C-contiguous array (`_view_layout`): exactly
what OneFlow reports as `stride()` / `storage_offset()` / `is_contiguous()`. A root keeps weak references to its
views (`_views`). Writes through a view reach the root and every other view because they are the same memory.

In-place ops (`_global/inplace.py: rebind`) and autograd:

* without a recorded gradient an in-place op writes into the storage: every view and the root see it;
* with a recorded gradient on a VIEW (torch's CopySlices; OneFlow 0.9 records the op on the view alone, so the
  base's gradient misses it — the correct behaviour is taken here): the root gets new storage, a copy of the old one
  with the view's region replaced by the op's result (so values saved by earlier ops for their backward are not
  changed under them, the guarantee plain tensors have: their in-place ops with gradients take a new value), the
  root's history becomes a `copy_slices_backward` node (the gradient of the old root is the incoming one with the
  view's region zeroed; the op's result gets that region), and every view of the root is re-made on the new storage
  with an `as_strided_backward` node reading the root's new history;
* with a recorded gradient on a ROOT that has views: the root takes the op's result (as any tensor does) and its
  views are re-made on it as above;
* an in-place op with gradients on a view of a leaf that requires grad is refused with torch's error ("a view of a
  leaf Variable that requires grad is being used in an in-place operation."): its gradient could not be routed.

`detach()` views are views without autograd (torch's non-differentiable views): an in-place op with gradients on
one changes the root's values but not the root's history.

How the view ops use this module: each runs its op as before (the op records its own gradient, so autograd, the
second derivatives included, is that of the op) and `make(x, out, layout)` then puts the view of x's storage in
place of the kernel's result; basic indexing without gradients builds the view without an op (`view_value`).
`as_strided` reads its input's storage (the root), as OneFlow's and torch's do; `tensor_split`/`hsplit`/`vsplit`
slice without views (OneFlow's `enable_view_slice=false`).

Strided memory: a strided array given to `from_numpy` / `from_dlpack` makes a tensor that is a view, with the
array's strides, of a hidden root whose storage is the memory the array spans (`creation._sharing`; OneFlow 0.9's
LocalTensorSharedNumpyDataFunctor keeps the strides), so its `stride()`, its views and its writes are the array's.
A kernel's strided result (numpy and CuPy give `x.T * 2` a transposed layout) is put in C order before its first
view or `numpy()` (`settle`): OneFlow's outputs are contiguous. Not views here: tensors over foreign memory in
another order (`_foreign_layout`: an array received from another process): their view ops copy.

Tensors on a GPU have views as CPU ones do (0.9's view ops are device-agnostic): a CuPy array is a strided view of
device memory as a numpy array is of host memory, and `strided` makes one through the array's own module
(`cupy.lib.stride_tricks.as_strided`: no copy, no launch). Nothing here is numpy-only on the device path: the
gradients of views are placed through their layout (`strided(...)[...] = dy`), summed with the ordered scatter-add
of kernels/indexing.py where a layout's elements share storage (CuPy's `add.at` sums with atomics, in an order that
changes from run to run). Checked on the strict fake device (tests/test_tensor_views_device.py) against the same
programs on the CPU; not yet run on a GPU.
"""
import math
import os
import weakref

import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import indexing
from oneflow_compat.runtime import autograd, context, global_eager
from oneflow_compat.runtime.graph_trace import LazyValue

# (below the Tensor class: `tensor.py`, `inplace.py` and the functional ops call this module, which imports none of
# them)

_DISABLED = None


def view_disabled():
    """`ONEFLOW_DISABLE_VIEW` (read once, as OneFlow's `IsEnvViewDisabled` reads it once per process)."""
    global _DISABLED
    if _DISABLED is None:
        _DISABLED = os.environ.get("ONEFLOW_DISABLE_VIEW", "").strip().lower() in ("1", "true", "yes", "on", "y")
    return _DISABLED


def applicable(x):
    """OneFlow's `view::IsViewApplicable`: a local eager tensor with at least one element (views enabled)."""
    v = x._value
    if x._placement is not None or isinstance(v, LazyValue) or _tracing() or view_disabled():
        return False
    for d in v.meta.shape:
        if d == 0:
            return False
    # the root's array must be its storage in OneFlow's layout (C order): a kernel's strided output is re-laid out
    # first (`settle`); a tensor over foreign memory in another order gets copies from view ops instead. Host
    # (numpy) and device (CuPy) arrays alike: a CuPy array is a strided view of device memory as a numpy array is
    # of host memory
    root = x._view_root if x._view_root is not None else x
    piece = settle(root)
    return (isinstance(piece, np.ndarray) or devices.is_device_array(piece)) and piece.flags.c_contiguous


def settle(root):
    """The array of local eager tensor `root` (not a view), first put in C order where it is a kernel's strided
    result (numpy and CuPy give an elementwise op on transposed inputs a transposed result: `x.T * 2`), which is
    not OneFlow's layout: in 0.9 every op's output is contiguous, `stride()` says so, its views share it and
    `numpy()` is an array over it with those strides (api/python/utils/tensor_utils.h:64-92). The Value's array is
    replaced (a `detach()`ed twin, which holds the same Value, follows); a tensor over foreign memory
    (`_foreign_layout`: an array received from another process) keeps its array."""
    pieces = root._value.pieces
    piece = pieces[0]
    if root._foreign_layout or root._views or getattr(piece, "flags", None) is None or piece.flags.c_contiguous:
        return piece
    if not (isinstance(piece, np.ndarray) or devices.is_device_array(piece)):
        return piece
    piece = pieces[0] = devices.module_of(piece).ascontiguousarray(piece)
    return piece


def _tracing():
    """Whether an nn.Graph traces its build in this thread (`lazy.tracer_active`): its ops are lazy."""
    return bool((context.THREAD.context or context.PROCESS).graph_traces)


# --- layouts: (shape, stride, offset) in elements of the root's storage ------------------------------------------
def contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def layout_of(x):
    """x's layout: its view layout, else its own contiguous one."""
    lay = x._view_layout
    if lay is not None:
        return lay
    shape = tuple(x._value.meta.shape)
    return shape, contiguous_strides(shape), 0


def is_contiguous_layout(shape, stride):
    """torch's / OneFlow's `is_contiguous`: size-1 dims are free, an empty tensor is contiguous whatever the
    strides of its other dims (OneFlow 0.9's core/common/tensor_meta.cpp IsContiguous)."""
    if 0 in shape:
        return True
    expected = 1
    for n, s in zip(reversed(shape), reversed(stride)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def slice_layout(lay, slices):
    """`slices`: (start, stop, step) per dim."""
    shape, stride, offset = lay
    new_shape, new_stride = [], []
    for (start, stop, step), n, s in zip(slices, shape, stride):
        offset += start * s
        new_shape.append(len(range(start, stop, step)))
        new_stride.append(s * step)
    return tuple(new_shape), tuple(new_stride), offset


def select_layout(lay, dim, index):
    shape, stride, offset = lay
    return shape[:dim] + shape[dim + 1:], stride[:dim] + stride[dim + 1:], offset + index * stride[dim]


def permute_layout(lay, perm):
    shape, stride, offset = lay
    return tuple(shape[p] for p in perm), tuple(stride[p] for p in perm), offset


def unsqueeze_layout(lay, dim):
    """OneFlow's `view::Unsqueeze`: the new dim's stride is shape[dim] * stride[dim] (1 at the end)."""
    shape, stride, offset = lay
    s = shape[dim] * stride[dim] if dim < len(shape) else 1
    return shape[:dim] + (1,) + shape[dim:], stride[:dim] + (s,) + stride[dim:], offset


def squeeze_layout(lay, dims):
    shape, stride, offset = lay
    keep = [i for i in range(len(shape)) if i not in dims]
    return tuple(shape[i] for i in keep), tuple(stride[i] for i in keep), offset


def expand_layout(lay, target):
    """OneFlow's `view::Expand` (torch's `inferExpandGeometry`): an expanded dim gets stride 0; a new leading dim
    of size 1 the stride the dim after it spans."""
    shape, stride, offset = lay
    lead = len(target) - len(shape)
    new_stride = [0] * len(target)
    for i in range(len(target) - 1, -1, -1):
        j = i - lead
        if j >= 0:
            n, s = shape[j], stride[j]
        else:
            n, s = 1, (target[i + 1] * new_stride[i + 1] if i + 1 < len(target) else 0)
        new_stride[i] = s if n == target[i] else 0
    return tuple(target), tuple(new_stride), offset


def diagonal_layout(lay, offset_, dim1, dim2):
    """OneFlow's `view::Diagonal`: the two dims removed, the diagonal appended as the last dim."""
    shape, stride, offset = lay
    if offset_ >= 0:
        length = max(0, min(shape[dim1], shape[dim2] - offset_))
        offset += offset_ * stride[dim2]
    else:
        length = max(0, min(shape[dim1] + offset_, shape[dim2]))
        offset -= offset_ * stride[dim1]
    keep = [i for i in range(len(shape)) if i not in (dim1, dim2)]
    return (tuple(shape[i] for i in keep) + (length,), tuple(stride[i] for i in keep) + (stride[dim1] + stride[dim2],),
            offset)


def unfold_layout(lay, dimension, size, step):
    """OneFlow's `view::UnfoldTensor`."""
    shape, stride, offset = lay
    if not shape:
        return (size,), (1,), offset
    n = (shape[dimension] - size) // step + 1
    new_shape = shape[:dimension] + (n,) + shape[dimension + 1:] + (size,)
    new_stride = stride[:dimension] + (stride[dimension] * step,) + stride[dimension + 1:] + (stride[dimension],)
    return new_shape, new_stride, offset


def reshape_strides(old_shape, old_stride, new_shape):
    """The strides of `new_shape` over a tensor laid out as (old_shape, old_stride), or None when no strides can
    express it (a copy is needed): torch's `computeStride`, which OneFlow's `ComputeStride` follows."""
    if not old_shape:  # a 0-d tensor: every dim of the new shape is 1
        return (1,) * len(new_shape)
    if _numel(old_shape) == 0:
        return contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1] if old_stride else 1
    tensor_numel, view_numel = 1, 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(new_stride)


# --- making views ----------------------------------------------------------------------------------------------
def root_of(x):
    return x._view_root if x._view_root is not None else x


def _root_storage(root):
    """The root's array as its flat storage (C-contiguous, as `applicable` asked), or None where it is not."""
    piece = root._value.pieces[0]
    return piece.reshape(-1) if piece.flags.c_contiguous else None


def strided(flat, lay):
    """The array of layout `lay` over the flat storage `flat` (a view of it: the same memory)."""
    shape, stride, offset = lay
    item = flat.dtype.itemsize
    if isinstance(flat, np.ndarray):  # (the ndarray constructor over the storage: a few times faster than as_strided)
        return np.ndarray(shape, flat.dtype, buffer=flat, offset=offset * item, strides=[s * item for s in stride])
    # a device array: its module's `as_strided` (CuPy's `cupy.lib.stride_tricks.as_strided(x, shape, strides)`, an
    # ndarray over x's memory pointer: no copy, no launch), from the storage's element `offset` on
    return devices.module_of(flat).lib.stride_tricks.as_strided(flat[offset:], tuple(shape),
                                                               tuple(s * item for s in stride))


def make(x, out, lay, differentiable=True):
    """`out` (the view op's result on x, computed by the op as for any tensor, its autograd recorded) made a view
    of x's root with layout `lay` when views apply to x (`lay` None: no view is possible, a reshape that needs a
    copy); otherwise `out` is made to own its memory (a kernel may return a numpy view of its input, and a global
    tensor has no views in OneFlow)."""
    if out is x:
        return out
    if lay is None or not applicable(x):  # not a view here: a result of its own
        _own_memory(x, out)
        return out
    if tuple(lay[0]) != tuple(out._value.meta.shape):
        raise AssertionError("view of %s: layout %s does not give the op's shape %s"
                             % (tuple(x._value.meta.shape), lay, tuple(out._value.meta.shape)))
    if out._view_root is not None:  # (a composite's result, a view of some intermediate: now x's)
        _unlink(out)
    root = root_of(x)
    flat = _root_storage(root)
    out._value.pieces[0] = strided(flat, lay)
    register(root, out, lay, differentiable and x._view_differentiable)  # (a view of a detached view: neither)
    return out


def unview(out):
    """`out` made to own its memory (OneFlow 0.9 runs a copying op there: `tensor_split`'s slices)."""
    if out._view_root is not None:
        _unlink(out)
        out._value.pieces[0] = out._value.pieces[0].copy()
    return out


def view_value(x, lay, meta):
    """The Value of a view of local eager tensor x with layout `lay` and `meta` (made without running an op: x
    needs no gradient); the caller wraps it and `register`s the tensor."""
    v = x._value
    return global_eager.Value(meta, v.placement, v.sbp, [strided(_root_storage(root_of(x)), lay)], None)


def register(root, view, lay, differentiable=True):
    view._view_root = root
    view._view_layout = lay
    view._view_differentiable = differentiable
    views = root._views
    if views is None:
        views = root._views = {}
    key = id(view)
    views[key] = weakref.ref(view, lambda _ref, table=views, k=key: table.pop(k, None))


def forget(root):
    """`root`'s storage was replaced outside an in-place op (`.data = ...`, `_set_value`): its views keep the old
    memory, as standalone tensors."""
    views = root._views
    if not views:
        return
    for ref in list(views.values()):
        view = ref()
        if view is not None:
            _unlink(view)
    views.clear()


def _unlink(view):
    root = view._view_root
    if root is not None and root._views:
        root._views.pop(id(view), None)
    view._view_root = None
    view._view_layout = None


def _own_memory(x, out):
    v = x._value
    if isinstance(v, LazyValue) or isinstance(out._value, LazyValue):
        return
    pieces = out._value.pieces
    for i, p in enumerate(pieces):
        if any(_shares(p, q, v.placement) for q in v.pieces):
            pieces[i] = p.copy()


def _shares(a, b, placement):
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.may_share_memory(a, b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    # device arrays: the array module's bounds test (CuPy's reads the arrays' pointers and strides on the host)
    return a is b or bool(global_eager.xp(placement).may_share_memory(a, b))


# --- reported layout ---------------------------------------------------------------------------------------------
def stride(x):
    if x._view_layout is not None and x._view_root is not None:
        return x._view_layout[1]
    return contiguous_strides(tuple(x._value.meta.shape))


def storage_offset(x):
    if x._view_layout is not None and x._view_root is not None:
        return x._view_layout[2]
    return 0


def is_contiguous(x):
    lay = x._view_layout
    if lay is None or x._view_root is None:
        return True
    return is_contiguous_layout(lay[0], lay[1])


# --- in-place ops on views and on roots with views (called by `inplace.rebind`) ----------------------------------
LEAF_VIEW_MESSAGE = "a view of a leaf Variable that requires grad is being used in an in-place operation."


def involved(t):
    """Whether an in-place op on `t` concerns views: `t` is one, or has live ones."""
    return t._view_root is not None or bool(t._views)


def rebind(self, result, same):
    """The in-place op on `self` (a view, or a root with views) whose value is `result`, when a gradient was
    recorded or the layout changed (see the module docstring). Returns self."""
    if not same:
        return _reshaped(self, result)
    root = self._view_root
    if root is None:  # a root with views: it takes the result, its views follow it
        _adopt(self, result)
        remake(self)
        return self
    diff = self._view_differentiable
    base = root._storage_owner() if root._storage_owner is not None else None  # (from_numpy of a strided array)
    base = root if base is None or base is self else base
    if diff and autograd.is_grad_enabled() and base.requires_grad_flag and base._node is None:
        raise RuntimeError(LEAF_VIEW_MESSAGE)
    rv = root._value
    new = rv.pieces[0].copy()  # new storage: the old one may be saved for a backward pass
    lay = self._view_layout
    strided(new.reshape(-1), lay)[...] = result._value.pieces[0]
    old_edge = root._edge()
    root._value = global_eager.Value(rv.meta, rv.placement, rv.sbp, [new], rv.lk)
    if diff:
        node = autograd.FunctionNode("copy_slices_backward", [old_edge, result._edge()],
                                     _copy_slices_backward(rv, result._value.meta, lay))
        root.requires_grad_flag, root._node, root._out_index = True, node, 0
    remake(root)
    if not diff:  # a detached view: its own history is the op's, the root's is unchanged
        self._node, self._out_index, self.requires_grad_flag = result._node, result._out_index, \
            result.requires_grad_flag
    return self


def _adopt(self, result):
    self._value, self._placement, self._sbp = result._value, result._placement, result._sbp
    self._node, self._out_index, self.requires_grad_flag = result._node, result._out_index, \
        result.requires_grad_flag


def _reshaped(self, result):
    """An in-place op that changed self's shape (`unsqueeze_`, `t_`): self takes the result; a view stays a view
    when the result is one of the same root, a root's old views keep its memory as standalone tensors."""
    if self._view_root is not None:
        _unlink(self)
    else:
        forget(self)
    _adopt(self, result)
    r_root = result._view_root
    if r_root is not None and r_root is not self:
        register(r_root, self, result._view_layout, result._view_differentiable)
    elif r_root is self:  # the result views self's own storage: self keeps it as a root of that shape
        self._value = global_eager.Value(result._value.meta, result._value.placement, result._value.sbp,
                                         [global_eager.xp(result._value.placement).ascontiguousarray(
                                             result._value.pieces[0])])
    return self


def remake(root):
    """Every live view of `root` re-made on its current storage, with an `as_strided_backward` node reading the
    root's history when the view is differentiable and the root records gradients."""
    views = root._views
    if not views:
        return
    rv = root._value
    flat = _root_storage(root)
    if flat is None:  # the root took a strided result: its views keep the memory they had, standalone
        forget(root)
        return
    for ref in list(views.values()):
        view = ref()
        if view is None:
            continue
        lay = view._view_layout
        if _numel(rv.meta.shape) <= _max_position(lay):  # (the root changed its shape: no longer its view)
            _unlink(view)
            continue
        vv = view._value
        view._value = global_eager.Value(vv.meta, rv.placement, rv.sbp, [strided(flat, lay)], vv.lk)
        if view._view_differentiable and root.requires_grad_flag:
            node = autograd.FunctionNode("as_strided_backward", [root._edge()],
                                         _view_backward(rv, lay, _numel(rv.meta.shape)))
            view.requires_grad_flag, view._node, view._out_index = True, node, 0


def _numel(shape):
    return math.prod(shape)


def _max_position(lay):
    shape, stride, offset = lay
    return offset + sum((n - 1) * s for n, s in zip(shape, stride) if n > 0)


def _positions(lay):
    """The storage position of each element of a view of layout `lay` (host int64, the view's shape)."""
    shape, stride, offset = lay
    pos = np.full(shape, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, stride)):
        pos = pos + (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - k - 1))
    return pos


def overlapping(lay):
    """Whether two elements of layout `lay` share a storage position (an expanded dim's stride 0, an unfold's
    windows, an as_strided): then a gradient for the storage sums theirs, else it is placed."""
    dims = sorted((s, n) for n, s in zip(lay[0], lay[1]) if n > 1)
    span = 0  # the storage positions the dims of smaller strides reach, less one
    for s, n in dims:
        if s <= span:
            return True
        span += (n - 1) * s
    return False


def _view_backward(root_value, lay, n):
    """Gradient of a view for its root: the view's gradient at its storage positions, summed where elements share
    one (in the order of the view's elements, numpy's `add.at`; on a device the ordered scatter-add of
    kernels/indexing.py, the same sums run after run where CuPy's atomics would change the last bits)."""
    meta, placement, sbp = root_value.meta, root_value.placement, root_value.sbp
    positions = _positions(lay).reshape(-1) if overlapping(lay) else None

    def backward(dys):
        dy = dys[0].pieces[0]
        xp = global_eager.xp(placement)
        flat = xp.zeros(n, dtype=meta.dtype.np)
        if positions is None:
            strided(flat, lay)[...] = dy
        else:
            values = xp.ascontiguousarray(dy).reshape(-1, 1)
            indexing.add_at_rows(xp, flat.reshape(n, 1), positions if xp is np else xp.asarray(positions), values)
        return [global_eager.Value(meta, placement, sbp, [flat.reshape(meta.shape)])]

    return backward


def _copy_slices_backward(root_value, result_meta, lay):
    """Gradients of (old root, in-place result) for the root that now holds the result in the view's region: the
    root's gradient with that region zeroed, and the region's gradient (torch's CopySlices: the gradient read
    through the view's layout, then its region set to zero)."""
    meta, placement, sbp = root_value.meta, root_value.placement, root_value.sbp

    def backward(dys):
        dy = dys[0]
        if dy is None:
            return [None, None]
        xp = global_eager.xp(placement)
        flat = xp.array(dy.pieces[0], copy=True).reshape(-1)
        window = strided(flat, lay)
        region = xp.array(window, copy=True).reshape(result_meta.shape)
        window[...] = 0
        return [global_eager.Value(meta, placement, sbp, [flat.reshape(meta.shape)]),
                global_eager.Value(TensorMeta(tuple(result_meta.shape), result_meta.dtype), placement, sbp,
                                   [region])]

    return backward


# --- contiguity ---------------------------------------------------------------------------------------------------
def contiguous_(x):
    """In-place `contiguous`: a non-contiguous view takes a contiguous copy of its values and stops being a view
    (OneFlow 0.9 `Tensor.contiguous_`)."""
    if is_contiguous(x):
        return x
    v = x._value
    _unlink(x)
    x._value = global_eager.Value(v.meta, v.placement, v.sbp,
                                  [global_eager.xp(v.placement).ascontiguousarray(v.pieces[0])], v.lk)
    return x
