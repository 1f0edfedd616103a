"""Creating tensors: `flow.tensor`, `zeros/ones/full/empty`, `randn/rand/randint`, `arange`, `*_like`,
`from_numpy`; local by default, global with `placement=` and `sbp=` (both or neither).

A global creation op is called by every rank of the world: member ranks make their own piece (constants) or
take it from the full logical value (random numbers, `generators.py`); ranks outside the placement hold an
empty piece and know the meta. `flow.tensor(data, placement=, sbp=)` treats each rank's `data` as the whole
logical value and keeps the placement's first rank's (as a local -> global broadcast does).
"""
import weakref

import numpy as np

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import bfloat16 as bf16_k
from oneflow_compat.runtime import context, global_eager
from oneflow_compat._global import default_dtype, generators, global_mode
from oneflow_compat._global.size import Size
from oneflow_compat._global.tensor import (Tensor, as_dtype, check_placement, device_tag, dtype_of_numpy,
                                           normalize_sbp, parse_device)
from oneflow_compat._global.tensor import device as tensor_device
from oneflow_compat._global import device_keys


def _size(size, what):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    out = []
    for d in size:
        if isinstance(d, Tensor):
            d = d.item()
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError("%s(): size must be ints, got %r" % (what, tuple(size)))
        if d < 0:
            raise NegativeDimensionError("Trying to create tensor with negative dimension %d: %s (%s())"
                                         % (d, list(size), what))
        out.append(int(d))
    return tuple(out)


def _layout(placement, sbp, ndim, what):
    """(flow.placement, compiler sbp, sbp shown) of a creation op, or (None, None, None) for a local tensor."""
    if placement is None and sbp is None:
        return None, None, None
    if placement is None or sbp is None:
        raise ValueError("%s(): placement and sbp must be given together (got placement=%r, sbp=%r)"
                         % (what, placement, sbp))
    check_placement(placement, what)
    shown = tuple(sbp) if isinstance(sbp, (list, tuple)) else (sbp,)
    ir_sbp = normalize_sbp(flow_sbp.to_ir(shown, what + "(): sbp", placement), ndim, what)
    return placement, ir_sbp, shown


def _in_global_mode(placement, sbp, device):
    """(placement, sbp) of a source op: the global mode's when it is on and the call names neither, on the device
    type `device` names where it names one (OneFlow 0.9's GetGlobalParallelDescFromDevice); else as given."""
    if placement is not None or sbp is not None or not global_mode.enabled():
        return placement, sbp
    mode = global_mode.current_global_mode()
    pl = mode.placement
    if device is not None and parse_device(device) != pl.type:
        pl = type(pl)(parse_device(device), pl.rank_list, hierarchy=pl.hierarchy)
    return pl, list(mode.sbp)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _bfloat16_rounded(array, dtype):
    """a bfloat16 tensor's values: float32 storage holding bfloat16 numbers (kernels/bfloat16.py)."""
    if dtype is dtypes.bfloat16:
        return bf16_k.round_to_bfloat16(np, array)
    return array


def _local(array, dtype, device, requires_grad):
    array = _bfloat16_rounded(array, dtype)
    key = device_keys.key(device)  # ("cuda:1": its index kept, its arrays on that GPU)
    pl = global_eager.local_placement(device_tag(device_keys.type_of(key)))
    with device_keys.current(key):
        piece = global_eager.to_device(array, pl)
    value = global_eager.Value(TensorMeta(array.shape, dtype), pl, S.B, [piece])
    t = Tensor._make(value, device=key)
    if not getattr(piece, "flags", None) or not piece.flags.c_contiguous:
        t._foreign_layout = True  # (an array handed in as is: never re-laid out, `views.settle`)
    return _finish(t, requires_grad)


def local_tensor_of_array(array, dtype, device):
    """A local tensor on `device` holding `array` itself (a host or device array of `dtype`'s storage, made by
    the framework for local work: `tensor[index]`'s linear index computed on the device), no copy."""
    return _local(array, dtype, device, False)


