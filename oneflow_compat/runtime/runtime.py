"""The process-level runtime: which devices are local, which physical GPU each runs on, moving pieces to devices,
assembling logical values."""
import contextlib
import os

import numpy as np

from oneflow_compat.backend import devices, gpu_map
from oneflow_compat.comm import world
from oneflow_compat.runtime import boxing
from oneflow_compat.runtime.executable import keep_freed_memory


NCCL_ENV = "ONEFLOW_COMPAT_NCCL"


class Runtime:
    """`devices_per_process`: the logical devices each process drives (a legacy session's device count; None for
    the global API, whose ranks drive one device each): with the process's local rank it gives each logical device
    its physical GPU (backend/gpu_map.py: local rank × devices per process + d, or ONEFLOW_COMPAT_GPU_MAP)."""

    def __init__(self, comm, machine_id, devices_per_process=None):
        self.comm = comm
        self.machine_id = machine_id
        self.gpus = gpu_map.ProcessGpus(world.job_local_rank(), devices_per_process)
        self._host_feeds = False
        self._device_comm = None  # None: not looked for yet; False: none here
        # every path (legacy jobs, nn.Graph, eager global ops, boxing) allocates its large results afresh: served
        # from memory already mapped, not faulted in page by page (a 16 MB to_global spent as long in page faults
        # as in MPI)
        keep_freed_memory()

    @contextlib.contextmanager
    def host_feeds(self):
        """Inside: `to_device` leaves fed values on the host (a captured CUDA graph stages them itself)."""
        previous, self._host_feeds = self._host_feeds, True
        try:
            yield
        finally:
            self._host_feeds = previous

    @property
    def device_comm(self):
        """The comm of boxings between GPU placements across processes: NCCL (comm/nccl_comm.py) where the job runs
        on several processes with CUDA usable and CuPy's NCCL loadable, unless ONEFLOW_COMPAT_NCCL=0; else None
        (their pieces then go through the process comm on the host). Made on first use. Simulated ranks (threads
        of this process, on its GPU) never take it; within it, a rank set whose members share a GPU goes through
        the process comm too (NCCL refuses two ranks on one GPU: `NcclComm.route`)."""
        if self._device_comm is False:
            return None
        if self._device_comm is None:
            self._device_comm = False
            if self.comm.size > 1 and not getattr(self.comm, "ranks_are_threads", False) and os.environ.get(NCCL_ENV, "1").strip() != "0" and devices.mode() != "cpu" \
                    and devices.cuda_usable():
                from oneflow_compat.comm import nccl_comm

                xp = devices.array_module("gpu")
                if nccl_comm.available(xp):
                    self.gpus.select_home(xp)
                    self._device_comm = nccl_comm.NcclComm(self.comm, xp)
        return self._device_comm or None

    def local_indices(self, placement):
        """Indices (in parallel order) of the placement's devices that live in this process."""
        return [i for i, (m, _) in enumerate(placement.pairs) if m == self.machine_id]

    def xp(self, placement):
        xp = devices.array_module(placement.device_tag)
        if xp is not np:
            self.gpus.select_home(xp)  # the process's first device's GPU, current from the first device array on
        return xp

    def gpu_of(self, placement, index):
        """The physical GPU of device `index` (of this process) of a "gpu" placement."""
        return self.gpus.of(self.xp(placement), placement.pairs[index][1])

    def on_device(self, placement, index):
        """A context making device `index`'s GPU current (nothing to do on the host or on the home GPU)."""
        xp = self.xp(placement)
        if xp is np or index is None:
            return contextlib.nullcontext()
        return self.gpus.on(xp, placement.pairs[index][1])

    def to_device(self, array, placement, index=None):
        """`array` where `placement`'s devices compute: a device array for "gpu" (on device `index`'s GPU when
        given), a host array for "cpu" (device arrays are copied down). Object arrays (records, tensor buffers)
        always stay on the host."""
        if getattr(array, "dtype", None) == object:
            return array
        if self._host_feeds:
            return array if devices.is_device_array(array) else np.asarray(array)
        if placement.device_tag == "gpu":
            with self.on_device(placement, index):
                return self.xp(placement).asarray(array)
        return devices.to_host(array)

    def assemble(self, shards, shape, np_dtype, placement, sbp):
        """A fresh host array with the full logical value (`shards`: device index -> piece for the local devices);
        under MPI every rank gets it."""
        return boxing.assemble(self, shards, shape, np_dtype, placement, sbp)
