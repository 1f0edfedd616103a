"""The process-level runtime: which devices are local, moving pieces to devices, assembling logical values."""
import numpy as np

from oneflow_compat.ir import sbp as sbp_mod
from oneflow_compat.backend import devices


class Runtime:
    def __init__(self, comm, machine_id):
        self.comm = comm
        self.machine_id = machine_id

    def local_indices(self, placement):
        """Indices (in parallel order) of the placement's devices that live in this process."""
        return [i for i, (m, _) in enumerate(placement.pairs) if m == self.machine_id]

    def xp(self, placement):
        return devices.array_module(placement.device_tag)

    def to_device(self, array, placement):
        if placement.device_tag == "gpu":
            return devices.array_module("gpu").asarray(array)
        return array

    def assemble(self, shards, shape, np_dtype, placement, sbp):
        """Full logical value from the pieces (`shards`: index -> array for the local devices); under MPI every
        rank gets it."""
        n = placement.parallel_num
        if self.comm.size > 1:
            from oneflow_compat.runtime import distributed

            return np.array(distributed.assemble(self, shards, shape, np_dtype, placement, sbp), copy=True)
        pieces = [shards[i] for i in range(n)]
        if n == 1 or sbp == sbp_mod.B:
            # a copy: the piece may be a variable's storage, which later steps update in place
            return np.array(devices.to_host(pieces[0]), copy=True)
        if sbp == sbp_mod.P:
            out = np.asarray(devices.to_host(pieces[0])).copy()
            for p in pieces[1:]:
                out += devices.to_host(p)
            return out
        if sbp_mod.is_split(sbp):
            return np.concatenate([devices.to_host(p) for p in pieces], axis=sbp.axis)
        raise ValueError("cannot assemble a logical value from sbp %r" % (sbp,))
