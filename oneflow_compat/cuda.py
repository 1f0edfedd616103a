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
    if devices.cuda_usable():
        import cupy

        cupy.cuda.Device().synchronize()


def manual_seed_all(seed):
    from oneflow_compat._global import generators

    generators.manual_seed(seed)


def manual_seed(seed):
    manual_seed_all(seed)


# --- api-autograd: the rest of OneFlow 0.9's cuda.rst (device queries and selection, memory, typed tensors) ---------
from oneflow_compat._global.cuda_devices import (  # noqa: E402,F401
    BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor, empty_cache,
    get_device_capability, get_device_name, get_device_properties, set_device)
