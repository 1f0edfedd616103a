"""Which array module runs a device tag, and the device switch `ONEFLOW_COMPAT_DEVICE`.

* `auto` (the default): "gpu" placements run on CuPy where a CUDA device is usable, else on CPU devices with one
  notice that says why CUDA is not usable, in the script's words ("gpu" or "cuda"; as OneFlow's CPU-only builds
  ran them).
* `cpu`: CUDA is never probed (CuPy is not even imported); "gpu" placements run on CPU devices.
* `gpu`: every placement and every device count is a GPU one (`cpu_device_num(n)` gives n logical devices on the
  GPU), and a CUDA that is not usable is an error carrying the exception of the failed import or driver call.

The switch is read at each use (tests change it); the probe of CUDA runs once per process.
"""
import os

import threading

import numpy as np

from oneflow_compat.backend import notices, step_scalars
from oneflow_compat.kernels import checks

MODE_ENV = "ONEFLOW_COMPAT_DEVICE"
MODES = ("auto", "cpu", "gpu")

_CUDA = None  # whether CUDA is usable, once probed
_CUDA_REASON = None  # why not, when it is not
_NOTICED = False


class CudaUnavailableError(RuntimeError):
    """`ONEFLOW_COMPAT_DEVICE=gpu` on a process where CUDA cannot run."""


def mode():
    """'auto', 'cpu' or 'gpu', from `ONEFLOW_COMPAT_DEVICE` (unset or empty: 'auto')."""
    value = os.environ.get(MODE_ENV, "").strip().lower()
    if not value:
        return "auto"
    if value not in MODES:
        raise ValueError("%s=%r: expected one of %s" % (MODE_ENV, os.environ[MODE_ENV], ", ".join(MODES)))
    return value


def _probe():
    """(usable, reason): imports CuPy, asks the driver for devices and runs one tiny kernel on device 0, so that a
    broken toolkit (no NVRTC, a driver too old for the runtime) shows here rather than in the first job."""
    try:
        import cupy
    except ModuleNotFoundError as e:
        if e.name == "cupy":  # the common case, said plainly
            return False, "CuPy is not installed; pip install 'oneflow_compat[gpu]' brings it"
        return False, "CuPy could not be imported: %s: %s" % (type(e).__name__, e)
    except Exception as e:  # noqa: BLE001 (any failure of the import means no CuPy: say which)
        return False, "CuPy could not be imported: %s: %s" % (type(e).__name__, e)
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        if count < 1:
            return False, "the CUDA driver reports no device"
        (cupy.arange(2, dtype=cupy.float32) + 1).get()
    except Exception as e:  # noqa: BLE001
        return False, "CUDA is not usable through CuPy: %s: %s" % (type(e).__name__, e)
    return True, None


def cuda_usable():
    """Whether "gpu" placements run on CUDA here. Never probes (nor imports CuPy) under `ONEFLOW_COMPAT_DEVICE=cpu`."""
    global _CUDA, _CUDA_REASON
    if mode() == "cpu":
        return False
    if _CUDA is None:
        _CUDA, _CUDA_REASON = _probe()
    return _CUDA


def unusable_reason():
    """Why "gpu" placements do not run on CUDA (None where they do)."""
    if mode() == "cpu":
        return "%s=cpu" % MODE_ENV
    if cuda_usable():
        return None
    return _CUDA_REASON or "CUDA was marked unusable"


def require_cuda():
    """Under `ONEFLOW_COMPAT_DEVICE=gpu`: an error saying why, unless CUDA is usable."""
    if not cuda_usable():
        raise CudaUnavailableError("%s=gpu, but CUDA is not usable: %s" % (MODE_ENV, unusable_reason()))


def resolve_tag(tag, spelled=None):
    """The tag a placement runs on: every tag is 'gpu' under `gpu` mode; 'gpu' becomes 'cpu' where CUDA is not
    usable (as OneFlow's CPU-only builds did), with one notice naming the reason. `spelled` is what the script
    wrote, for that notice: "gpu" placements (the legacy API, the default) or "cuda" tensors (the global API)."""
    if mode() == "gpu":
        require_cuda()
        return "gpu"
    if tag == "gpu" and not cuda_usable():
        if spelled == "cuda":
            fallback_notice('"cuda" tensors and placements run on the CPU')
        else:
            fallback_notice('"gpu" placements run on CPU devices')
        return "cpu"
    return tag


def fallback_notice(what_runs_instead):
    """The one notice of a process whose script asked for a GPU where CUDA is not usable: the reason, then what
    runs instead in the script's own words. Said once, whichever road (gpu_device_num, a placement, a "cuda"
    tensor) met the fact first."""
    global _NOTICED
    if not _NOTICED:
        _NOTICED = True
        notices.warn("no usable CUDA device (%s): %s", unusable_reason(), what_runs_instead)


def every_device_is_gpu():
    """Under `gpu` mode a CPU device count (`cpu_device_num(n)`) counts GPU devices."""
    return mode() == "gpu"


def array_module(tag):
    if tag == "gpu":
        import cupy

        return cupy
    return np


