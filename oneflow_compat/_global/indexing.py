"""`tensor[key]` and `tensor[key] = value` with numpy's (and OneFlow's) rules, for local and global tensors.

Reading: ints, slices, `...` and `None` are a view op (`functional.index`: `slice` + `reshape`). Index tensors,
lists and boolean masks ("advanced" indices) are then one `gather` op along a flattened axis: the advanced dims
of the sliced tensor are moved to the front and merged, the broadcast index tensors become one linear index
(an index is data, never differentiated: computed on the host, or, for integer index tensors on the device of a
local device tensor, on that device without reading anything back — an index out of bounds then fails with the
same IndexError at the next fetch, kernels/checks.py), and the gathered dims go back where numpy puts them (in
place of the advanced dims when those are adjacent, else first). So reading is differentiable and runs on every
layout through the op's SBP signatures.

Writing (`__setitem__`) updates the tensor's storage in place: on the local array directly; on a global tensor
every rank applies the assignment to the logical value and keeps its own piece (a collective: every rank of the
world runs it, as OneFlow's global setitem).
"""
import builtins

import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.kernels import checks
from oneflow_compat._global import creation, functional as F
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import BOOL, Tensor


def _is_advanced(k):
    # (a tuple inside the key is a sequence index, as a list: OneFlow 0.9's UnpackIndexItem)
    return isinstance(k, (Tensor, list, tuple, np.ndarray))


def _host_index(k):
    """An advanced index as a numpy array (bool masks stay bool)."""
    if isinstance(k, Tensor):
        a = np.asarray(k.numpy())
        if a.dtype in (np.uint8, np.int8):  # OneFlow 0.9 reads an int8 / uint8 index tensor as a mask
            a = a != 0                      # (core/functional/tensor_index.cpp PrepareSliceIndices)
    else:
        a = np.asarray(k)
        if a.size == 0 and not isinstance(k, np.ndarray):  # `x[[]]`: an empty list is int64 (OneFlow's
            a = a.astype(np.int64)                           # InferScalarType), numpy's float64 otherwise
    if a.dtype == np.bool_:
        return a
    if a.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, uint8 or bool tensors, got %s" % a.dtype)
    return a.astype(np.int64)


def _device_index(k, x):
    """The int64 device array of an integer index tensor `k` on the device of the local tensor `x`, which `x[k]`
    uses where it is (no read back: its bounds are checked on the device, `_checked_on_device`); None where the
    index is read on the host (host data, a bool mask, whose true count sizes the result, a global tensor)."""
    if not (isinstance(k, Tensor) and k.is_local and x.is_local and k._device == x._device):
        return None
    piece = k._value.pieces[0] if k._value.pieces else None
    if not devices.is_device_array(piece) or piece.dtype.kind not in "iu" or piece.dtype.itemsize == 1:
        return None
    return piece.astype(np.int64, copy=False)


def _expand_key(key, ndim, x=None):
    """The key as a list of entries, `...` expanded, bool masks split into one integer index per dim they
    cover (as numpy's `nonzero`); integer index tensors on `x`'s device stay there (`_device_index`)."""
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    entries = []
    for k in key:
        if isinstance(k, Tensor) and k.is_lazy:  # an index computed inside nn.Graph.build: gathered in the job
            if k.dtype is BOOL or k.dtype is dtypes.uint8:
                raise IndexError("nn.Graph: indexing with a boolean mask computed inside build() is not supported "
                                 "(the result's shape would depend on the mask's values): use flow.masked_select "
                                 "outside the graph, or flow.where / a multiplication by the mask inside it")
            if k.dtype.is_floating:
                raise IndexError("tensors used as indices must be long, int, uint8 or bool tensors, got %s"
                                 % k.dtype.name)
            entries.append(("adv", k))
            continue
        on_device = _device_index(k, x) if x is not None else None
        if on_device is not None:
            entries.append(("adv", on_device))
        elif _is_advanced(k):
            a = _host_index(k)
            if a.dtype == np.bool_ and a.ndim:
                entries.extend(("adv", i) for i in np.nonzero(a))
            elif a.dtype == np.bool_:
                entries.append(("mask0", a))
            else:
                entries.append(("adv", a))
        else:
            entries.append(("basic", k))
    consumed = builtins.sum(1 for kind, k in entries if kind == "adv" or
                            (kind == "basic" and k is not None and k is not Ellipsis))
    if consumed > ndim:
        raise IndexError("Too many indices for tensor of dimension %d" % ndim)  # OneFlow 0.9's words
    out = []
    for kind, k in entries:
        if kind == "basic" and k is Ellipsis:
            out.extend([("basic", slice(None))] * (ndim - consumed))
        else:
            out.append((kind, k))
    return out


