"""The job's process comm: `get_process_comm()` picks the single-process comm or the MPI comm from what the
launcher's environment says (`environment.py`), once per process.

The environment helpers are re-exported here because callers read them as `world.detect_mpi_world()` etc.
"""
from .environment import (THREAD_VARIABLES, detect_local_size, detect_mpi_world,  # noqa: F401 (re-exported)
                          limit_blas_threads, limit_loaded_blas_threads, threads_per_rank, usable_cores)


class MPIUnavailableError(RuntimeError):
    """The environment says this is one rank of a multi-process MPI job, but mpi4py cannot be imported."""


_process_comm = None


def get_process_comm():
    """The process-level comm of this job, created on first use and cached.

    Not under MPI (or a world of 1 without mpi4py): a `SingleProcessComm`, and mpi4py is never imported.
    Under MPI: an `MPIComm` over MPI_COMM_WORLD; with size > 1 this also installs the failure handlers (an
    uncaught exception on any rank aborts every rank) and the per-rank output rules (`output.py`).
    """
    global _process_comm
    if _process_comm is not None:
        return _process_comm
    world = detect_mpi_world()
    if world is None:
        from .process_comm import SingleProcessComm
        _process_comm = SingleProcessComm()
        return _process_comm
    rank, size = world
    try:
        import mpi4py  # noqa: F401  (only checks that it is installed; MPI itself starts in MPIComm)
    except ImportError:
        if size == 1:
            from .process_comm import SingleProcessComm
            _process_comm = SingleProcessComm()
            return _process_comm
        import sys
        raise MPIUnavailableError(
            "this process is rank %d of an MPI job of %d processes, but mpi4py is not installed in %s; "
            "install it into this environment (pip install mpich mpi4py) or run the script without mpiexec"
            % (rank, size, sys.executable)) from None
    from .mpi_comm import MPIComm, install_failure_handlers
    from .output import setup_rank_output
    comm = MPIComm()
    if (comm.rank, comm.size) != (rank, size):
        raise MPIUnavailableError(
            "the launcher's environment says rank %d of %d, but MPI_COMM_WORLD is rank %d of %d: "
            "mpi4py is probably built against a different MPI than the mpiexec that started this job"
            % (rank, size, comm.rank, comm.size))
    if size > 1:
        install_failure_handlers()
        setup_rank_output(rank, size)
    _process_comm = comm
    return _process_comm