def is_device_array(x):
    """Whether `x` is an array of a device module (CuPy, or a stand-in with `.get()`), not a host value."""
    return not isinstance(x, (np.ndarray, np.generic)) and callable(getattr(x, "get", None)) and hasattr(x, "dtype")


def module_of(x):
    """The array module of an array: the device module ("gpu" placements' CuPy, or a stand-in) for a device array,
    numpy for anything else. By what the array is (`is_device_array`), not by the name of its type's module."""
    return array_module("gpu") if is_device_array(x) else np


def is_writeable(x):
    """Whether the array `x` may be written in place. A numpy array says so in `flags.writeable` (views of
    read-only buffers, broadcast views say False); a CuPy array's `flags` has no `writeable` (CuPy 14's Flags holds
    c_contiguous, f_contiguous, owndata only): device memory is always writeable."""
    if isinstance(x, np.ndarray):
        return x.flags.writeable
    return True


def to_host(x):
    """A host (numpy) value of `x`: device arrays are copied down, host values returned as they are. A fetch from a
    device raises what the pending device-side checks found (kernels/checks.py: an index out of range in an op
    since the last fetch); their flags come down in the same transfer as `x`, so the fetch stays one
    synchronisation."""
    if not is_device_array(x):
        return x
    step_scalars.refuse_in_capture("a device value read on the host inside a step")
    taken = checks.take_pending()
    if not taken:
        return x.get()
    if x.size * x.dtype.itemsize > PACK_WITH_CHECKS_BYTES:
        # packing would copy a large array once more on the device: it comes down alone, the checks after it
        # (a second, small transfer that waits for nothing: the device has finished what x needed)
        value = x.get()
        checks.restore_pending(taken)
        checks.raise_failed()
        return value
    host = to_host_all([x] + checks.device_arrays(taken))
    checks.put_back(taken, host[1:])
    checks.raise_failed()
    return host[0]


PACK_WITH_CHECKS_BYTES = 1 << 20  # up to this size a fetched array and the pending checks come down as one


def to_host_all(values):
    """Host values of `values` (device arrays and host values mixed) with ONE synchronisation: on CUDA with one
    device holding them, each array copied asynchronously into one pinned host buffer on the current stream, then
    one wait for the stream (`_pinned_download`: no packing kernel — CuPy's concatenate cost ~60 µs of host time
    per step on the first GPU run); elsewhere, per device, the arrays packed into one byte buffer there (one copy
    kernel), brought down together and cut apart on the host. A step's results and its device checks come down
    this way: one synchronisation per step."""
    values = list(values)
    on_device = [i for i, v in enumerate(values) if is_device_array(v)]
    if not on_device:
        return values
    groups = {}
    for i in on_device:
        device = getattr(getattr(values[i], "device", None), "id", 0)
        groups.setdefault(device, []).append(i)
    out = list(values)
    if len(groups) == 1 and len(on_device) > 1:
        host = _pinned_download([values[i] for i in on_device])
        if host is not None:
            for i, value in zip(on_device, host):
                out[i] = value
            return out
    for indices in groups.values():
        if len(indices) == 1:
            out[indices[0]] = values[indices[0]].get()
            continue
        arrays = [values[i] for i in indices]
        xp = array_module("gpu")
        flat = [xp.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
        packed = xp.concatenate(flat).get()
        at = 0
        for i, a in zip(indices, arrays):
            size = a.size * a.dtype.itemsize
            out[i] = packed[at:at + size].view(a.dtype).reshape(a.shape).copy()  # aligned, its own
            at += size
    return out


PINNED_DOWNLOAD_BYTES = 16 << 20  # the most a thread's download buffer holds (pinned memory is kept)
_DOWNLOADS = threading.local()  # this thread's pinned host buffer of `_pinned_download` (grown, reused)
_ALIGN = 64


def _pinned_download(arrays):
    """Host copies of device `arrays` (all on the current device) by asynchronous copies into one pinned buffer
    on the current stream and ONE wait for it; None where the module has no pinned memory (a packing kernel then)."""
    xp = array_module("gpu")
    cuda = getattr(xp, "cuda", None)
    if cuda is None or not hasattr(cuda, "alloc_pinned_memory") or not hasattr(cuda, "get_current_stream"):
        return None
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += -(-max(a.nbytes, 1) // _ALIGN) * _ALIGN
    if total > PINNED_DOWNLOAD_BYTES:
        return None  # (large results: not kept in pinned memory for the thread's life; packed as before)
    found = getattr(_DOWNLOADS, "buffer", None)
    if found is None or found[1].nbytes < total or found[2] is not xp:
        memory = cuda.alloc_pinned_memory(max(total, 4096))
        found = _DOWNLOADS.buffer = (memory, np.frombuffer(memory, np.uint8, max(total, 4096)), xp)
    host = found[1]
    stream = cuda.get_current_stream()
    views = []
    for a, at in zip(arrays, offsets):
        view = host[at:at + a.nbytes].view(a.dtype).reshape(a.shape)
        if a.size:
            a.get(stream=stream, out=view, blocking=False)  # (a strided array: CuPy makes it contiguous first)
        views.append(view)
    stream.synchronize()  # the one wait: every copy has landed
    return [v.copy() for v in views]  # (their own memory: the buffer is the next download's)