def _global(shape, dtype, placement, ir_sbp, shown, piece_of, requires_grad):
    """`piece_of(index, n, piece shape)` makes member `index`'s host piece."""
    pl = placement.ir()
    pieces = []
    rank = global_eager.rank()
    ranks = placement.rank_list
    if rank in ranks:
        index, n = ranks.index(rank), len(ranks)
        piece = _bfloat16_rounded(piece_of(index, n, S.local_shape(shape, ir_sbp, index, n)), dtype)
        pieces = [global_eager.to_device(np.asarray(piece, order="C"), pl)]
    value = global_eager.Value(TensorMeta(shape, dtype), pl, ir_sbp if len(ranks) > 1 else S.B, pieces)
    return _finish(Tensor._make(value, placement, shown), requires_grad)


def _from_full(full, dtype, placement, ir_sbp, shown, requires_grad, device=None):
    """A tensor holding the full logical host value `full` (every member rank computed it alike)."""
    if placement is None:
        return _local(full, dtype, device, requires_grad)

    def piece_of(index, n, piece_shape):
        if not S.holds_addend_value(ir_sbp, index):
            return np.zeros(piece_shape, full.dtype)
        return full[S.local_slices(full.shape, ir_sbp, index, n)]

    return _global(tuple(full.shape), dtype, placement, ir_sbp, shown, piece_of, requires_grad)


def _constant(size, value, dtype, device, placement, sbp, requires_grad, what, source=True):
    shape = _size(size, what)
    dtype = as_dtype(dtype) or default_dtype.get_default_dtype()
    if source:
        placement, sbp = _in_global_mode(placement, sbp, device)
    placement, ir_sbp, shown = _layout(placement, sbp, len(shape), what)
    np_dtype = dtype.np
    if placement is None:
        return _local(np.full(shape, value, np_dtype), dtype, device, requires_grad)

    def piece_of(index, n, piece_shape):
        return np.full(piece_shape, value if S.holds_addend_value(ir_sbp, index) else 0, np_dtype)

    return _global(shape, dtype, placement, ir_sbp, shown, piece_of, requires_grad)


