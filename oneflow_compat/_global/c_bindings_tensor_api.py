"""`oneflow._C`'s tensor constructors (OneFlow v0.9.0 `oneflow/api/python/functional/tensor_api.yaml`): `tensor`,
`_legacy_tensor_ctor` (what `flow.Tensor(...)` calls), `from_numpy`, `from_dlpack`, `assign_local_tensor`."""
from oneflow_compat._global import creation as _creation
from oneflow_compat._global.tensor import Tensor


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False, placement=None, sbp=None):
    """TensorWithData / GlobalTensorWithData: a new tensor holding a copy of `data`."""
    return _creation.tensor(data, dtype=dtype, device=device, placement=placement, sbp=sbp,
                            requires_grad=requires_grad, pin_memory=pin_memory)


def _legacy_tensor_ctor(*args, device=None, placement=None, sbp=None):
    """`flow.Tensor(...)`: empty, another tensor's copy, data, or a shape (float32), local or global."""
    kwargs = {k: v for k, v in (("device", device), ("placement", placement), ("sbp", sbp)) if v is not None}
    return Tensor(*args, **kwargs)


def from_numpy(obj):
    """LocalTensorSharedNumpyData: a tensor sharing the array's memory."""
    return _creation.from_numpy(obj)


def from_dlpack(obj):
    return _creation.from_dlpack(obj)


def assign_local_tensor(ref, value):
    """AssignLocalTensor: value's elements into the local tensor ref, in place (returns None)."""
    for name, t in (("ref", ref), ("value", value)):
        if not isinstance(t, Tensor) or not t.is_local:
            raise RuntimeError("assign_local_tensor: %s must be a local tensor" % name)
    if tuple(ref.shape) != tuple(value.shape) or ref.dtype != value.dtype:
        raise RuntimeError("assign_local_tensor: value (%s, %s) must have ref's shape and dtype (%s, %s)"
                           % (tuple(value.shape), value.dtype, tuple(ref.shape), ref.dtype))
    ref.copy_(value)
