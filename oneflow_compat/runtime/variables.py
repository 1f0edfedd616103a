"""Session variables: one spec per full name, its storage as per-device pieces of the logical tensor."""
import numpy as np

from oneflow_compat.ir import sbp as sbp_mod
from oneflow_compat.ops import initial_values
from oneflow_compat.ops.variable_ops import shares_replicas


class VarStore:
    def __init__(self, session):
        self.session = session
        self.specs = {}

    def __contains__(self, name):
        return name in self.specs

    def get(self, name):
        return self.specs.get(name)

    def add(self, spec):
        self.specs[spec.name] = spec

    # --- values -------------------------------------------------------------------------------------------
    def initial_value(self, spec):
        if spec.init_value is not None:
            return np.full(spec.shape, spec.init_value, dtype=spec.dtype.np)
        conf = spec.initializer
        if conf is None:
            raise ValueError("variable '%s' has no initializer (give one, or set "
                             "function_config.default_initializer_conf)" % spec.name)
        value = initial_values.generate(conf, spec.shape, spec.dtype.np, spec.seed)
        return np.ascontiguousarray(value, dtype=spec.dtype.np)

    def initialize(self, spec):
        self.set_full(spec, self.initial_value(spec), fresh=True)

    def set_full(self, spec, value, fresh=False):
        """Stores the full logical `value` into the local pieces (in place, so compiled plans keep seeing them)."""
        spec.host_writes = getattr(spec, "host_writes", 0) + 1  # host copies of the value are stale (ops/host_step)
        rt = self.session.runtime
        n = spec.placement.parallel_num
        local = rt.local_indices(spec.placement)
        if shares_replicas(spec.placement, spec.sbp) and local:
            # the CPU devices of one process hold a broadcast variable in one array (updated once per step)
            if fresh or local[0] not in spec.shards:
                shared = np.array(value, copy=True, order="C")
                for i in local:
                    spec.shards[i] = shared
            else:
                spec.shards[local[0]][...] = value
            return
        for i in local:
            piece = value[sbp_mod.local_slices(spec.shape, spec.sbp, i, n)]
            if fresh or i not in spec.shards:
                spec.shards[i] = rt.to_device(np.array(piece, copy=True, order="C"), spec.placement, i)
            else:
                spec.shards[i][...] = rt.to_device(piece, spec.placement, i)

    def get_full(self, spec):
        """The full logical value on the host (gathered from every process under MPI)."""
        return self.session.runtime.assemble(spec.shards, spec.shape, spec.dtype.np, spec.placement, spec.sbp)
