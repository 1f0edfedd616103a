"""A local tensor's device, index included, as the one string every op carries on (`Tensor._device`).

OneFlow 0.9 gives every local tensor a device with an index (`Symbol<Device>`: type and device id): a device
string without an index names the process's own device, index LOCAL_RANK (`Device::ParseAndNew`, `Device::New(type)`
in core/framework/device.cpp @ v0.9.0), an op's results are on its inputs' device, and inputs on two devices —
`cuda:0` and `cuda:1` as well as `cpu` and `cuda` — are refused (`CheckInputDeviceIdentical`,
core/framework/local_tensor_infer_cache.cpp). `cuda:K` is the K-th CUDA device of the machine (OneFlow's device id
is CUDA's ordinal).

Here a tensor's `_device` is its key: "cpu" / "cuda" for the process's own device (the common case, compared as
before: every op that copies `_device` onto its results carries the index with it), "cpu:K" / "cuda:K" for another
index K. A "cuda:K" tensor's arrays live on the GPU that index names and its ops run with that GPU current
(`current`); where "cuda" runs on the CPU (no usable GPU) the index is kept and checked all the same: the check is
about the devices the user named.
"""
import contextlib
import os

from oneflow_compat.comm import world

PLAIN = frozenset(("cpu", "cuda"))


_MEMO = [None, 0]  # [what the local rank was computed from, the local rank]


def local_rank():
    """This process's local rank (`world.job_local_rank`, which reads and parses the launch and MPI variables:
    ~100 µs), remembered while the function (which tests replace), the launcher's LOCAL_RANK and the number of
    environment variables stay the same: every `tensor.device` of a plain key and every device string with an index
    asks for it. (An MPI launcher's variables are set before the process starts: they do not change in it.)"""
    fn = world.job_local_rank
    environ = os.environ
    source = (fn, len(environ), environ.get("LOCAL_RANK"))
    if _MEMO[0] != source:
        _MEMO[1] = fn()
        _MEMO[0] = source
    return _MEMO[1]


_local_rank = local_rank


class DeviceStringError(RuntimeError, ValueError):
    """An unknown device type: a RuntimeError as OneFlow 0.9's (its words), a ValueError as this project raised."""


def parse_type(device):
    """'cpu' / 'cuda' / 'cuda:0' / flow.device -> device type (None: "cpu")."""
    if device is None:
        return "cpu"
    kind = getattr(device, "type", device)
    if not isinstance(kind, str):
        raise TypeError("device must be a string like 'cpu' or 'cuda:0', got %r" % (device,))
    kind = kind.split(":")[0]
    if kind not in PLAIN:
        raise DeviceStringError("Expected one of cpu, cuda device type at start of device string: %s" % (device,))
    return kind


def parse_index(text):
    """The index a device string names, or None (no index, or ParsingDeviceTag's -1: the process's own);
    OneFlow 0.9's words for one that is no integer (core/framework/device.cpp)."""
    if ":" not in text:
        return None
    idx = text.split(":", 1)[1]
    if not idx.lstrip("-").isdigit():
        raise DeviceStringError("Invalid device tag %s" % text)
    index = int(idx)
    return None if index == -1 else index


def key(device):
    """The key of a device: None, "cpu", "cuda", "cuda:1", a flow.device (an index equal to the process's local
    rank is the plain type)."""
    if device is None:
        return "cpu"
    if device.__class__ is str and device in PLAIN:
        return device
    kind = parse_type(device)
    index = parse_index(device) if isinstance(device, str) else getattr(device, "index", None)
    if index is None or index == _local_rank():
        return kind
    return "%s:%d" % (kind, index)


def type_of(k):
    """"cpu" / "cuda" of a key."""
    return k if k in PLAIN else k.split(":", 1)[0]


def index_of(k):
    """The device index a key names (the process's local rank for a plain one)."""
    return _local_rank() if k in PLAIN else int(k.split(":", 1)[1])


def _invalid_ordinal(index, count):
    # CUDA's words for cudaErrorInvalidDevice in OneFlow's OF_CUDA_CHECK line (InitCudaContextOnce's
    # cudaSetDevice, core/device/cuda_util.cpp @ v0.9.0)
    return RuntimeError("Check failed: cudaSetDevice(device_id) : invalid device ordinal (101) (oneflow_compat: "
                        "device cuda:%d, this process sees %d CUDA device(s))" % (index, count))


def gpu(k):
    """The physical GPU a "cuda:K" key runs on, or None where nothing is to be switched (the process's own device,
    the CPU, "cuda" running on the CPU). Index K is the GPU the rule of backend/gpu_map.py gives a process of local
    rank K (GPU K; ONEFLOW_COMPAT_GPU_MAP's K-th entry), so that "cuda:LOCAL_RANK" is the process's own GPU."""
    if k in PLAIN or not k.startswith("cuda"):
        return None
    from oneflow_compat.backend import devices, gpu_map

    if devices.mode() == "cpu" or not devices.cuda_usable():
        return None
    xp = devices.array_module("gpu")
    count = gpu_map.gpu_count(xp)
    index = index_of(k)
    if index >= count:
        raise _invalid_ordinal(index, count)
    return gpu_map.physical_gpu(0, index, 1, count, gpu_map.parse_gpu_map(os.environ.get(gpu_map.GPU_MAP_ENV),
                                                                         count))


@contextlib.contextmanager
def _on(physical):
    from oneflow_compat.backend import devices

    xp = devices.array_module("gpu")
    from oneflow_compat.runtime import global_eager

    global_eager.runtime().gpus.select_home(xp)  # (the home GPU made current first: the switch returns to it)
    with xp.cuda.Device(physical):
        yield


def current(k):
    """A context making the GPU of key `k` current (nothing to do for the process's own device or the CPU): arrays
    made and kernels launched inside are on that GPU, as CuPy's device context does."""
    physical = gpu(k)
    if physical is None:
        return contextlib.nullcontext()
    return _on(physical)


def of(t):
    """`current` for tensor `t`'s device (nothing to switch for a global tensor: its placement's devices are the
    runtime's)."""
    if t._placement is not None or len(t._device) <= 4:
        return contextlib.nullcontext()
    return current(t._device)


def check(k):
    """Refuses a key naming a CUDA device this machine does not have (the context checks it)."""
    gpu(k)
    return k
