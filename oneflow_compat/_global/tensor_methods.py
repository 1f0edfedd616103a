"""The `Tensor` methods built on ops, creation and layouts, installed on the class from here (the class itself,
`tensor.py`, sits below those modules): construction (`flow.Tensor(data)` / `flow.Tensor(*shape)`), operators with
broadcasting and Python numbers, `to_global`/`to_consistent`, `backward`, and the functional ops as methods."""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat import sbp as flow_sbp
from oneflow_compat._global import creation, device_keys, device_moves, dispatch, functional as F, global_mode, indexing, layouts, lazy
from oneflow_compat._global.placement import placement as Placement
from oneflow_compat._global import default_dtype, nn_init, tensor_functions as TF
from oneflow_compat._global.size import Size
from oneflow_compat._global.inplace import rebind as _rebind
from oneflow_compat._global.tensor import BOOL, Tensor, as_dtype, parse_device


def _init(self, *args, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """`flow.Tensor(data)` (a list, array or tensor; float32 unless `dtype`), or `flow.Tensor(*shape)` (here
    zeros: OneFlow leaves the memory uninitialised)."""
    dt = as_dtype(dtype) or default_dtype.get_default_dtype()  # (flow.set_default_dtype)
    if len(args) == 1 and not isinstance(args[0], (int, np.integer, Size)):
        t = creation.tensor(args[0], dtype=dt, device=device, placement=placement, sbp=sbp,
                            requires_grad=requires_grad)
    else:
        shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        if not args:  # `flow.Tensor()`: an empty 1-D tensor, shape (0,) (TensorEmptyCtorFunctor, tensor_api.cpp@v0.9.0)
            shape = (0,)
        t = creation.zeros(*shape, dtype=dt, device=device, placement=placement, sbp=sbp,
                           requires_grad=requires_grad)
    self._adopt(t)


def _to_global(self, placement=None, sbp=None, grad_sbp=None, check_meta=True, copy=False):
    """Local -> global (every rank of the world calls it) or global -> global (any SBP and placement).
    `check_meta=False` (a local tensor of one shape and dtype on every rank): no exchange of shapes."""
    return layouts.to_global(self, placement, sbp, grad_sbp, check_meta)


def _to_consistent(self, placement=None, sbp=None, grad_sbp=None):
    """OneFlow 0.5's name of `to_global`."""
    return layouts.to_global(self, placement, sbp, grad_sbp)


def _backward(self, gradient=None, retain_graph=False, create_graph=False):
    if create_graph:  # a recorded backward (_global/higher_order.py)
        from oneflow_compat._global.autograd_function import backward_recorded

        backward_recorded([self], None if gradient is None else [gradient])
        return
    dispatch.backward([self], [gradient], retain_graph)


def _copy_(self, other):
    """Copies `other` (boxed to this tensor's layout) into this tensor's storage."""
    src = layouts.as_layout_of(other, self)
    if tuple(src.shape) != tuple(self.shape):
        src = F.reshape(src, tuple(self.shape)) if src.numel() == self.numel() else src
    if lazy.current() is not None and (lazy.is_lazy(src) or lazy.is_lazy(self)):
        # inside nn.Graph.build: the copy is an op of the job whose output the tensor reads from now on, as any
        # in-place op there (`inplace.rebind`; flow.normal(..., out=t) in build:
        # test/graph/test_graph_normal_inplace.py)
        if src.dtype != self.dtype:
            src = F.cast(src, self.dtype)
        return _rebind(self, F.clone(src) if src is other else src)
    bf16 = self.dtype is dtypes.bfloat16
    with device_keys.of(self):  # (a "cuda:K" tensor: on its GPU)
        for p, q in zip(self._value.pieces, src._value.pieces):
            if bf16:  # a bfloat16 tensor stores bfloat16 numbers (kernels/bfloat16.py)
                q = _bf16_k().round_to_bfloat16(devices.module_of(q), q)
            p[...] = q if devices.is_device_array(p) else devices.to_host(q)  # a host piece takes no device array
    return self


def _bf16_k():
    from oneflow_compat.kernels import bfloat16

    return bfloat16


def _inplace(fn):
    def method(self, *args, **kwargs):
        return _rebind(self, fn(self, *args, **kwargs))
    return method


def _shape_text(shape):
    return "(" + ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"  # Shape::ToString


def _check_inplace_broadcast(shape, expand_shape):
    """OneFlow 0.9's CheckInplaceShapeCanExpandTo (core/functional/impl/common.cpp): the other operand of an
    in-place binary op must broadcast to the tensor's own shape, which the op keeps. Its RuntimeErrors and words."""
    shape, expand_shape = tuple(shape), tuple(expand_shape)
    if shape == expand_shape:
        return
    if len(expand_shape) < len(shape):
        raise RuntimeError("Can not expand origin shape %s to %s in an inplace operation"
                           % (_shape_text(shape), _shape_text(expand_shape)))
    shift = len(expand_shape) - len(shape)
    for i in range(len(expand_shape) - 1, shift - 1, -1):
        a, b = expand_shape[i], shape[i - shift]
        if a != b and (a <= 0 or b != 1):
            raise RuntimeError("Tensor with shape %s doesn't match the broadcast shape in an inplace operation"
                               % _shape_text(expand_shape))


def _is_integer(dtype):
    return not dtype.is_floating and dtype is not BOOL


def _common_dtype(x, y):
    """OneFlow 0.9's ComputeCommonDType of two tensors (core/functional/tensor_processor.cpp): a 0-d tensor beside
    one that is not takes the other's dtype."""
    if x.dtype == y.dtype:
        return x.dtype
    if y.ndim == 0 and x.ndim != 0:
        return x.dtype
    if x.ndim == 0 and y.ndim != 0:
        return y.dtype
    return F._promote(x.dtype, y.dtype)


def _mul_dtype(x, y):
    return _common_dtype(x, y)


def _div_dtype(x, y):
    """InplaceDivFunctor: integers are divided as float32, other inputs in their common dtype (float32 where that
    is an integer one)."""
    if _is_integer(F._promote(x.dtype, y.dtype)):
        return dtypes.float32
    common = _common_dtype(x, y)
    return dtypes.float32 if _is_integer(common) else common


def _to_self_dtype(self, other, args, kwargs):
    """add_ / sub_ (AddFunctor / SubFunctor with inplace: TensorProcessor's promote_dtype is the input's): the other
    operand, scaled by alpha first, is cast to the tensor's dtype before the op (`int_x.add_(float_y)` adds the
    integer parts)."""
    alpha = kwargs.pop("alpha", args[0] if args else 1)
    if alpha != 1:
        other = F.mul(other, alpha)
    return F.cast(other, self.dtype), (), kwargs


def _inplace_device_check(self, other, moves_scalar):
    """The devices of an in-place binary op on local tensors, as OneFlow 0.9 (functional/impl/binary_functor.cpp
    @ v0.9.0): add_ / sub_ / div_ (CastDeviceForCPUScalarTensor with inplace=true) move a 0-d CPU `other` onto
    x's device, never x itself, so `cpu_scalar.add_(cuda_y)` is refused; mul_ (InplaceMulFunctor) moves nothing.
    The refusal is the op's device check (local_tensor_infer_cache.cpp, CheckInputDeviceIdentical: its words)."""
    if self._device == other._device or self.is_global or other.is_global or lazy.tracer_active():
        return
    if moves_scalar and not other._value.meta.shape and device_keys.type_of(other._device) == "cpu":
        return
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, %s "
                       "(positional 0) and %s (positional 1)!" % (self.device, other.device))