def as_index_tuple(key):
    """The key as the tuple of index items OneFlow 0.9 reads (api/python/functional/common.cpp PyUnpackTensorIndex,
    numpy's pre-1.23 rule): a list (any sequence but a tuple, a tensor or an array) shorter than 32 that holds a
    sequence, a slice, a tensor, `...` or None is a tuple of indices (`x[[[0, 1], [1, 0]]] == x[[0, 1], [1, 0]]`);
    any other key is one item."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and len(key) < 32 and builtins.any(
            isinstance(k, (list, tuple, np.ndarray, Tensor, slice)) or k is Ellipsis or k is None for k in key):
        return tuple(key)
    return (key,)


def _is_bool(k):
    return isinstance(k, (bool, np.bool_))


def _getitem_with_bools(x, key):
    """Python bools in the key are read as OneFlow 0.9 reads them (core/functional/tensor_index.cpp
    PrepareSliceIndices): together they add ONE axis, where the first of them stands, of size 1 if all are True and
    0 if any is False (numpy's result for its adjacent 0-d masks)."""
    first = next(i for i, k in enumerate(key) if _is_bool(k))
    plain = tuple(None if i == first else k for i, k in enumerate(key) if i == first or not _is_bool(k))
    y = getitem(x, plain)
    if builtins.all(bool(k) for k in key if isinstance(k, (bool, np.bool_))):
        return y
    if builtins.any(_is_advanced(k) for k in plain):
        raise IndexError("indexing with False beside tensor or list indices is not supported")
    consumed = builtins.sum(1 for k in plain if k is not None and k is not Ellipsis)
    out_dim = 0
    for i, k in enumerate(plain[:first]):
        if k is Ellipsis:
            out_dim += x.ndim - consumed
        elif k is None or isinstance(k, slice):
            out_dim += 1
    return F.index(y, tuple(slice(0, 0) if d == out_dim else slice(None) for d in range(y.ndim)))


def _scalar_bool_tensors(key):
    """A 0-d bool / uint8 / int8 index tensor is a Python bool in eager mode (OneFlow 0.9's tensor_index.cpp
    PrepareSliceIndices, IsValidScalarTensorIndex)."""
    from oneflow_compat._global import lazy

    if lazy.tracer_active() or not builtins.any(isinstance(k, Tensor) and k.ndim == 0 for k in key):
        return key
    return tuple(bool(k.item()) if isinstance(k, Tensor) and k.ndim == 0 and
                 (k.dtype is BOOL or k.dtype in (dtypes.uint8, dtypes.int8)) else k for k in key)


def _is_identity(x, key):
    """Whether `key` (slices and at most one `...`) takes every element of every dim of x in order: OneFlow 0.9's
    TensorGetItem then returns x itself, the same tensor (`x[:] is x`; is_identity in
    core/functional/impl/array_functor.cpp TensorGetItemFunctor @ v0.9.0; a 0-d result is never the identity)."""
    shape = x._value.meta.shape
    if not shape:
        return False
    dims = []
    for k in key:
        if k is Ellipsis:
            continue
        if k.__class__ is not slice:
            return False
        dims.append(k)
    if len(dims) > len(shape):
        return False
    if Ellipsis in key:  # (the slices before `...` are the first dims, those after it the last ones)
        at = key.index(Ellipsis)
        pairs = list(zip(shape, key[:at])) + list(zip(shape[len(shape) - (len(key) - at - 1):], key[at + 1:]))
    else:
        pairs = list(zip(shape, key))
    for n, k in pairs:
        if F.slice_indices(k, n) != (0, n, 1) or (k.step is not None and k.step != 1):
            return False
    return True


def getitem(x, key):
    key = _scalar_bool_tensors(as_index_tuple(key))
    if builtins.any(isinstance(k, (bool, np.bool_)) for k in key):
        return _getitem_with_bools(x, key)
    if not builtins.any(_is_advanced(k) for k in key):
        if _is_identity(x, key):
            return x
        return F.index(x, key)
    entries = _expand_key(key, x.ndim, x)
    if builtins.any(kind == "mask0" for kind, _ in entries):
        raise IndexError("indexing with a 0-d boolean mask is not supported")
    # 1. the basic part: advanced entries keep their dim whole for now
    basic, positions, arrays, out_dim = [], [], [], 0
    for kind, k in entries:
        if kind == "adv":
            basic.append(slice(None))
            positions.append(out_dim)
            arrays.append(k)
            out_dim += 1
        else:
            basic.append(k)
            if k is None or isinstance(k, slice):
                out_dim += 1
    y = F.index(x, tuple(basic))
    # 2. the advanced indices, broadcast together, wrapped, checked
    try:
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes %s"
                         % " ".join(str(a.shape) for a in arrays)) from None
    sizes = [y.shape[p] for p in positions]
    if builtins.any(isinstance(a, Tensor) for a in arrays):
        linear = _linear_in_graph(arrays, shape, sizes, y)
    elif builtins.any(devices.is_device_array(a) for a in arrays):
        linear = _checked_on_device(arrays, shape, sizes, positions)
    else:
        arrays = np.broadcast_arrays(*arrays)
        wrapped = []
        for a, n, p in zip(arrays, sizes, positions):
            if a.size and (a.max() >= n or a.min() < -n):
                if n == 0:  # OneFlow 0.9's words (user/ops/nd_index_slice_ops.cpp GatherNdOp)
                    raise IndexError("The index is out of bounds for dimension with size 0")
                bad = int(a.max() if a.max() >= n else a.min())
                raise IndexError(_OUT_OF_BOUNDS % (bad, p, n))
            wrapped.append(np.where(a < 0, a + n, a))
        linear = np.ravel_multi_index(wrapped, sizes) if wrapped[0].size else np.zeros(wrapped[0].shape, np.int64)
    index_shape = tuple(linear.shape)
    # 3. advanced dims first and merged, one gather, then the gathered dims where numpy puts them
    rest = [d for d in range(y.ndim) if d not in positions]
    z = F.permute(y, positions + rest) if positions + rest != list(range(y.ndim)) else y
    merged = int(np.prod(sizes))
    z = F.reshape(z, (merged,) + tuple(z.shape[len(positions):]))
    if isinstance(linear, Tensor):
        idx = linear
    else:
        idx = _index_tensor(linear.astype(np.int64).reshape(index_shape), z)
    out = apply_op("gather", [z, idx], {"axis": 0})
    adjacent = positions == list(range(positions[0], positions[0] + len(positions)))
    if adjacent and positions[0] > 0:
        nb = len(index_shape)
        front = positions[0]
        perm = list(range(nb, nb + front)) + list(range(nb)) + list(range(nb + front, out.ndim))
        out = F.permute(out, perm)
    return out


