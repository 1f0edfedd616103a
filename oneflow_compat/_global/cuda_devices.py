"""`flow.cuda`'s device queries and selection (OneFlow 0.9's cuda.rst): set_device, get_device_properties,
get_device_capability, get_device_name, empty_cache, and the typed tensors `flow.cuda.FloatTensor` & co.

Facts from OneFlow 0.9 (v0.9.0): `python/oneflow/cuda/__init__.py` and `cuda/_utils.py` (`_get_device_index`:
which devices are accepted, the ValueErrors), `oneflow/api/python/env/env.cpp` (`_CudaDeviceProperties`: its
fields and repr), `oneflow/core/device/cuda_util.cpp` (the current device is the local rank; without a CUDA device
the first CUDA call, `cudaGetDevice` of `CudaCurrentDeviceGuard`, fails with CUDA's "no CUDA-capable device is
detected (100)": OneFlow aborts the process there, this implementation raises that message as a RuntimeError) and
`oneflow/api/python/framework/tensortype.cpp` (a typed tensor type called is `flow.Tensor(*args)` moved to its
device and dtype).

Here the properties come from CuPy's runtime (`cudaGetDeviceProperties`) of the GPU the index names, through the
device switch (`backend/devices.py`): where CUDA is not usable (no CuPy, no device, `ONEFLOW_COMPAT_DEVICE=cpu`)
the queries fail as OneFlow built with CUDA fails on a machine without a device.
"""
from oneflow_compat.backend import devices

__all__ = ["set_device", "get_device_properties", "get_device_capability", "get_device_name", "empty_cache",
           "HalfTensor", "FloatTensor", "DoubleTensor", "BoolTensor", "ByteTensor", "CharTensor", "IntTensor",
           "LongTensor"]

# CUDA's own words for cudaErrorNoDevice, in OneFlow's OF_CUDA_CHECK line (cuda_util.h / cuda_util.cpp)
NO_DEVICE = ("Check failed: cudaGetDevice(&saved_dev_id_) : no CUDA-capable device is detected (100) "
             "(oneflow_compat: %s)")


def _runtime():
    """CuPy's CUDA runtime (the fake device's in the tests), or the error OneFlow meets without a device."""
    if not devices.cuda_usable():
        raise RuntimeError(NO_DEVICE % devices.unusable_reason())
    xp = devices.array_module("gpu")
    return xp.cuda.runtime


def _local_rank():
    from oneflow_compat import env

    return env.get_local_rank()


def _device_index(device, optional=False):
    """OneFlow 0.9 `cuda/_utils.py: _get_device_index` (allow_cpu=False)."""
    from oneflow_compat._global.tensor import device as flow_device

    index = None
    if isinstance(device, str):
        device = flow_device(device)
    if isinstance(device, flow_device):
        if device.type != "cuda":
            raise ValueError("Expected a cuda device, but got: {}".format(device))
        index = device.index
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    if index is None:
        if optional:  # the current device (the local rank) where CUDA is available, else -1
            return _local_rank() if devices.cuda_usable() else -1
        raise ValueError("Expected a flow.device with a specified index or an integer, but got:{}".format(device))
    return index


class _CudaDeviceProperties:
    """OneFlow 0.9's `_CudaDeviceProperties` (cudaDeviceProp's fields it binds), read-only."""

    __slots__ = ("name", "major", "minor", "is_multi_gpu_board", "is_integrated", "multi_processor_count",
                 "total_memory")

    def __init__(self, props):
        name = props["name"]
        values = {
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "major": int(props["major"]), "minor": int(props["minor"]),
            "is_multi_gpu_board": int(props.get("isMultiGpuBoard", 0)),
            "is_integrated": int(props.get("integrated", 0)),
            "multi_processor_count": int(props["multiProcessorCount"]),
            "total_memory": int(props["totalGlobalMem"]),
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key, value):
        raise AttributeError("can't set attribute '%s' of _CudaDeviceProperties" % key)

    def __repr__(self):
        return ("_CudaDeviceProperties(name='%s', major=%d, minor=%d, total_memory=%dMB, multi_processor_count=%d)"
                % (self.name, self.major, self.minor, self.total_memory // (1024 * 1024), self.multi_processor_count))


def get_device_properties(device=None):
    """Gets the properties of a device (a flow.device, "cuda:1", an index; None: the current device)."""
    index = _device_index(device, optional=True)
    runtime = _runtime()
    if index == -1:
        index = _local_rank()
    count = runtime.getDeviceCount()
    if not 0 <= index < count:
        raise ValueError("get_device_properties: device index %d out of range: this process sees %d CUDA device(s)"
                         % (index, count))
    return _CudaDeviceProperties(runtime.getDeviceProperties(index))


def get_device_capability(device=None):
    """The (major, minor) CUDA capability of a device."""
    props = get_device_properties(device)
    return props.major, props.minor


def get_device_name(device=None):
    """The name of a device."""
    return get_device_properties(device).name


def set_device(device):
    """Sets the current device (OneFlow 0.9): a negative index is a no-op; the current device is the process's
    local rank, so any other index is refused."""
    index = _device_index(device)
    if index < 0:
        return
    from oneflow_compat import env

    if env.get_world_size() > 0:
        if index == env.get_local_rank():
            return
        raise ValueError("Setting cuda device to a device whose index does not equal to the local rank is not "
                         "supported.")


def empty_cache():
    """Releases the unused blocks CuPy's memory pools cache (device memory and pinned host memory), so that other
    programs see them free; nothing to do where "cuda" runs on the CPU (OneFlow's `EmptyCache` shrinks its
    allocators likewise, and is no error without a device)."""
    if not devices.cuda_usable():
        return None
    xp = devices.array_module("gpu")
    for getter in ("get_default_memory_pool", "get_default_pinned_memory_pool"):
        pool = getattr(xp, getter, None)
        if pool is not None:
            pool().free_all_blocks()
    return None


# --- typed tensor types (oneflow.cuda.FloatTensor, ...): `flow.Tensor(*args)` on "cuda" with the type's dtype; the
# "cuda" twins of api-math's flow.FloatTensor & co. (`_global/tensor_types.py`, one implementation for both)
from oneflow_compat._global.tensor_types import CUDA_TYPES as _CUDA_TYPES  # noqa: E402

HalfTensor = _CUDA_TYPES["HalfTensor"]
FloatTensor = _CUDA_TYPES["FloatTensor"]
DoubleTensor = _CUDA_TYPES["DoubleTensor"]
BoolTensor = _CUDA_TYPES["BoolTensor"]
ByteTensor = _CUDA_TYPES["ByteTensor"]
CharTensor = _CUDA_TYPES["CharTensor"]
IntTensor = _CUDA_TYPES["IntTensor"]
LongTensor = _CUDA_TYPES["LongTensor"]