def _inplace_binary(fn, computed_dtype=None, moves_scalar=True):
    """`x.add_(y)`, `x += y`, ... : OneFlow 0.9's InplaceAdd / InplaceMul / InplaceDiv functors check, before the
    op, that x may be written (a leaf requiring grad may not: `Tensor._check_inplace`, where eager autograd
    records), that the dtype the op computes in is x's (mul_ / div_: CheckInplaceCastValid; add_ / sub_ cast y to
    x's dtype) and that y broadcasts to x's shape (binary_functor.cpp, in that order; words of common.cpp); then
    the devices (`_inplace_device_check`)."""
    def method(self, other, *args, **kwargs):
        if isinstance(other, Tensor):
            if not self.is_lazy and not other.is_lazy and not lazy.tracer_active():
                self._check_inplace()
            if computed_dtype is not None:
                result_dtype = computed_dtype(self, other)
                if result_dtype != self.dtype:
                    raise RuntimeError("result type %r can't be cast to the desired output type %r"
                                       % (result_dtype, self.dtype))
            _check_inplace_broadcast(other.shape, self.shape)
            _inplace_device_check(self, other, moves_scalar)
            if computed_dtype is None and other.dtype != self.dtype:
                other, args, kwargs = _to_self_dtype(self, other, args, dict(kwargs))
        return _rebind(self, fn(self, other, *args, **kwargs))
    return method


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _to(self, *args, **kwargs):
    """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other_tensor)`; `to(flow.Tensor)`: the tensor itself."""
    if len(args) == 1 and not kwargs and isinstance(args[0], type) and issubclass(args[0], Tensor):
        # OneFlow 0.9 reaches a graph module's parameters and buffers through proxies whose `.to(flow.Tensor)` is
        # the tensor (nn/graph/proxy.py @ v0.9.0); `graph.module.weight` is the tensor here, so the call is too
        return self
    dtype, device = kwargs.get("dtype"), kwargs.get("device")
    for a in args:
        if isinstance(a, Tensor):
            if self.is_global or a.is_global:  # OneFlow 0.9's words (core/functional/impl/array_functor.cpp)
                raise RuntimeError("tensor.to(other) can only be called when tensor and other are local tensors")
            dtype = a.dtype
            device = a._device
        elif isinstance(a, dtypes.DType) or a in (float, int, bool):
            dtype = a
        elif a is not None:
            device = a
    out = self
    if device is not None:
        if self.is_global and isinstance(device, str) and device.split(":")[0] not in ("cpu", "cuda"):
            raise RuntimeError("Only string device without device id (eg. \"cpu\" or \"cuda\") is expected "
                               "for global tensor, but got %s" % (device,))
        kind = parse_device(device)
        if self.is_global:
            # OneFlow 0.9: "cpu" / "cuda" move a global tensor to that device type on its ranks; a device with an
            # index, or a device object, only in a global mode scope
            if not global_mode.enabled() and not (isinstance(device, str) and ":" not in device):
                raise RuntimeError("Only string device without device id (eg. \"cpu\" or \"cuda\") is expected "
                                   "for global tensor, but got %s" % (device,))
            if kind != self._placement.type:
                out = self.to_global(placement=Placement(kind, self._placement.rank_list, hierarchy=self._placement.hierarchy), sbp=self.sbp)
        elif device_keys.key(device) != self._device:  # ("cuda:1": the index too)
            if lazy.current() is not None:  # inside nn.Graph.build (a captured eager tensor is read as a variable)
                out = lazy.to_device(self, device_keys.check(device_keys.key(device)))  # (the job's copy op)
            else:
                out = device_moves.moved(self, device_keys.check(device_keys.key(device)))  # (0.9's copy op)
    if dtype is not None:
        out = F.cast(out, dtype)
    if kwargs.get("copy", False) and out is self:  # OneFlow 0.9's `copy=True`: a new tensor, even where nothing
        out = self.clone()                         # changes (core/functional/impl/array_functor.cpp ToFunctor)
    return out