_OUT_OF_BOUNDS = "index %d is out of bounds for dimension %d with size %d"


def _linear_in_graph(arrays, shape, sizes, like):
    """The linear index (int64, `shape`) of advanced indices of which some are lazy tensors (computed inside
    nn.Graph.build), as ops of the job: each index wrapped (negative ones from the end) and scaled by its stride,
    summed. OneFlow 0.9's tensor_getitem in lazy mode likewise gathers with ops of the job
    (api/python/functional/indexing.cpp, functional::TensorGetItem @ v0.9.0); an index out of range fails when
    the job runs, in its gather kernel. Host indices beside it are constants of the job."""
    from oneflow_compat._global import lazy

    linear, stride = None, 1
    for a, n in reversed(list(zip(arrays, sizes))):
        if isinstance(a, Tensor):
            t = F.cast(a, dtypes.int64) if a.dtype is not dtypes.int64 else a
        else:
            with lazy.eager_constants():
                t = _index_tensor(np.asarray(a, dtype=np.int64), like)
        t = F.where(F.lt(t, 0), F.add(t, n), t)
        if tuple(t.shape) != tuple(shape):
            t = t.expand(*shape)
        term = F.mul(t, stride) if stride != 1 else t
        linear = term if linear is None else F.add(linear, term)
        stride *= n
    return linear