def zeros(*size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    return _constant(size, 0, dtype, device, placement, sbp, requires_grad, "zeros")


def ones(*size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    return _constant(size, 1, dtype, device, placement, sbp, requires_grad, "ones")


def empty(*size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False, pin_memory=False):
    return _constant(size, 0, dtype, device, placement, sbp, requires_grad, "empty")


def full(size, fill_value, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()  # (a numpy scalar counts as the Python scalar it holds: full_op)
    if dtype is None and hasattr(fill_value, "dtype") and hasattr(fill_value, "numpy"):
        dtype = fill_value.dtype  # (a tensor: flow.tensor(fill_value).dtype is its own dtype)
    if dtype is None:
        # (OneFlow 0.9 full_op: the dtype of flow.tensor(fill_value), which follows the default dtype;
        # python/oneflow/nn/modules/constant.py:396-405 at v0.9.0)
        dtype = default_dtype.sequence_float_dtype() if isinstance(fill_value, float) else (
            tensor_bool() if isinstance(fill_value, bool) else dtypes.int64)
    return _constant((size,) if isinstance(size, int) else tuple(size), fill_value, dtype, device, placement, sbp,
                     requires_grad, "full")


def _default():
    return default_dtype.get_default_dtype()


def tensor_bool():
    from oneflow_compat._global.tensor import BOOL

    return BOOL


def like_layout(input, device=None, placement=None, sbp=None, what="like"):  # noqa: A002
    """(device, placement, sbp) of a `*_like` result, as OneFlow 0.9's `_handle_meta_args`: input's own layout
    unless given; a device excludes placement and sbp; a placement without sbp (or sbp without placement) takes
    the global input's other half."""
    if device is not None:
        if placement is not None or sbp is not None:
            raise ValueError("%s(): argument 'placement' and 'sbp' must be None when argument 'device' exist" % what)
        return device, None, None
    if placement is None and sbp is None:
        if input.is_global:
            return None, input.placement, list(input.sbp)
        return input._device, None, None
    if placement is None or sbp is None:
        if not input.is_global:
            raise ValueError("%s(): argument '%s' must not be None when argument '%s' exist and Tensor is local"
                             % (what, "placement" if placement is None else "sbp",
                                "sbp" if placement is None else "placement"))
        placement = input.placement if placement is None else placement
        sbp = list(input.sbp) if sbp is None else sbp
    return None, placement, sbp


def _like(input, dtype, requires_grad, value, what, device=None, placement=None, sbp=None):  # noqa: A002
    dtype = as_dtype(dtype) or input.dtype
    device, placement, sbp = like_layout(input, device, placement, sbp, what)
    if placement is not None:
        return _constant(tuple(input.shape), value, dtype, None, placement, sbp, requires_grad, what)
    return _constant(tuple(input.shape), value, dtype, device, None, None, requires_grad, what, source=False)


def zeros_like(input, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):  # noqa: A002
    return _like(input, dtype, requires_grad, 0, "zeros_like", device, placement, sbp)


def ones_like(input, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):  # noqa: A002
    return _like(input, dtype, requires_grad, 1, "ones_like", device, placement, sbp)


def full_like(input, fill_value, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):  # noqa: A002
    return _like(input, dtype, requires_grad, fill_value, "full_like", device, placement, sbp)


# --- random ---------------------------------------------------------------------------------------------------
# random tensors made inside nn.Graph.build: ops of the job (`random`, `randperm` of _global/graph_random.py, which
# builds on the functional ops above this module and sets them here when the package is imported)
IN_GRAPH = {}


def _generator(placement, generator):
    if generator is not None:
        return generator
    return generators.global_generator() if placement is not None else generators.default_generator()


def _random(draw, size, dtype, default, generator, device, placement, sbp, requires_grad, what, source=True,
            **in_graph):
    shape = _size(size, what)
    dtype = as_dtype(dtype) or default
    if source:  # (flow.normal is not one of OneFlow's global-mode sources)
        placement, sbp = _in_global_mode(placement, sbp, device)
    placement, ir_sbp, shown = _layout(placement, sbp, len(shape), what)
    if context.CURRENT.graph_traces:  # inside nn.Graph.build: ops of the job, fresh at every call (graph_random.py)
        return IN_GRAPH["random"](what, shape, dtype, generator, device, placement, shown, **in_graph)
    full_value = draw(_generator(placement, generator), shape, dtype.np)
    return _from_full(full_value, dtype, placement, ir_sbp, shown, requires_grad, device)


def _size_keyword(size, named, what):
    """`flow.randn(size=(2, 3))`: OneFlow 0.9 binds these through functional_api.yaml, whose `Shape size` is also a
    keyword; positional sizes and `size=` are one argument."""
    extra = sorted(k for k in named if k != "size")
    if extra:
        raise TypeError("%s() got an unexpected keyword argument '%s'" % (what, extra[0]))
    if "size" in named:
        if size:
            raise TypeError("%s() got multiple values for argument 'size'" % what)
        return (named["size"],)
    return size


class RandnDtypeError(NotImplementedError, TypeError):
    """`flow.randn(..., dtype=flow.int32)`: OneFlow 0.9's NotImplementedError; a TypeError too, as this project
    raised before."""


def randn(*size, generator=None, dtype=None, device=None, placement=None, sbp=None, requires_grad=False, **named):
    size = _size_keyword(size, named, "randn")
    if dtype is not None and not as_dtype(dtype).is_floating:
        # OneFlow 0.9's NotImplementedError and words (core/functional/impl/random_functor.cpp RandNFunctor)
        raise RandnDtypeError("Only support floating dtype in randn().")
    return _random(lambda g, shape, t: g.normal(shape, t), size, dtype, _default(), generator, device,
                   placement, sbp, requires_grad, "randn")


def rand(*size, generator=None, dtype=None, device=None, placement=None, sbp=None, requires_grad=False, **named):
    size = _size_keyword(size, named, "rand")
    return _random(lambda g, shape, t: g.uniform(shape, t), size, dtype, _default(), generator, device,
                   placement, sbp, requires_grad, "rand")


def randint(*args, low=None, high=None, size=None, generator=None, dtype=None, device=None, placement=None,
            sbp=None, requires_grad=False):
    """`randint(low, high, size)` or `randint(high, size)` (int64 unless `dtype`)."""
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list, Size)):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            low, high = (0, args[0]) if low is None else (low, args[0])
        else:
            low = args[0]
    if low is None:
        low = 0
    if high is None or size is None:
        raise TypeError("randint() needs high and size: randint(low, high, size)")
    lo, hi = int(low), int(high)
    if lo >= hi:
        raise ValueError("randint(): low (%d) must be less than high (%d)" % (lo, hi))
    return _random(lambda g, shape, t: g.integers(lo, hi, shape, t), tuple(size), dtype, dtypes.int64,
                   generator, device, placement, sbp, requires_grad, "randint", low=lo, high=hi)


class NormalDtypeError(NotImplementedError, TypeError):
    """normal() of a dtype that is not floating: OneFlow 0.9's NotImplementedError (OF_UNIMPLEMENTED); a TypeError
    too, as this project raised before."""


def normal(mean, std, size, *, out=None, dtype=None, device=None, generator=None, placement=None, sbp=None,
           requires_grad=False):
    """`flow.normal(mean, std, size)`: values drawn from N(mean, std^2); `size` an int or a shape (OneFlow 0.9's
    functional `normal`, functional_api.yaml @ v0.9.0: Normal / Normal2 / GlobalNormal / GlobalNormal2). With
    `out`, its storage takes the values and `out` is returned."""
    mean, std = float(mean), float(std)
    if std < 0:
        raise ValueError("normal(): std must be >= 0, got %s" % std)
    # OneFlow 0.9's NormalFunctor checks, types and words (core/functional/impl/random_functor.cpp)
    if dtype is not None and not as_dtype(dtype).is_floating:
        raise NormalDtypeError("Only support float and double in normal().")
    if out is not None and not out.is_global:  # (the draws are made in out's dtype, on out's device)
        if dtype is not None and as_dtype(dtype) != out.dtype:
            raise RuntimeError("data type %r does not match data type of out parameter %r" % (as_dtype(dtype),
                                                                                              out.dtype))
        dtype = out.dtype
        if device is not None and tensor_device(device) != out.device:
            raise RuntimeError("device type %s does not match device type of out parameter %s"
                               % (tensor_device(device), out.device))
        device = out.device
    shape = (size,) if isinstance(size, int) else tuple(size)
    value = _random(lambda g, shp, t: g.normal(shp, t, mean, std), shape, dtype, _default(), generator, device,
                    placement, sbp, requires_grad, "normal", source=False, mean=mean, std=std)
    if out is None:
        return value
    out.copy_(value)
    return out


class NegativeDimensionError(RuntimeError, ValueError):
    """A negative size: OneFlow 0.9's RuntimeError and words (user/ops/randperm_op.cpp, array_functor.cpp); a
    ValueError too, as this project raised before."""


def randperm(n, generator=None, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    if int(n) < 0:
        raise NegativeDimensionError("Trying to create tensor with negative dimension %d: [%d]" % (int(n), int(n)))
    dtype = as_dtype(dtype) or dtypes.int64
    placement, sbp = _in_global_mode(placement, sbp, device)
    placement, ir_sbp, shown = _layout(placement, sbp, 1, "randperm")
    if context.CURRENT.graph_traces:  # inside nn.Graph.build: an op of the job (graph_random.py)
        return IN_GRAPH["randperm"](int(n), dtype, generator, device, placement, shown)
    full_value = _generator(placement, generator).permutation(int(n)).astype(dtype.np)
    return _from_full(full_value, dtype, placement, ir_sbp, shown, requires_grad, device)


def manual_seed(seed):
    return generators.manual_seed(seed)


# --- from data ------------------------------------------------------------------------------------------------
def _array_of(data, dtype):
    if isinstance(data, Tensor):
        array = np.array(data.numpy(), copy=True)
    else:
        array = np.array(data)
        if dtype is None and not isinstance(data, np.ndarray) and array.dtype.kind == "f":
            array = array.astype(default_dtype.sequence_float_dtype().np)
        elif dtype is None and not isinstance(data, np.ndarray) and array.dtype.kind in "iu":
            array = array.astype(np.int64)
    if dtype is not None:
        array = array.astype(dtype.np)
    if array.dtype == object:
        raise TypeError("tensor(): cannot make a tensor of %r" % (data,))
    return np.asarray(array, order="C")


def local_tensor(data, dtype=None, device=None, requires_grad=False):
    """`tensor(data)` as a local tensor whatever the global mode: the values the framework makes for local work
    (a local op's constants and index tensors, state tensors, a local tensor moved to another device), which
    OneFlow's global mode leaves local."""
    dtype = as_dtype(dtype)
    array = _array_of(data, dtype)
    if device is None and isinstance(data, Tensor) and data.is_local:
        device = data._device
    return _local(array, dtype or dtype_of_numpy(array.dtype), device, requires_grad)


def local_full(size, value, dtype, device):
    """`full(size, value)` as a local tensor whatever the global mode (see `local_tensor`)."""
    return _constant(size, value, dtype, device, None, None, False, "full", source=False)


def tensor(data, dtype=None, device=None, placement=None, sbp=None, requires_grad=False, pin_memory=False):
    """A tensor holding a copy of `data` (a list, number, numpy array or tensor). Inside nn.Graph.build it is
    made eagerly, as OneFlow 0.9's TensorWithData / GlobalTensorWithData functors do (LazyMode::Guard(false),
    api/python/functional/tensor_api.cpp @ v0.9.0): the job reads it as a constant it captured."""
    placement, sbp = _in_global_mode(placement, sbp, device)
    if placement is None and sbp is None:
        return local_tensor(data, dtype, device, requires_grad)
    if context.CURRENT.graph_traces:  # (nn.Graph.build being traced in this thread)
        from oneflow_compat._global import lazy

        with lazy.eager_constants():
            return _global_tensor(data, dtype, placement, sbp, requires_grad)
    return _global_tensor(data, dtype, placement, sbp, requires_grad)


def _global_tensor(data, dtype, placement, sbp, requires_grad):
    dtype = as_dtype(dtype)
    array = _array_of(data, dtype)
    dt = dtype or dtype_of_numpy(array.dtype)
    placement, ir_sbp, shown = _layout(placement, sbp, array.ndim, "tensor")
    local = _local(array, dt, None, False)
    t = local.to_global(placement, [flow_sbp.broadcast] * len(placement.hierarchy))  # B on every mesh axis
    if ir_sbp != S.B:
        t = t.to_global(placement, list(shown))
    return _finish(Tensor._make(t._value, placement, shown), requires_grad)


def from_numpy(array):
    """A local CPU tensor sharing `array`'s memory, with its strides (OneFlow v0.9.0
    oneflow/api/python/functional/tensor_api.cpp:268-330 `LocalTensorSharedNumpyDataFunctor`): the tensor's storage
    starts at the array's first element, its `stride()` is the array's strides in elements and its storage offset
    0, so a Fortran-ordered or sliced array gives a non-contiguous tensor whose writes (and its views', and those
    of `numpy()`) reach the array; strides that are not a multiple of the item size, negative strides and a
    non-native byte order are refused with 0.9's messages (its InvalidValueError: ValueError here)."""
    if not isinstance(array, np.ndarray):
        raise TypeError("expected np.ndarray, but got %s" % type(array).__name__)
    item = array.dtype.itemsize
    if any(s % item for s in array.strides):  # tensor_api.cpp:284-288
        raise ValueError("given numpy array strides not a multiple of the element byte size. Copy the numpy array "
                         "to reallocate the memory.")
    if any(s < 0 for s in array.strides):  # tensor_api.cpp:291-298
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a copy "
                         "of your array  with array.copy().) ")
    if not array.dtype.isnative:  # tensor_api.cpp:300-304
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    return _sharing(array, dtype_of_numpy(array.dtype), "cpu")


def _sharing(array, dtype, device):
    """A local tensor on `device` over `array`'s memory with its strides (from_numpy, from_dlpack). A C-ordered
    array is the tensor's storage; a strided one (Fortran order, a slice, a broadcast) makes the tensor a view
    (`_global/views.py`) of a storage that is the memory from the array's first element to its last (a 1-D array
    over that span: the array's own memory, no copy), with the array's strides and storage offset 0."""
    if array.flags.c_contiguous or array.size == 0:
        return _local(array, dtype, device, False)
    from oneflow_compat._global import views

    item = array.dtype.itemsize
    stride = tuple(s // item for s in array.strides)
    span = 1 + sum((n - 1) * s for n, s in zip(array.shape, stride))
    if isinstance(array, np.ndarray):
        flat = np.lib.stride_tricks.as_strided(array, shape=(span,), strides=(item,))
    else:  # a device array: its module's as_strided over the same device memory
        from oneflow_compat.backend import devices

        flat = devices.module_of(array).lib.stride_tricks.as_strided(array, (span,), (item,))
    root = _local(flat, dtype, device, False)
    lay = (tuple(array.shape), stride, 0)
    t = Tensor._make(views.view_value(root, lay, TensorMeta(tuple(array.shape), dtype)), device=root._device)
    views.register(root, t, lay)
    root._storage_owner = weakref.ref(t)  # (for the leaf check of in-place ops on its views: views.rebind)
    return t


def from_dlpack(obj):
    """`flow.from_dlpack`: a local tensor sharing the memory of an object of the DLPack protocol (`__dlpack__`, as
    torch, numpy and CuPy arrays are): on the CPU through numpy, on a GPU through CuPy. A bare capsule (the legacy
    `torch.utils.dlpack.to_dlpack` result) does not say which device holds it: pass the array instead."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError("from_dlpack(): expected an object with __dlpack__ (a torch, numpy or CuPy array), got %s; "
                        "a bare DLPack capsule does not say its device: pass the array itself" % type(obj).__name__)
    kind, _ = obj.__dlpack_device__()
    # the strides kept, as OneFlow v0.9.0's fromDLPack keeps the capsule's (api/python/dlpack/converter.cpp:91-97)
    if int(kind) == 1:  # kDLCPU
        array = np.from_dlpack(obj)
        return _sharing(array, dtype_of_numpy(array.dtype), "cpu")
    from oneflow_compat.backend import devices

    array = devices.array_module("gpu").from_dlpack(obj)
    return _sharing(array, dtype_of_numpy(array.dtype), "cuda")


def to_dlpack(input):  # noqa: A002
    """`flow.to_dlpack`: a DLPack capsule of a local tensor's memory (shared, not copied)."""
    if input.is_global:
        raise RuntimeError("to_dlpack(): only local tensors can be exported, got a global tensor on %r"
                           % (input.placement,))
    return input._value.pieces[0].__dlpack__()


def as_tensor(data, dtype=None, device=None):
    """`flow.as_tensor` (OneFlow 0.9, python/oneflow/nn/modules/as_tensor.py): a tensor is returned itself when
    dtype and device already match, else converted with `.to`; a numpy array of the same dtype on the CPU shares
    its memory (`from_numpy`); anything else is copied."""
    if isinstance(data, Tensor):
        want_dtype = data.dtype if dtype is None else as_dtype(dtype)
        want_device = data.device if device is None else _as_device(device)
        if want_dtype is data.dtype and want_device == data.device:
            return data
        return data.to(dtype=want_dtype, device=want_device)
    if isinstance(data, np.ndarray):
        on_cpu = device is None or _as_device(device).type == "cpu"
        same_dtype = dtype is None or dtype_of_numpy(data.dtype) is as_dtype(dtype)
        if on_cpu and same_dtype and data.dtype.kind in "biuf" and data.dtype.isnative:
            return from_numpy(data)
        return tensor(data, dtype=dtype, device=device)
    out = tensor(data)
    if device is not None:
        out = out.to(device)
    if dtype is not None:
        out = out.to(dtype)
    return out


def _as_device(device):
    from oneflow_compat._global.tensor import device as device_type

    return device if isinstance(device, device_type) else device_type(device)


def arange(start=0, end=None, step=1, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    # a one-element tensor bound is read as its number (OneFlow 0.9's arange_op calls .item() on tensor bounds,
    # python/oneflow/nn/modules/arange.py@v0.9.0): it is read before any op, so an eager bound captured inside
    # nn.Graph.build still works
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if end is None:
        start, end = 0, start
    values = np.arange(start, end, step)
    dtype = as_dtype(dtype) or (dtypes.int64 if values.dtype.kind in "iu" else dtypes.float32)
    values = values.astype(dtype.np)
    placement, sbp = _in_global_mode(placement, sbp, device)
    placement, ir_sbp, shown = _layout(placement, sbp, 1, "arange")
    return _from_full(values, dtype, placement, ir_sbp, shown, requires_grad, device)


def linspace(start, end, steps, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    dtype = as_dtype(dtype) or dtypes.float32
    values = np.linspace(start, end, int(steps)).astype(dtype.np)
    placement, ir_sbp, shown = _layout(placement, sbp, 1, "linspace")
    return _from_full(values, dtype, placement, ir_sbp, shown, requires_grad, device)


# --- more creation ops of the basics pages and flowvision (OneFlow 0.9 signatures) ---------------------------
def eye(n, m=None, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """The n x m identity (m defaults to n), float32 unless `dtype`."""
    n = int(n)
    m = n if m is None else int(m)
    dtype = as_dtype(dtype) or dtypes.float32
    placement, ir_sbp, shown = _layout(placement, sbp, 2, "eye")
    return _from_full(np.eye(n, m, dtype=dtype.np), dtype, placement, ir_sbp, shown, requires_grad, device)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, placement=None, sbp=None,
             requires_grad=False):
    dtype = as_dtype(dtype) or default_dtype.get_default_dtype()
    placement, ir_sbp, shown = _layout(placement, sbp, 1, "logspace")
    full = np.logspace(start, end, int(steps), base=base).astype(dtype.np)
    return _from_full(full, dtype, placement, ir_sbp, shown, requires_grad, device)


def empty_like(input, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):  # noqa: A002
    return _like(input, dtype, requires_grad, 0, "empty_like", device, placement, sbp)


def new_tensor_like(data, like, dtype=None, requires_grad=False):
    """`tensor.new_tensor(data)`: a tensor of `data` on `like`'s device or placement (broadcast)."""
    if like.is_global:
        return tensor(data, dtype=dtype or like.dtype, placement=like.placement,
                      sbp=[flow_sbp.broadcast] * len(like.sbp), requires_grad=requires_grad)
    return tensor(data, dtype=dtype or like.dtype, device=like._device, requires_grad=requires_grad)