def _cuda_device(device):
    """`Tensor.cuda(device)`'s device (OneFlow 0.9 framework/tensor.py `_cuda`: None is "cuda", an int K
    "cuda:K")."""
    if device is None:
        return "cuda"
    if isinstance(device, int) and not isinstance(device, bool):
        return "cuda:%d" % device
    return device


def _getitem(self, key):
    if len(self._device) > 4:  # "cuda:K": the index arithmetic on that GPU, where the tensor lives
        with device_keys.current(self._device):
            return indexing.getitem(self, key)
    return indexing.getitem(self, key)


def _setitem(self, key, value):
    if len(self._device) > 4:
        with device_keys.current(self._device):
            return indexing.setitem(self, key, value)
    indexing.setitem(self, key, value)


def rebuild_local(array, dtype_name, device, requires_grad):
    """A local tensor from its pickled parts (DataLoader workers send batches this way)."""
    from oneflow_compat.runtime import global_eager

    dtype = global_eager._dtype_named(dtype_name, None)
    return creation.local_tensor(array, dtype=dtype, device=device, requires_grad=requires_grad)


def rebuild_parameter(array, dtype_name, device, requires_grad):
    """A Parameter from its pickled parts (`copy.deepcopy(module)` keeps its parameters Parameters)."""
    from oneflow_compat._global.modules import Parameter

    return Parameter(rebuild_local(array, dtype_name, device, False), requires_grad)