def _checked_on_device(arrays, shape, sizes, positions):
    """The linear index (int64, `shape`) of the advanced indices `arrays` (device arrays, host ones copied up)
    into the merged dims `sizes`, made on the device without reading it back: an index outside [-n, n) fails with
    the host's IndexError at the next fetch (kernels/checks.py), the reads meanwhile clipped into range."""
    xp = devices.module_of(next(a for a in arrays if devices.is_device_array(a)))
    linear = xp.zeros(shape, dtype=np.int64)
    if not int(np.prod(shape)):
        return linear
    stride = 1
    for a, n, p in reversed(list(zip(arrays, sizes, positions))):
        a = a if devices.is_device_array(a) else xp.asarray(np.asarray(a, dtype=np.int64))
        low, high = xp.min(a), xp.max(a)
        checks.require(xp, (low < -n) | (high >= n), _OUT_OF_BOUNDS, xp.where(high >= n, high, low), p, n,
                       error=IndexError)
        wrapped = xp.clip(xp.where(a < 0, a + n, a), 0, max(n - 1, 0))
        linear = linear + wrapped * stride
        stride *= n
    return linear


def _index_tensor(array, like):
    if devices.is_device_array(array):  # (made on like's device: `_checked_on_device`)
        return creation.local_tensor_of_array(array, dtypes.int64, like._device)
    if like.is_global:
        from oneflow_compat import sbp as flow_sbp

        return creation.tensor(array, dtype=dtypes.int64, placement=like.placement,
                               sbp=[flow_sbp.broadcast] * len(like.sbp))
    return creation.local_tensor(array, dtype=dtypes.int64, device=like._device)


def _host_key(key):
    if not isinstance(key, tuple):
        key = (key,)
    return tuple(_host_index(k) if _is_advanced(k) else k for k in key)


def _host_value(value, dtype):
    if dtype is dtypes.bfloat16:  # a bfloat16 tensor stores bfloat16 numbers (kernels/bfloat16.py)
        from oneflow_compat.kernels import bfloat16 as bf16_k

        array = np.asarray(value.numpy() if isinstance(value, Tensor) else value)
        return _one_element_as_scalar(bf16_k.round_to_bfloat16(np, array).reshape(array.shape))
    if isinstance(value, Tensor):
        return _one_element_as_scalar(np.asarray(value.numpy()).astype(dtype.np if dtype is not BOOL else np.bool_))
    return value


def _one_element_as_scalar(array):
    """A one-element value fits any target, a single element included (`x[0, 0] = flow.ones(1)`): OneFlow 0.9
    drops a value's leading size-1 dims before broadcasting it (core/functional/impl/array_functor.cpp
    TensorSetItemFunctor), where numpy refuses to put shape (1,) into a scalar slot."""
    return array.reshape(()) if array.ndim and array.size == 1 else array


def _records_gradient(x, value):
    from oneflow_compat.runtime import autograd

    return autograd.is_grad_enabled() and (x.requires_grad or (isinstance(value, Tensor) and value.requires_grad))


def _setitem_recorded(x, hkey, value):
    """`x[key] = value` while autograd records (x or value needs a gradient), in place (`_scattered`)."""
    from oneflow_compat._global import inplace

    inplace.rebind(x, _scattered(x, hkey, value))


