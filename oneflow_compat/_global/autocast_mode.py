"""`flow.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)` (OneFlow 0.9's
`amp/autocast_mode.py`; also `flow.amp.autocast`, and as a decorator) with OneFlow 0.9's rules: CPU autocast is not
supported there ("Disabling autocast", a warning), nor inside an nn.Graph build; CUDA autocast casts CUDA ops to
float16. Ops that run on the CPU (here also "cuda" tensors where no GPU is usable) are left alone, as OneFlow leaves
CPU ops; on a GPU it is refused, since this implementation computes in float32 where OneFlow would compute in
float16. `is_autocast_enabled()` and the other state functions say what the innermost scope set, per thread.
`get_autocast_cpu_dtype` / `set_autocast_cpu_dtype` keep the CPU scope's dtype (bfloat16 by default, OneFlow 0.9's
core/framework/autocast.cpp; flow.bfloat16 is float32 storage holding bfloat16 numbers here, ir/dtypes.py), which
`autocast("cpu")` takes as its fast dtype before disabling itself as 0.9 does."""
import functools
import threading
import warnings

from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat._global import lazy

__all__ = ["autocast", "autocast_decorator", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_gpu_dtype",
           "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype"]


class _State(threading.local):
    def __init__(self):
        self.enabled = [False]  # one entry per open autocast scope, the process's setting first
        self.gpu_dtype = dtypes.float16
        self.cpu_dtype = dtypes.bfloat16
        self.cache_enabled = True


_STATE = _State()


def is_autocast_enabled():
    return _STATE.enabled[-1]


def set_autocast_enabled(enabled):
    _STATE.enabled[-1] = bool(enabled)


def get_autocast_gpu_dtype():
    return _STATE.gpu_dtype


def set_autocast_gpu_dtype(dtype):
    _STATE.gpu_dtype = dtype


def get_autocast_cpu_dtype():
    return _STATE.cpu_dtype


def set_autocast_cpu_dtype(dtype):
    _STATE.cpu_dtype = dtype


def is_autocast_cache_enabled():
    return _STATE.cache_enabled


def set_autocast_cache_enabled(enabled):
    _STATE.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Nothing is cached: every op computes in its inputs' dtype."""


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


class autocast:  # noqa: N801 - OneFlow's name
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type not in ("cuda", "cpu"):
            raise RuntimeError("User specified autocast device_type must be 'cuda' or 'cpu'")
        self.device = device_type
        self.fast_dtype = dtype if dtype is not None else (get_autocast_gpu_dtype() if device_type == "cuda"
                                                           else get_autocast_cpu_dtype())
        self.cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if device_type == "cpu":
            warnings.warn("CPU autocast is not supported currently. Disabling autocast.")
            enabled = False
        if lazy.tracer_active():
            warnings.warn("Autocast is not supported for lazy mode. Disabling autocast.")
            enabled = False
        if enabled and devices.cuda_usable():
            raise NotImplementedError("flow.autocast('cuda') on a GPU is not supported (OneFlow computes the CUDA "
                                      "ops in %s there; this implementation computes in float32)"
                                      % (self.fast_dtype,))
        self.enabled = enabled

    def __enter__(self):
        _STATE.enabled.append(bool(self.enabled))
        return self

    def __exit__(self, *exc):
        _STATE.enabled.pop()
        return False

    def __call__(self, func):
        return autocast_decorator(self, func)