def rebuild_global(array, dtype_name, placement, sbp, parameter_requires_grad):
    """A global tensor from its pickled parts: the logical value laid out again on the placement with the sbp (a
    Parameter again when it was one: `parameter_requires_grad` is then its requires_grad, else None)."""
    from oneflow_compat.runtime import global_eager

    dtype = global_eager._dtype_named(dtype_name, None)
    t = creation.tensor(array, dtype=dtype, placement=placement, sbp=list(sbp))
    if parameter_requires_grad is None:
        return t
    from oneflow_compat._global.modules import Parameter

    return Parameter(t, parameter_requires_grad)


def _reduce(self):
    """Pickling (and copy.deepcopy): a local tensor travels as its array, dtype and device, as OneFlow 0.9's
    tensor_getstate has it (framework/check_point_v2.py: no requires_grad, no autograd history: the copy is a
    new leaf that requires no grad); a Parameter comes back a Parameter with its requires_grad. A global tensor
    travels as its logical value, dtype, placement and sbp (0.9's tensor_getstate outside flow.save): `.numpy()`
    gathers it, so every rank of its placement pickles it together."""
    from oneflow_compat._global.modules import Parameter

    if self.is_global:
        return rebuild_global, (np.array(self.numpy()), self.dtype.name, self.placement, tuple(self.sbp),
                                self.requires_grad if isinstance(self, Parameter) else None)
    if isinstance(self, Parameter):
        return rebuild_parameter, (np.array(self.numpy()), self.dtype.name, self._device, self.requires_grad)
    return rebuild_local, (np.array(self.numpy()), self.dtype.name, self._device, False)


def _size_args(*shape):
    return shape


def _T(self):  # noqa: N802
    return F.permute(self, list(reversed(range(self.ndim)))) if self.ndim >= 2 else self


def _expand_as_shape(self, other):
    return F.reshape(self, tuple(other.shape))


