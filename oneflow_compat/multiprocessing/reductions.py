"""The `ForkingPickler` reductions of OneFlow 0.9's `oneflow.multiprocessing` (`multiprocessing/reductions.py`,
v0.9.0): a local tensor or nn.Parameter pickled for another process (a `Queue`, a `Pool` task, the arguments of a
spawned process) arrives as a tensor backed by shared memory, with its dtype, shape and requires_grad.

A tensor already in shared memory (`Tensor.share_memory_()`, or one that arrived this way) sends a handle of that
memory: the receiver reads and writes the sender's memory. Any other tensor is copied into a new segment first, as
OneFlow 0.9 does for every tensor (then the receiver's writes stay its own). A tensor on a GPU arrives on the CPU
(OneFlow 0.9 sends `tensor.numpy()`). A global tensor is refused (`shared_storage._piece`): its pieces live on
several processes.
"""
from multiprocessing.reduction import ForkingPickler

import numpy as np

from oneflow_compat._global import creation, shared_storage
from oneflow_compat._global import tensor as tensor_module
from oneflow_compat.ir import dtypes
from oneflow_compat._global.modules import Parameter
from oneflow_compat._global.tensor import Tensor

try:
    # loaded before any fork, so that a child never inherits a half-initialised resource sharer (the sender of
    # descriptors that DupFd uses; Queue pickles in a feeder thread that may run while the process forks)
    import multiprocessing.resource_sharer  # noqa: F401
except ImportError:  # pragma: no cover - not on this platform
    pass


def _shared_piece(tensor, what):
    piece = shared_storage._piece(tensor, what)
    if isinstance(piece, np.ndarray) and shared_storage.storage_of(piece) is not None:
        return piece
    host = np.asarray(tensor.numpy())  # (np.ascontiguousarray would make a 0-d array 1-d)
    shared = shared_storage.new_shared_array(host.shape, host.dtype)
    shared[...] = host
    return shared


def _dtype_name(dtype):
    return dtype.name  # by name: `flow.bool` (defined above the legacy dtypes) does not unpickle as an object


def _dtype(name):
    return tensor_module.BOOL if name == tensor_module.BOOL.name else dtypes._by_name(name)


def _local_tensor(array, dtype):
    return creation._local(array, _dtype(dtype), "cpu", False)


def rebuild_empty_tensor(shape, dtype, requires_grad):
    t = creation.empty(tuple(shape), dtype=_dtype(dtype))
    t.requires_grad = requires_grad
    return t


def rebuild_shm_tensor(handle, dtype, requires_grad):
    t = _local_tensor(shared_storage.open_handle(handle), dtype)
    t.requires_grad = requires_grad
    return t


def rebuild_empty_parameter(shape, dtype, requires_grad):
    return Parameter(rebuild_empty_tensor(shape, dtype, False), requires_grad=requires_grad)


def rebuild_shm_parameter(handle, dtype, requires_grad):
    return Parameter(_local_tensor(shared_storage.open_handle(handle), dtype), requires_grad=requires_grad)


def reduce_tensor(tensor):
    if tensor.numel() == 0 and not tensor.is_global:
        return rebuild_empty_tensor, (tuple(tensor.shape), _dtype_name(tensor.dtype), tensor.requires_grad)
    handle = shared_storage.handle_of(_shared_piece(tensor, "oneflow.multiprocessing (pickling a tensor)"))
    return rebuild_shm_tensor, (handle, _dtype_name(tensor.dtype), tensor.requires_grad)


def reduce_parameter(param):
    if param.numel() == 0 and not param.is_global:
        return rebuild_empty_parameter, (tuple(param.shape), _dtype_name(param.dtype), param.requires_grad)
    handle = shared_storage.handle_of(_shared_piece(param, "oneflow.multiprocessing (pickling a Parameter)"))
    return rebuild_shm_parameter, (handle, _dtype_name(param.dtype), param.requires_grad)


def init_reductions():
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_parameter)
