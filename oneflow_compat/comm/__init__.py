"""Communication between the processes of a job (MPI rank r = machine r).

`get_process_comm()` returns the job's `ProcessComm` (single-process, or MPI under `mpiexec`); the runtime builds
its device-level collectives on it. Importing this package loads neither numpy nor mpi4py (so that
`limit_blas_threads()` can still take effect); the names below that need numpy are loaded on first access.
"""
from .environment import detect_local_size, detect_mpi_world, limit_blas_threads, threads_per_rank
from .world import MPIUnavailableError, get_process_comm

_LAZY = {
    "ProcessComm": "process_comm",
    "SingleProcessComm": "process_comm",
    "CommError": "process_comm",
    "PlanMismatchError": "process_comm",
    "CollectiveTimeout": "process_comm",
    "balanced_sizes": "process_comm",
    "balanced_offsets": "process_comm",
    "setup_rank_output": "output",
    "SimulatedWorld": "simulated",
    "RecordingComm": "recording",
}

__all__ = ["MPIUnavailableError", "detect_local_size", "detect_mpi_world", "get_process_comm",
           "limit_blas_threads", "threads_per_rank", "set_timeout", "setup_rank_output_from_env"] + list(_LAZY)


def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    import importlib
    value = getattr(importlib.import_module("." + module_name, __name__), name)
    globals()[name] = value
    return value


def set_timeout(seconds):
    """Seconds any collective of this job's process comm may wait before raising `CollectiveTimeout`."""
    get_process_comm().set_timeout(seconds)


def setup_rank_output_from_env():
    """Apply the per-rank output rules (stdout once, prefixed stderr) as soon as the launcher's environment says
    this is one of several ranks — without starting MPI. Meant for `import oneflow` time."""
    world = detect_mpi_world()
    if world is not None:
        from .output import setup_rank_output
        setup_rank_output(*world)