_METHODS = {
    "__init__": _init,
    "to_global": _to_global,
    "to_consistent": _to_consistent,
    "backward": _backward,
    "copy_": _copy_,
    "to": _to,
    "__getitem__": _getitem,
    "__reduce__": _reduce,
    "__setitem__": _setitem,
    # operators
    "__add__": F.add, "__radd__": _reflected(F.add), "__iadd__": _inplace_binary(F.add),
    "__sub__": F.sub, "__rsub__": _reflected(F.sub), "__isub__": _inplace_binary(F.sub),
    "__mul__": F.mul, "__rmul__": _reflected(F.mul),
    "__imul__": _inplace_binary(F.mul, _mul_dtype, moves_scalar=False),
    "__truediv__": F.div, "__rtruediv__": _reflected(F.div), "__itruediv__": _inplace_binary(F.div, _div_dtype),
    "__pow__": F.pow, "__rpow__": _reflected(F.pow),
    "__matmul__": F.matmul, "__rmatmul__": _reflected(F.matmul),
    "__neg__": F.neg, "__pos__": lambda self: self, "__abs__": F.abs,
    "__eq__": F.eq, "__ne__": F.ne, "__lt__": F.lt, "__le__": F.le, "__gt__": F.gt, "__ge__": F.ge,
    "__invert__": F.logical_not,
    # arithmetic
    "add": F.add, "sub": F.sub, "mul": F.mul, "div": F.div, "pow": F.pow, "neg": F.neg, "abs": F.abs,
    "add_": _inplace_binary(F.add), "sub_": _inplace_binary(F.sub),
    "mul_": _inplace_binary(F.mul, _mul_dtype, moves_scalar=False),
    "div_": _inplace_binary(F.div, _div_dtype),
    "exp": F.exp, "log": F.log, "sqrt": F.sqrt, "rsqrt": F.rsqrt, "square": F.square, "sign": F.sign,
    "floor": F.floor, "ceil": F.ceil, "round": F.round, "reciprocal": F.reciprocal, "sin": F.sin, "cos": F.cos,
    "log1p": F.log1p, "expm1": F.expm1, "relu": F.relu, "sigmoid": F.sigmoid, "tanh": F.tanh,
    "clamp": F.clamp, "clip": F.clamp, "maximum": F.maximum, "minimum": F.minimum,
    "eq": F.eq, "ne": F.ne, "lt": F.lt, "le": F.le, "gt": F.gt, "ge": F.ge, "logical_not": F.logical_not,
    "matmul": F.matmul, "mm": F.matmul, "dot": F.dot,
    # reductions
    "sum": F.sum, "mean": F.mean, "prod": F.prod, "var": F.var, "std": F.std, "max": F.max, "min": F.min,
    "argmax": F.argmax, "argmin": F.argmin, "softmax": F.softmax, "log_softmax": F.log_softmax,
    # shapes
    "reshape": lambda self, *shape, **kw: F.reshape(self, *shape, **kw),
    "view": lambda self, *shape: F.reshape(self, *shape),
    "view_as": _expand_as_shape, "reshape_as": _expand_as_shape,
    "flatten": F.flatten, "permute": lambda self, *dims: F.permute(self, *dims), "transpose": F.transpose,
    "t": F.t, "squeeze": F.squeeze, "unsqueeze": F.unsqueeze, "gather": F.gather, "masked_fill": F.masked_fill,
    "contiguous": lambda self: self, "is_contiguous": lambda self: True,
    "clone": F.clone,
    # dtypes and devices
    "float": lambda self: F.cast(self, dtypes.float32), "double": lambda self: F.cast(self, dtypes.float64),
    "half": lambda self: F.cast(self, dtypes.float16), "int": lambda self: F.cast(self, dtypes.int32),
    "long": lambda self: F.cast(self, dtypes.int64), "bool": lambda self: F.cast(self, BOOL),
    "type_as": lambda self, other: F.cast(self, other.dtype),
    "cpu": lambda self: _to(self, "cpu") if self.is_local else self,
    "cuda": lambda self, device=None: _to(self, _cuda_device(device)) if self.is_local else self,
    "numel": Tensor.numel, "ndimension": lambda self: self.ndim,
}


# --- issue 21 (global helper): the tensor functions flowvision and the basics pages call as methods -----------------
def _new_like(fill):
    def method(self, *size, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
        shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list, Size)) else size
        return _new_full(self, shape, fill, dtype, device, placement, sbp, requires_grad)
    return method


