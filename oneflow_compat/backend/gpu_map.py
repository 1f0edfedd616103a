"""Which physical GPU a logical device runs on.

Logical device d of a process (a legacy machine, or a global-API rank) with local rank r among the processes of
its host, each driving `devices_per_process` devices, is slot `r * devices_per_process + d` of the host; slot k runs
on GPU `k mod gpu_count`, so processes on one host spread over its GPUs and N logical devices share one GPU when
there is only one. `ONEFLOW_COMPAT_GPU_MAP=3,2,1,0` overrides the rule: slot k runs on the k-th listed GPU.
"""
import contextlib
import os

GPU_MAP_ENV = "ONEFLOW_COMPAT_GPU_MAP"


def parse_gpu_map(text, gpu_count):
    """The physical GPU of each slot from the variable's text ("3,2,1,0"); None for an unset or empty variable."""
    if text is None or not text.strip():
        return None
    slots = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit():
            raise ValueError("%s=%r: expected comma-separated GPU numbers such as '1,0', got %r"
                             % (GPU_MAP_ENV, text, item))
        gpu = int(item)
        if gpu >= gpu_count:
            raise ValueError("%s=%r names GPU %d, but this host has %d GPU(s)" % (GPU_MAP_ENV, text, gpu, gpu_count))
        slots.append(gpu)
    return slots


def physical_gpu(device, local_rank, devices_per_process, gpu_count, gpu_map=None):
    """The GPU number of logical device `device` of the process with `local_rank` on its host.

    `gpu_map`: the parsed override (`parse_gpu_map`), or None for the rule `slot mod gpu_count`."""
    if gpu_count < 1:
        raise ValueError("no GPU to map logical device %d to" % device)
    if not 0 <= device < devices_per_process:
        raise ValueError("logical device %d outside the %d device(s) of a process" % (device, devices_per_process))
    slot = local_rank * devices_per_process + device
    if gpu_map is None:
        return slot % gpu_count
    if slot >= len(gpu_map):
        raise ValueError("%s lists %d GPU(s), but logical device %d of local rank %d is slot %d (%d device(s) per "
                         "process)" % (GPU_MAP_ENV, len(gpu_map), device, local_rank, slot, devices_per_process))
    return gpu_map[slot]


def gpu_count(xp):
    """The GPUs `xp` (CuPy) sees; 1 for a device module without a CUDA runtime (the tests' fake)."""
    cuda = getattr(xp, "cuda", None)
    return cuda.runtime.getDeviceCount() if cuda is not None else 1


class ProcessGpus:
    """The physical GPU of each logical device of this process, and the context that makes one current.

    `local_rank`: the process's index on its host; `devices_per_process`: the logical devices each process drives
    (None: one per process for device 0, else d + 1, as the global API's placements give them). The home GPU —
    that of logical device 0 — is made current once (`select_home`); steps of a device on another GPU run inside
    `on(gpu)`."""

    def __init__(self, local_rank, devices_per_process=None, environ=None):
        self.local_rank, self.devices_per_process = local_rank, devices_per_process
        self.environ = os.environ if environ is None else environ
        self._map = {}
        self.home = None

    def of(self, xp, device):
        found = self._map.get(device)
        if found is None:
            count = gpu_count(xp)
            per = self.devices_per_process or (device + 1)
            # a placement with more devices than the process drives GPUs — under ONEFLOW_COMPAT_DEVICE=gpu a legacy
            # "cpu" placement of cpu_device_num devices (the zoo's readers: 2 per GPU) runs on GPUs too — cycles
            # over the process's own GPUs
            found = self._map[device] = physical_gpu(device % per, self.local_rank, per, count,
                                                     parse_gpu_map(self.environ.get(GPU_MAP_ENV), count))
        return found

    def select_home(self, xp):
        """Makes logical device 0's GPU current (once): every step of a process on one GPU then needs no switch."""
        if self.home is None:
            self.home = self.of(xp, 0)
            cuda = getattr(xp, "cuda", None)
            if cuda is not None:
                cuda.Device(self.home).use()
        return self.home

    @contextlib.contextmanager
    def on(self, xp, device):
        """Makes the GPU of logical device `device` current inside the block, where it is not the home GPU."""
        gpu = self.of(xp, device)
        cuda = getattr(xp, "cuda", None)
        if cuda is None or gpu == self.select_home(xp):
            yield gpu
            return
        with cuda.Device(gpu):
            yield gpu
