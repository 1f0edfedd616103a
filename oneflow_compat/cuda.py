"""`flow.cuda`: whether a CUDA device is usable (without one, "cuda" placements and devices run on CPU)."""
from oneflow_compat.backend import devices


def is_available():
    return devices.cuda_usable()


def device_count():
    if not devices.cuda_usable():
        return 0
    from oneflow_compat.backend import gpu_map

    return gpu_map.gpu_count(devices.array_module("gpu"))  # (CuPy's runtime; the tests' fake device's)


def current_device():
    """The local rank, as OneFlow 0.9 (`cuda_util.cpp: GetCudaDeviceIndex`): each process drives the device of
    its local rank."""
    from oneflow_compat import env

    return env.get_local_rank()


def synchronize(device=None):
    """Waits for every kernel on a CUDA device (OneFlow 0.9, cuda/__init__.py: the device's index, the current
    device for None; a negative index, or no usable CUDA here, has nothing to wait for). The index is the device's
    as a local tensor's `cuda:K` names it (`_global/device_keys.py`)."""
    from oneflow_compat._global import cuda_devices, device_keys

    index = cuda_devices._device_index(device, optional=True)
    if index < 0 or not devices.cuda_usable():
        return
    physical = device_keys.gpu("cuda:%d" % index)  # (an index the machine lacks: CUDA's invalid device ordinal)
    cuda = getattr(devices.array_module("gpu"), "cuda", None)
    if cuda is not None:
        cuda.Device(physical).synchronize()


def manual_seed_all(seed):
    from oneflow_compat._global import generators

    generators.manual_seed(seed)


def manual_seed(seed):
    manual_seed_all(seed)


# --- api-autograd: the rest of OneFlow 0.9's cuda.rst (device queries and selection, memory, typed tensors) ---------
from oneflow_compat._global.cuda_devices import (  # noqa: E402,F401
    BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor, empty_cache,
    get_device_capability, get_device_name, get_device_properties, set_device)
