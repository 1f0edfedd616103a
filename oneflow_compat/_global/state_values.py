"""Values of a state dict (tensors, arrays, checkpoint entries) copied into tensors that keep their own layout —
what `Module.load_state_dict` and `Optimizer.load_state_dict` do with each entry.

A value is converted to the target's layout: a global tensor is boxed to the target's placement and SBP; a
LOCAL tensor copied into a global target is first made global by taking the placement's first rank's value
(`to_global(placement, broadcast)`, every rank calls it, as OneFlow's load does); an array or checkpoint entry
is the full logical value on every rank, of which each rank keeps its piece. A global value copied into a
local target is gathered (a collective).
"""
import numpy as np

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import dtypes
from oneflow_compat.kernels import bfloat16 as bf16_k
from oneflow_compat.runtime import global_eager
from oneflow_compat._global import device_keys
from oneflow_compat._global.size import Size
from oneflow_compat._global.tensor import Tensor


def _shape_of(value, target):
    if isinstance(value, Tensor):
        return tuple(value.shape)
    if isinstance(value, np.ndarray):
        return value.shape
    shape = getattr(value, "shape", None)
    if shape is None and hasattr(value, "bind"):  # a checkpoint entry without meta: takes the target's shape
        return tuple(target.shape)
    if shape is None:
        return np.shape(value)
    return tuple(shape)


def check(value, target):
    """None if `value` can be copied into `target`, else what is wrong (PyTorch's / OneFlow's wording)."""
    if not isinstance(value, (Tensor, np.ndarray)) and not callable(getattr(value, "numpy", None)):
        try:
            np.asarray(value, dtype=target.dtype.np)
        except (TypeError, ValueError):
            return "cannot copy a value of type %s into a tensor" % type(value).__name__
    shape = _shape_of(value, target)
    if tuple(shape) != tuple(target.shape):
        return ("copying a param with shape %r from checkpoint, the shape in current model is %r."
                % (Size(shape), Size(tuple(target.shape))))
    return None


def _host_array(value, target):
    if hasattr(value, "bind") and callable(getattr(value, "numpy", None)):  # checkpoint entry
        if getattr(value, "shape", None) is None:
            return value.numpy(tuple(target.shape), target.dtype)
        return value.numpy()
    if callable(getattr(value, "numpy", None)):
        return np.asarray(value.numpy())
    return np.asarray(value)


def copy_into(target, value):
    """Copies `value` into `target`'s storage, converted to `target`'s layout and dtype (see the module
    docstring). Every rank of the world calls it when either side is global."""
    from oneflow_compat._global import nn_init

    if isinstance(value, Tensor):
        if target.is_global:
            if value.is_local:
                value = value.to_global(target.placement, [flow_sbp.broadcast] * len(target.sbp))
            return target.copy_(value)
        value = value.numpy()
    array = _host_array(value, target)
    if target.dtype is dtypes.bfloat16:  # loaded into bfloat16 storage: bfloat16 numbers
        array = bf16_k.round_to_bfloat16(np, array)
    if target.is_global:
        return nn_init._fill(target, array)
    with device_keys.of(target):  # (a "cuda:K" tensor: on its GPU)
        for piece in target._value.pieces:
            piece[...] = global_eager.to_device(np.asarray(array, dtype=target.dtype.np), target._value.placement)
    return target
