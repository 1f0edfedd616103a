"""The process-level runtime: which devices are local, moving pieces to devices, assembling logical values."""
from oneflow_compat.backend import devices
from oneflow_compat.runtime import boxing
from oneflow_compat.runtime.executable import keep_freed_memory


class Runtime:
    def __init__(self, comm, machine_id):
        self.comm = comm
        self.machine_id = machine_id
        # every path (legacy jobs, nn.Graph, eager global ops, boxing) allocates its large results afresh: served
        # from memory already mapped, not faulted in page by page (a 16 MB to_global spent as long in page faults
        # as in MPI)
        keep_freed_memory()

    def local_indices(self, placement):
        """Indices (in parallel order) of the placement's devices that live in this process."""
        return [i for i, (m, _) in enumerate(placement.pairs) if m == self.machine_id]

    def xp(self, placement):
        return devices.array_module(placement.device_tag)

    def to_device(self, array, placement):
        """`array` where `placement`'s devices compute: a device array for "gpu", a host array for "cpu" (device
        arrays are copied down). Object arrays (records, tensor buffers) always stay on the host."""
        if getattr(array, "dtype", None) == object:
            return array
        if placement.device_tag == "gpu":
            return devices.array_module("gpu").asarray(array)
        return devices.to_host(array)

    def assemble(self, shards, shape, np_dtype, placement, sbp):
        """A fresh host array with the full logical value (`shards`: device index -> piece for the local devices);
        under MPI every rank gets it."""
        return boxing.assemble(self, shards, shape, np_dtype, placement, sbp)
