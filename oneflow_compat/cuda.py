"""`flow.cuda`: whether a CUDA device is usable (without one, "cuda" placements and devices run on CPU)."""
from oneflow_compat.backend import devices


def is_available():
    return devices.cuda_usable()


def device_count():
    if not devices.cuda_usable():
        return 0
    import cupy

    return cupy.cuda.runtime.getDeviceCount()


def current_device():
    return 0


def synchronize(device=None):
    if devices.cuda_usable():
        import cupy

        cupy.cuda.Device().synchronize()


def manual_seed_all(seed):
    from oneflow_compat._global import generators

    generators.manual_seed(seed)


def manual_seed(seed):
    manual_seed_all(seed)
