"""OneFlow 0.9's Tensor methods about a tensor's type, device and memory: `type`, `byte`, `cast`, `get_device`,
`stride`, `storage_offset`, `pin_memory`, `is_pinned` (`bernoulli_`, which writes into the tensor, is in
`math_methods.py`).

Facts from OneFlow v0.9.0 `oneflow/api/python/framework/tensor.cpp` (`Tensor.type(dtype=None,
non_blocking=False)`: no argument gives the type's name, 'oneflow.FloatTensor' or 'oneflow.cuda.FloatTensor';
a tensor type, its name or a dtype converts; anything else TypeError "dtype must be a type, str, or dtype
object"; non_blocking=True TypeError "non_blocking=True is not supported yet"), `tensor_functions.cpp` (`byte` is
uint8; `get_device` "is only available for GPU tensor."), `functional/impl/array_functor.cpp` (`pin_memory`: local
CPU tensors only, "Tensor.pin_memory() only support local tensor for now!" / "cannot pin tensor with device:
DEV, only dense CPU tensors can be pinned.") and `random_functor.cpp` (`bernoulli_(p=None)`: draws with the
tensor's own values as probabilities, or with the number p, which must lie in [0, 1]).

Storage here: a local eager tensor made by a view op shares its input's storage with its own strides and offset
(`_global/views.py`, as OneFlow 0.9); every other tensor owns contiguous row-major storage: `stride()` is the
contiguous strides of the shape (a global tensor's: of its logical shape, as OneFlow shows), `storage_offset()` 0. "Pinned" memory is page-locked host memory for GPU copies; on this implementation's host
arrays `pin_memory()` returns a copy marked pinned (`is_pinned()` True), which GPU copies treat as any host array.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat._global import device_keys, functional as F, tensor_types
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.tensor import as_dtype


def _device_type(t):
    return t._placement.type if t.is_global else device_keys.type_of(t._device)


def tensor_type(self, dtype=None, non_blocking=False):
    """The type's name ('oneflow.FloatTensor') without `dtype`; else this tensor converted to `dtype` (a tensor
    type such as flow.cuda.IntTensor, its name, or a flow dtype)."""
    if non_blocking:
        raise TypeError("non_blocking=True is not supported yet")
    if dtype is None:
        return tensor_types.type_of(self.dtype, _device_type(self)).name
    if dtype is _tensor_class():  # OneFlow: the Tensor class itself converts to a CPU float tensor
        return self.to("cpu", dtypes.float32)
    if isinstance(dtype, str):
        dtype = tensor_types.type_from_string(dtype)
    if isinstance(dtype, dtypes.DType):
        return F.cast(self, dtype)
    ttype = tensor_types.as_tensor_type(dtype)
    if ttype is not None:
        if ttype.device_type == _device_type(self):
            return F.cast(self, ttype.dtype)
        return self.to(ttype.device_type, ttype.dtype)
    raise TypeError("dtype must be a type, str, or dtype object")


def byte(self):
    return F.cast(self, dtypes.uint8)


def cast(self, dtype, pin_memory=False):
    """This tensor as `dtype` (OneFlow's functional `cast(x, dtype, pin_memory=False)`)."""
    out = F.cast(self, as_dtype(dtype))
    return _pinned_copy(out) if pin_memory else out


def get_device(self):
    """The index of the GPU holding a cuda tensor."""
    if _device_type(self) != "cuda":
        raise RuntimeError("get_device is only available for GPU tensor.")
    if self.is_global:
        from oneflow_compat import env

        return env.get_local_rank()
    return device_keys.index_of(self._device)


def stride(self, dim=None):
    """The strides in elements (one dim's with `dim`): a view's own (`_global/views.py`), else the contiguous
    row-major strides of the shape (a global tensor's: of its logical shape, as OneFlow shows)."""
    from oneflow_compat._global import views

    strides = views.stride(self)
    if dim is None:
        return strides
    return strides[TF._dim(dim, len(strides), "stride")]


def storage_offset(self):
    """Where a view starts in its storage, in elements (0 for a tensor that owns its storage)."""
    from oneflow_compat._global import views

    return views.storage_offset(self)


def _pinned_copy(t):
    out = F.clone(t)
    out._pinned = True
    return out


def pin_memory(self):
    """A copy of this local CPU tensor in pinned host memory."""
    if self.is_global or self.is_lazy:
        raise RuntimeError("Tensor.pin_memory() only support local tensor for now!")
    if device_keys.type_of(self._device) != "cpu":
        raise RuntimeError("cannot pin tensor with device: %s, only dense CPU tensors can be pinned." % self.device)
    if getattr(self, "_pinned", False):
        return self
    out = _pinned_copy(self.detach())
    if self.requires_grad:
        out.requires_grad_(True)
    return out


def is_pinned(self):
    return bool(getattr(self, "_pinned", False))


def _tensor_class():
    from oneflow_compat._global.tensor import Tensor

    return Tensor