def _scattered(x, hkey, value):
    """What x holds after `x[hkey] = value`, as a new tensor (eager with gradients, or in nn.Graph.build).
    OneFlow's setitem is then a recorded op (slice_update / tensor_scatter_nd_update): the overwritten positions
    pass no gradient to x's history and value gets the gradient of the positions it filled (summed where it was
    broadcast). Here that is one
    `dim_scatter_update` of the flattened tensor at the written flat positions (computed on the host: an index
    is data), which the tensor then takes as its value in place (`inplace.rebind`, views included); inside
    build the index and a scalar value are constants of the job."""
    from oneflow_compat._global import lazy

    shape = tuple(x._value.meta.shape)
    positions = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)[hkey]
    if isinstance(value, Tensor):
        v = F.cast(value, x.dtype) if value.dtype != x.dtype else value
        while v.ndim > positions.ndim and v.shape[0] == 1:  # numpy lets a value have extra leading 1s
            v = F.reshape(v, tuple(v.shape[1:]))
        if tuple(v.shape) != positions.shape:
            try:
                np.broadcast_shapes(tuple(v.shape), positions.shape)
            except ValueError:
                raise ValueError("setitem: a value of shape %s cannot be broadcast to the indexed shape %s"
                                 % (tuple(v.shape), positions.shape)) from None
            v = v.expand(*positions.shape)
    else:
        host = np.full(positions.shape, value, dtype=x.dtype.np if x.dtype is not BOOL else np.bool_)
        with lazy.eager_constants():
            v = _like_tensor(host, x)
    flat = F.reshape(x, (-1,))
    with lazy.eager_constants():
        idx = _index_tensor(positions.reshape(-1), x)
    new = apply_op("dim_scatter_update", [flat, idx, F.reshape(v, (-1,))], {"dim": 0})
    return F.reshape(new, shape)


def _setitem_traced(x, key, value):
    """`x[key] = value` inside `nn.Graph.build`: ops of the job, as OneFlow 0.9's tensor_setitem in lazy mode
    (python/oneflow/framework/tensor.py -> functional TensorSetItem, core/functional/impl/array_functor.cpp: a
    slice_update / tensor_scatter_nd_update whose output the lazy interpreter records as `x`'s new name,
    core/framework/op_interpreter/lazy_op_interpreter.cpp). Later reads of `x` in build see the new value, `x`
    keeps its placement and SBP, and the gradients are eager's (`_setitem_recorded`: none to the overwritten part
    of the old x, the filled part's to the value). An eager tensor captured from outside (a buffer, a free
    tensor) is not written: build reads the new value under its name (`inplace.rebind`). Index tensors made in
    build (lazy) are data the job only knows when it runs: a bool mask over the leading dims is taken the way
    OneFlow 0.9's masked_fill_ path takes it (a scalar value, or one that broadcasts over the dims after the
    mask's), an integer one alone with `:` / `...` elsewhere (`_scattered_along`); other mixes are refused with an
    error naming the index."""
    from oneflow_compat._global import inplace, lazy

    items = key if isinstance(key, tuple) else (key,)
    lazy_keys = [k for k in items if isinstance(k, Tensor) and k.is_lazy]
    if lazy_keys and lazy_keys[0].dtype is not BOOL:
        new = _scattered_along(x, items, lazy_keys, value)
    elif lazy_keys:
        mask = items[0] if len(items) == 1 else None
        if mask is None or tuple(mask.shape) != tuple(x.shape)[:mask.ndim]:
            raise RuntimeError("setitem inside nn.Graph.build: a bool mask computed in build() (shape %s) can "
                               "only index x's leading dims alone (x has shape %s): the count of its true places "
                               "is data the graph only knows when it runs"
                               % (tuple(lazy_keys[0].shape), tuple(x.shape)))
        rest = tuple(x.shape)[mask.ndim:]
        m = F.reshape(mask, tuple(mask.shape) + (1,) * len(rest)) if rest else mask
        if isinstance(value, Tensor):
            v = F.cast(value, x.dtype) if value.dtype != x.dtype else value
            try:
                np.broadcast_shapes(tuple(v.shape), rest or (1,))
                if v.ndim > len(rest) and builtins.any(d != 1 for d in tuple(v.shape)[:v.ndim - len(rest)]):
                    raise ValueError
            except ValueError:
                raise RuntimeError("setitem inside nn.Graph.build: with a bool mask computed in build() the "
                                   "value must broadcast over x's dims after the mask's %s, got shape %s (the "
                                   "count of true places is only known when the graph runs)"
                                   % (rest, tuple(v.shape))) from None
            while v.ndim > len(rest):
                v = F.reshape(v, tuple(v.shape[1:]))
            v = v.expand(*tuple(x.shape))
        else:
            with lazy.eager_constants():
                v = _like_tensor(np.full(tuple(x.shape), value, dtype=x.dtype.np if x.dtype is not BOOL
                                         else np.bool_), x)
        new = F.where(m.expand(*tuple(x.shape)), v, x)
    else:
        hkey = _host_key(key)
        if isinstance(value, Tensor) and value.is_global != x.is_global:
            raise RuntimeError("tensor_setitem(): value must be a %s tensor when self is %s"
                               % (("global",) * 2 if x.is_global else ("local",) * 2))
        new = _scattered(x, hkey, value)
    if x.is_global and (new.placement != x.placement or tuple(new.sbp) != tuple(x.sbp)):
        new = new.to_global(placement=x.placement, sbp=x.sbp)  # (in place: x keeps its SBP, as in 0.9)
    inplace.rebind(x, new)


