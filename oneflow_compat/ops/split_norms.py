"""Norms of a whole variable from the pieces of a split one (LAMB's and LARS's trust ratios on model-parallel
variables).

A split variable's squared L2 norm is the sum over its distinct pieces of their squared norms. Each process
measures the pieces it holds; one all-reduce of a small table (a row per device of the placement, a column per
norm) among the processes of the placement gives every process every device's terms; the rows of the devices
whose pieces count once (on a mesh, the replicas along a broadcast axis count at their first coordinate only) are
summed in parallel order, in float64, so every rank gets the same norms whatever the process layout, and N devices
equal 1 device up to the order of that sum.

On a device the norms never come to the host: the table is a device array (its rows the pieces' squared norms,
written by device copies), all-reduced by the device comm (NCCL; comm/nccl_comm.py) and summed there, and the
norms given back are 0-d device arrays (float64) that the optimizers read in device formulas (the trust ratio as
a `where`, not a Python branch): a step with LARS or LAMB makes no synchronisation of its own.
"""
import numpy as np

from oneflow_compat.ir import sbp as sbp_mod


def counted_devices(placement, sbp):
    """Per device (parallel order): whether its piece counts in the whole (not a replica of an earlier one)."""
    n = placement.parallel_num
    if type(sbp) is sbp_mod.NdSbp:
        mesh, symbols = tuple(sbp.mesh), tuple(sbp.sbps)
    else:
        mesh, symbols = (n,), (sbp,)
    out = []
    for p in range(n):
        coords = np.unravel_index(p, mesh)
        out.append(all(c == 0 or sbp_mod.is_split(s) for c, s in zip(coords, symbols)))
    return out


def is_split_over_devices(placement, sbp):
    return placement.parallel_num > 1 and bool(sbp_mod.split_axes(sbp))


def whole_norms(comm, placement, sbp, local_indices, local_arrays):
    """The whole variable's L2 norms (floats): `local_arrays[i]` lists, for the device `local_indices[i]` of this
    process, the pieces to measure (the same number for every device); every process of the placement calls it
    at the same point."""
    width = len(local_arrays[0]) if local_arrays else 0
    xp = array_module(local_arrays[0][0]) if width else np
    if xp is not np:
        return _device_norms(xp, comm, placement, sbp, local_indices, local_arrays, width)
    table = np.zeros((placement.parallel_num, width), np.float64)
    for index, arrays in zip(local_indices, local_arrays):
        table[index] = [float(_squared(a)) for a in arrays]
    ranks = placement.machines
    if comm is not None and len(ranks) > 1:
        table = comm.allreduce_(table, ranks)
    rows = table[np.asarray(counted_devices(placement, sbp), bool)]
    return [float(np.sqrt(rows[:, j].sum())) for j in range(width)]


def _device_norms(xp, comm, placement, sbp, local_indices, local_arrays, width):
    """`whole_norms` on a device: the same table and sums, as device arrays (the module docstring)."""
    table = xp.zeros((placement.parallel_num, width), np.float64)
    for index, arrays in zip(local_indices, local_arrays):
        for j, a in enumerate(arrays):
            table[index, j] = _squared(a)
    ranks = placement.machines
    if comm is not None and len(ranks) > 1:
        if getattr(comm, "xp", None) is not xp:  # (a host comm: the table goes down, explicitly)
            from oneflow_compat.backend import devices

            table = xp.asarray(comm.allreduce_(np.array(devices.to_host(table)), ranks))
        else:
            table = comm.allreduce_(table, ranks)
    counted = [i for i, c in enumerate(counted_devices(placement, sbp)) if c]
    total = table[counted[0]]
    for i in counted[1:]:  # (the rows in parallel order, as numpy adds a column of up to 8)
        total = total + table[i]
    norms = xp.sqrt(total)
    return [norms[j] for j in range(width)]


def array_module(a):
    """numpy for a host array, else the device array module `a` belongs to."""
    if isinstance(a, (np.ndarray, np.generic)):
        return np
    from oneflow_compat.backend import devices

    return devices.module_of(a)


def run_updates(runs, norms_of):
    """Drives split updates (generators, one per local piece: each yields the arrays it measures, receives the whole
    variable's norms and finishes); `norms_of([arrays per piece]) -> [norms]`."""
    arrays = [next(r) for r in runs]
    norms = norms_of(arrays)
    for r in runs:
        try:
            r.send(norms)
        except StopIteration:
            continue
        raise AssertionError("a split update yielded twice")


def _squared(a):
    xp = np
    if not isinstance(a, np.ndarray):
        from oneflow_compat.backend import devices

        xp = devices.module_of(a)
    flat = a.reshape(-1)
    return xp.vdot(flat, flat)