def _new_full(self, size, fill_value, dtype=None, device=None, placement=None, sbp=None, requires_grad=False):
    """A tensor of `size` filled with `fill_value`, with this tensor's dtype and device / placement (broadcast)
    unless given."""
    dtype = dtype or self.dtype
    if placement is None and device is None and self.is_global:
        placement, sbp = self.placement, sbp or [flow_sbp.broadcast] * len(self.sbp)
    if placement is None:
        device = device if device is not None else self._device
    return creation.full(tuple(size), fill_value, dtype=dtype, device=device, placement=placement, sbp=sbp,
                         requires_grad=requires_grad)


def _tile(self, *dims):
    """`x.tile(2, 1)` as well as `x.tile((2, 1))` (OneFlow 0.9's Tensor.tile takes the repetitions either way)."""
    return TF.tile(self, dims[0] if len(dims) == 1 else dims)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False, placement=None, sbp=None):
    """OneFlow 0.9's `Tensor.new_tensor` (python/oneflow/framework/tensor.py): self's dtype, and its device (a
    local self) or its placement and sbp (a global self) unless given."""
    if dtype is None:
        dtype = self.dtype
    if self.is_local:
        assert placement is None and sbp is None, \
            "self is local tensor, placement and sbp are expected to be None."
        return creation.tensor(data, dtype=dtype, device=self.device if device is None else device,
                               requires_grad=requires_grad)
    assert device is None, "self is global tensor, device is expected to be None."
    return creation.tensor(data, dtype=dtype, placement=self.placement if placement is None else placement,
                           sbp=self.sbp if sbp is None else sbp, requires_grad=requires_grad)


def _element_size(self):
    return int(self.dtype.np.itemsize)


_METHODS.update({
    "split": TF.split, "chunk": TF.chunk, "narrow": TF.narrow, "unbind": TF.unbind, "flip": TF.flip,
    "roll": TF.roll, "rot90": TF.rot90, "expand": lambda self, *sizes: TF.expand(self, *sizes),
    "expand_as": TF.expand_as, "repeat": lambda self, *sizes: TF.repeat(self, *sizes), "tile": _tile,
    "sort": TF.sort, "argsort": TF.argsort, "topk": TF.topk, "masked_select": TF.masked_select,
    "argwhere": TF.argwhere, "nonzero": TF.nonzero, "index_select": TF.index_select, "scatter": TF.scatter,
    "scatter_add": TF.scatter_add, "scatter_": _inplace(TF.scatter), "scatter_add_": _inplace(TF.scatter_add),
    "cumsum": TF.cumsum, "tril": TF.tril, "triu": TF.triu, "tril_": _inplace(TF.tril), "triu_": _inplace(TF.triu),
    "isnan": TF.isnan, "isinf": TF.isinf, "isfinite": TF.isfinite, "any": TF.any, "all": TF.all,
    "amax": TF.amax, "amin": TF.amin, "is_floating_point": TF.is_floating_point, "norm": TF.norm,
    "logsumexp": TF.logsumexp, "diff": TF.diff, "unique": TF.unique, "bernoulli": TF.bernoulli,
    "multinomial": TF.multinomial,
    "log2": TF.log2, "floor_divide": TF.floor_divide, "logical_and": TF.logical_and, "logical_or": TF.logical_or,
    "erf": TF.erf, "erfc": TF.erfc, "lgamma": TF.lgamma, "tan": TF.tan, "atan": TF.atan, "asin": TF.asin,
    "acos": TF.acos, "sinh": TF.sinh, "cosh": TF.cosh, "asinh": TF.asinh, "acosh": TF.acosh, "atanh": TF.atanh,
    "atan2": TF.atan2, "erfinv": TF.erfinv, "erfinv_": _inplace(TF.erfinv), "baddbmm": TF.baddbmm, "addmm": TF.addmm, "bmm": F.matmul,
    "clamp_": _inplace(F.clamp), "clip_": _inplace(F.clamp), "masked_fill_": _inplace(F.masked_fill),
    "new_zeros": _new_like(0), "new_ones": _new_like(1), "new_empty": _new_like(0), "new_full": _new_full,
    "new_tensor": _new_tensor, "element_size": _element_size,
    "uniform_": lambda self, a=0.0, b=1.0: nn_init.uniform_(self, a, b),
    "normal_": lambda self, mean=0.0, std=1.0: nn_init.normal_(self, mean, std),
})