def _scattered_along(x, items, lazy_keys, value):
    """What x holds after `x[..., idx, ...] = value` inside build for one integer index tensor `idx` computed in
    build (0-d or 1-D) with every other entry `:` or `...`: one `dim_scatter_update` along idx's axis (moved first),
    its index and value broadcast to the indexed shape (numpy's: x.shape[:a] + idx.shape + x.shape[a+1:]).
    Negative indices wrap; the gradients are eager's (none to the overwritten rows of x, theirs to the value)."""
    from oneflow_compat._global import lazy

    idx = lazy_keys[0]
    if idx.dtype.is_floating:
        raise IndexError("tensors used as indices must be long, int, uint8 or bool tensors, got %s" % idx.dtype)
    if len(lazy_keys) > 1 or idx.ndim > 1 or sum(k is Ellipsis for k in items) > 1 or not all(
            k is idx or k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in items):
        raise RuntimeError("setitem inside nn.Graph.build: an integer index tensor computed in build() (shape %s) "
                           "is supported alone, 0-d or 1-D, with `:` or `...` on the other dims; index with host "
                           "or eager tensors otherwise" % (tuple(idx.shape),))
    pos = next(i for i, k in enumerate(items) if k is idx)  # (by identity: `==` on a tensor is an op)
    dots = next((i for i, k in enumerate(items) if k is Ellipsis), None)
    at = pos if dots is None or pos < dots else x.ndim - (len(items) - pos)
    shape, n = tuple(x.shape), x.shape[at]
    k = F.reshape(idx, (1,)) if idx.ndim == 0 else idx
    k = F.cast(k, dtypes.int64) if k.dtype is not dtypes.int64 else k
    k = F.where(k < 0, k + n, k)
    order = [at] + [d for d in range(x.ndim) if d != at]
    target = (k.shape[0],) + tuple(shape[d] for d in order[1:])  # the indexed shape with idx's axis first
    if isinstance(value, Tensor):
        v = F.cast(value, x.dtype) if value.dtype != x.dtype else value
        indexed = shape[:at] + tuple(idx.shape) + shape[at + 1:]
        try:
            np.broadcast_shapes(tuple(v.shape), indexed)
        except ValueError:
            raise ValueError("setitem: a value of shape %s cannot be broadcast to the indexed shape %s"
                             % (tuple(v.shape), indexed)) from None
        while v.ndim > len(indexed):
            v = F.reshape(v, tuple(v.shape[1:]))
        v = v.expand(*indexed)
        if idx.ndim == 0:
            v = F.reshape(v, shape[:at] + (1,) + shape[at + 1:])
        if order != list(range(x.ndim)):
            v = F.permute(v, *order)
    else:
        with lazy.eager_constants():
            v = _like_tensor(np.full(target, value, dtype=x.dtype.np if x.dtype is not BOOL else np.bool_), x)
    k = F.reshape(k, (target[0],) + (1,) * (x.ndim - 1)).expand(*target)
    xt = F.permute(x, *order) if order != list(range(x.ndim)) else x
    new = apply_op("dim_scatter_update", [xt, k, v], {"dim": 0})
    if order != list(range(x.ndim)):
        new = F.permute(new, *[order.index(d) for d in range(x.ndim)])
    return new


