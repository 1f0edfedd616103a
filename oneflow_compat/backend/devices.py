"""Which array module runs a device tag, and the one notice when "gpu" falls back to CPU devices."""
import numpy as np

from oneflow_compat.backend import notices

_CUDA = None
_NOTICED = False


def cuda_usable():
    global _CUDA
    if _CUDA is None:
        try:
            import cupy

            _CUDA = cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:  # no cupy, no driver, no device: all mean CPU
            _CUDA = False
    return _CUDA


def resolve_tag(tag):
    """'gpu' becomes 'cpu' where no CUDA device is usable (as OneFlow's CPU-only builds did)."""
    global _NOTICED
    if tag == "gpu" and not cuda_usable():
        if not _NOTICED:
            _NOTICED = True
            notices.warn("NOTICE: no usable CUDA device (or CuPy is not installed): 'gpu' placements run on CPU "
                         "devices.")
        return "cpu"
    return tag


def array_module(tag):
    if tag == "gpu":
        import cupy

        return cupy
    return np


def to_host(x):
    return x if isinstance(x, np.ndarray) else x.get()