# nnextra helper (issue 21): Tensor.cumprod, Tensor.fmod (and fmod_ in place)
from oneflow_compat._global import math_extra as _math_extra  # noqa: E402
_METHODS.update({"cumprod": _math_extra.cumprod, "fmod": _math_extra.fmod, "fmod_": _inplace(_math_extra.fmod)})
# of09 team: `%` and `//`, as OneFlow 0.9's number protocol (api/python/framework/tensor_functions.cpp: nb_remainder
# is functional::fmod, C's remainder with the dividend's sign; nb_floor_divide is functional::floor_divide). Their
# yaml signatures take a Tensor first, so `7 % t` / `7 // t` stay TypeErrors there and here.
_METHODS.update({"__mod__": _math_extra.fmod, "__floordiv__": TF.floor_divide})

# leftovers helper: Tensor.unfold(dimension, size, step) (OneFlow's unfold_tensor; nn.functional.unfold is im2col)
from oneflow_compat._global import nn_fold as _nn_fold  # noqa: E402
_METHODS.update({"unfold": _nn_fold.unfold_tensor})


def install():
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    Tensor.T = property(_T)


install()

# api-misc1: Tensor.clamp_min_ / clamp_max_ (the in-place forms flow.clamp_min_ / clamp_max_ share)
from oneflow_compat._global import inplace_functions as _inplace_functions  # noqa: E402
Tensor.clamp_min_, Tensor.clamp_max_ = _inplace_functions.clamp_min_, _inplace_functions.clamp_max_

# --- api-shape team (OneFlow 0.9's API reference, tensor.rst): shape, indexing and product methods; the explicit
# forms of to_global (Tensor.diag / Tensor.in_top_k: nd_functions', bound by the package's __init__, as nd_functions
# imports this module). Tensor.where(x, y) is flow.where(self, x, y) (python/oneflow/framework/tensor.py `_where`).
from oneflow_compat._global import global_casts as _global_casts  # noqa: E402
from oneflow_compat._global import index_extra as _index_extra  # noqa: E402
from oneflow_compat._global import products_extra as _products_extra  # noqa: E402
from oneflow_compat._global import shape_extra as _shape_extra  # noqa: E402

_METHODS.update({
    "diagonal": _shape_extra.diagonal,
    "index_add": _index_extra.index_add, "index_add_": _inplace(_index_extra.index_add), "mv": _products_extra.mv,
    "repeat_interleave": _index_extra.repeat_interleave, "swapaxes": _shape_extra.swapaxes,
    "swapdims": _shape_extra.swapdims, "where": lambda self, x=None, y=None: F.where(self, x, y),
    "nms": _index_extra.nms, "cross": _products_extra.cross, "bincount": _index_extra.bincount,
    "broadcast_to": _shape_extra.broadcast_to, "local_to_global": _global_casts.local_to_global,
    "global_to_global": _global_casts.global_to_global,
})
install()

# --- acceptance-09: the Tensor methods OneFlow 0.9 registers that were missing (python/oneflow/framework/tensor.py
# and api/python/framework/tensor_functions.cpp / tensor.cpp at v0.9.0): __contains__, as_strided, clamp_min/max,
# gelu, relu_, inverse, logaddexp, exponential_, the nn.init fills, global_id, to_numpy and the numpy copies.
from oneflow_compat._global import tensor_method_gaps as _tensor_method_gaps  # noqa: E402

_METHODS.update(_tensor_method_gaps.METHODS)
install()