def _like_tensor(array, like):
    """A constant of `like`'s dtype, device or placement (broadcast)."""
    if like.is_global:
        from oneflow_compat import sbp as flow_sbp

        return creation.tensor(array, dtype=like.dtype, placement=like.placement,
                               sbp=[flow_sbp.broadcast] * len(like.sbp))
    return creation.local_tensor(array, dtype=like.dtype, device=like._device)


def _specified_dims(key):
    """The axes an index names (OneFlow's CountSpecifiedDims, core/functional/tensor_index.cpp): one per int,
    slice or index tensor / list, a bool mask's dims; None and Ellipsis none."""
    n = 0
    for k in key if isinstance(key, tuple) else (key,):
        if k is None or k is Ellipsis or _is_bool(k):  # (a Python bool adds an axis, names none)
            continue
        if isinstance(k, Tensor) and k.dtype is BOOL:
            n += k.ndim
        elif isinstance(k, np.ndarray) and k.dtype == np.bool_:
            n += k.ndim
        else:
            n += 1
    return n


def setitem(x, key, value):
    """`x[key] = value` in place (see the module docstring)."""
    from oneflow_compat._global import lazy

    key = as_index_tuple(key)
    traced = lazy.tracer_active()
    if not traced:  # (inside nn.Graph.build OneFlow 0.9's lazy interpreter makes no leaf check)
        x._check_inplace()
    specified = _specified_dims(key)
    if specified > x.ndim:  # OneFlow 0.9's IndexError and words (core/functional/tensor_index.cpp)
        raise IndexError("Too many indices for tensor of dimension %d" % x.ndim)
    if traced:
        return _setitem_traced(x, key, value)
    if _setitem_on_device(x, key, value):
        return
    hkey = _host_key(key)
    if x.is_global and _recorded_slice_assign(x, key, value):  # (slices: x keeps its sbp, as OneFlow 0.9)
        return
    if _records_gradient(x, value):
        return _setitem_recorded(x, hkey, value)
    hvalue = _host_value(value, x.dtype)
    v = x._value
    if x.is_local:
        from oneflow_compat.backend import devices

        piece = v.pieces[0]
        if devices.is_device_array(piece):
            xp = devices.array_module("gpu")
            piece[tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in hkey)] = \
                xp.asarray(hvalue) if isinstance(hvalue, np.ndarray) else hvalue
        else:
            piece[hkey] = hvalue
        return
    full = np.array(x.numpy())  # collective: every rank has the logical value
    full[hkey] = hvalue
    if not v.pieces:
        return
    members = x.placement.rank_list
    from oneflow_compat.runtime import global_eager

    index, n = members.index(global_eager.rank()), len(members)
    new = full[S.local_slices(full.shape, v.sbp, index, n)]
    if not S.holds_addend_value(v.sbp, index):  # partial sums: the first addend holds the value
        new = np.zeros_like(new)
    v.pieces[0][...] = global_eager.to_device(np.ascontiguousarray(new), v.placement)


_SET_OUT_OF_BOUNDS = "index %d is out of bounds for axis %d with size %d"  # numpy's words (the host path's)


def _setitem_on_device(x, key, value):
    """`x[key] = value` for a local device tensor `x` and a key with advanced indices, done there: integer index
    tensors on its device are not read back (an index outside [-n, n) fails with the host's IndexError at the next
    fetch, kernels/checks.py, and nothing is written meanwhile), host indices are checked at once (CuPy would wrap
    an index out of range around and write there). Returns False (nothing done) where the host path runs: basic
    keys, a recorded gradient, bfloat16, a value from elsewhere."""
    from oneflow_compat.runtime import autograd

    items = key if isinstance(key, tuple) else (key,)
    if not builtins.any(_is_advanced(k) for k in items):  # (the common keys: one cheap look)
        return False
    piece = x._value.pieces[0] if x.is_local and x._value.pieces else None
    if not devices.is_device_array(piece) or x.dtype is dtypes.bfloat16 or \
            builtins.any(isinstance(k, (bool, np.bool_)) for k in items):
        return False
    if autograd.is_grad_enabled() and (x.requires_grad_flag or (isinstance(value, Tensor) and
                                                                value.requires_grad_flag)):
        return False
    xp = devices.module_of(piece)
    if isinstance(value, Tensor):
        given = value._value.pieces[0] if value.is_local and value._value.pieces else None
        if value._device != x._device or not devices.is_device_array(given):
            return False
        value = given.astype(piece.dtype, copy=False)
    elif not isinstance(value, (bool, int, float, np.generic)):
        value = xp.asarray(np.asarray(value, dtype=piece.dtype))
    entries = _expand_key(items, x.ndim, x)
    if builtins.any(kind == "mask0" for kind, _ in entries):
        return False
    axis, index, failed = 0, [], None
    for kind, k in entries:
        if kind == "adv":
            n = x.shape[axis]
            if devices.is_device_array(k):
                if k.size:
                    low, high = xp.min(k), xp.max(k)
                    bad = (low < -n) | (high >= n)
                    checks.require(xp, bad, _SET_OUT_OF_BOUNDS, xp.where(high >= n, high, low), axis, n,
                                   error=IndexError)
                    failed = bad if failed is None else failed | bad
                k = xp.clip(xp.where(k < 0, k + n, k), 0, max(n - 1, 0))
            else:
                bad = k[(k < -n) | (k >= n)]
                if bad.size:
                    raise IndexError(_SET_OUT_OF_BOUNDS % (int(bad[0]), axis, n))
                k = xp.asarray(k)
            index.append(k)
            axis += 1
        else:
            index.append(k)
            axis += k is not None
    index = tuple(index)
    if failed is not None:  # a failed check writes nothing: the places keep what they hold (never half-written)
        value = xp.where(failed, piece[index], value).astype(piece.dtype, copy=False)
    piece[index] = value
    return True


def _recorded_slice_assign(x, key, value):
    """`x[slices] = value` on a global tensor whose history is recorded (a non-leaf that requires grad, or a value
    that does), for keys of slices and Ellipsis: the slice_update op, so that the overwritten part of x gets a zero
    gradient and the value the slice of the output's gradient (OneFlow 0.9's tensor_setitem -> SliceUpdate with its
    gradient). Returns False (nothing done) otherwise."""
    from oneflow_compat.runtime import autograd

    value_records = isinstance(value, Tensor) and value.requires_grad_flag
    if not autograd.is_grad_enabled() or not (value_records or (x.requires_grad_flag and x._node is not None)):
        return False
    items = key if isinstance(key, tuple) else (key,)
    if not all(k is Ellipsis or isinstance(k, slice) for k in items) or sum(k is Ellipsis for k in items) > 1:
        return False
    shape = tuple(x.shape)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - len(items) + 1) + items[at + 1:]
    if len(items) > len(shape):
        return False
    items = items + (slice(None),) * (len(shape) - len(items))
    bounds = [k.indices(d) for k, d in zip(items, shape)]
    if any(step <= 0 for _, _, step in bounds):
        return False
    target = tuple(len(range(*b)) for b in bounds)
    from oneflow_compat._global import nd_functions
    from oneflow_compat import sbp as flow_sbp

    if not isinstance(value, Tensor):
        value = creation.tensor(np.broadcast_to(np.asarray(value, dtype=x.dtype.np), target).copy(),
                                dtype=x.dtype, placement=x.placement,
                                sbp=[flow_sbp.broadcast] * len(x.sbp))
    elif tuple(value.shape) != target:
        value = value.expand(*target)
    nd_functions.slice_update(x, value, [list(b) for b in bounds])
    return True