# --- api-gaps team: Tensor.norm is OneFlow 0.9's full norm (`norm_forms.norm`: matrix norms too), Tensor.where with
# no arguments the condition's non-zero indices (`where_forms.where`)
from oneflow_compat._global import norm_forms as _norm_forms  # noqa: E402
from oneflow_compat._global import where_forms as _where_forms  # noqa: E402

_METHODS.update({"norm": _norm_forms.norm, "where": lambda self, x=None, y=None: _where_forms.where(self, x, y)})
install()

# --- experimental-v04: v0.4.0's Tensor methods beside 0.9's (oneflow.experimental's programs): gather(index, dim=0),
# repeat(sizes=...), zeros_()
from oneflow_compat._global import tensor_methods_v04 as _tensor_methods_v04  # noqa: E402

_METHODS.update({"gather": _tensor_methods_v04.gather, "repeat": _tensor_methods_v04.repeat,
                 "zeros_": _tensor_methods_v04.zeros_})
install()

# --- multiprocessing team: Tensor.share_memory_() / Tensor.is_shared() (`shared_storage.py`), the memory that
# oneflow.multiprocessing sends between processes
from oneflow_compat._global import shared_storage as _shared_storage  # noqa: E402

_METHODS.update({"share_memory_": _shared_storage.share_memory_, "is_shared": _shared_storage.is_shared})
install()

# --- limits team: Tensor.bfloat16() (OneFlow 0.9: a cast to flow.bfloat16; float32 storage, ir/dtypes.py)
from oneflow_compat.ir import dtypes as _dtypes  # noqa: E402

_METHODS.update({"bfloat16": lambda self: F.cast(self, _dtypes.bfloat16)})
install()

# --- views team: view semantics of local eager tensors (`views.py`): Tensor.view must give a view (OneFlow's
# ViewFunctor), view_as is view(other.shape); contiguity as the view's strides say
from oneflow_compat._global import views as _views  # noqa: E402

_METHODS.update({
    "view": lambda self, *shape, **kw: F.view(self, *shape, **kw),
    "view_as": lambda self, other: F.view(self, tuple(other.shape)),
    "contiguous": _inplace_functions.contiguous, "is_contiguous": _views.is_contiguous,
    "contiguous_": _views.contiguous_,
})
install()

# --- limits2 team: Tensor.digamma() / Tensor.polygamma(n) (torch's; ops/polygamma_ops.py)
from oneflow_compat._global import special_functions as _special_functions  # noqa: E402

_METHODS.update({"digamma": _special_functions.digamma, "polygamma": _special_functions.tensor_polygamma})
install()

# --- modtests team: Tensor._zero_grad_ (OneFlow 0.9's, used by Optimizer.zero_grad / Module.zero_grad:
# `grad_zeroing.py`), Tensor.mm / bmm / dot (OneFlow 0.9's checks: `matrix_checks.py`), `t == None` is False
# (`tensor_compare.py`), Tensor._tensor_buffer_shapes_and_dtypes (`tensor_buffer_list.py`)
from oneflow_compat._global import grad_zeroing as _grad_zeroing  # noqa: E402
from oneflow_compat._global import matrix_checks as _matrix_checks  # noqa: E402
from oneflow_compat._global import tensor_compare as _tensor_compare  # noqa: E402
from oneflow_compat._global import tensor_buffer_list as _tensor_buffer_list  # noqa: E402

Tensor._tensor_buffer_shapes_and_dtypes = property(_tensor_buffer_list.tensor_buffer_shapes_and_dtypes)

_METHODS.update({"_zero_grad_": _grad_zeroing.zero_grad_, "mm": _matrix_checks.mm, "bmm": _matrix_checks.bmm,
                 "dot": _matrix_checks.dot, "__eq__": _tensor_compare.eq})
install()

# --- placement team: Tensor.fill_ while gradients are recorded (zero gradient for the old content, the sum for a
# value tensor: `inplace_fill.py`)
from oneflow_compat._global import inplace_fill as _inplace_fill  # noqa: E402

_METHODS.update({"fill_": _inplace_fill.fill_})
install()
