"""Which process of which job is this? Read from the launcher's environment variables only.

Nothing here imports mpi4py or numpy: a plain `python script.py` must not need, load or initialise MPI, and the
thread limits below only work if they are set before numpy loads its BLAS.
"""
import os

# (rank variable, size variable) pairs set by the common launchers, most specific first.
_RANK_SIZE_VARIABLES = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),   # Open MPI (mpirun / prte)
    ("PMI_RANK", "PMI_SIZE"),                           # MPICH / Intel MPI hydra, Slurm with PMI-1/PMI-2
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),     # MVAPICH2 (mpirun_rsh)
    ("PMIX_RANK", "PMIX_SIZE"),                         # PMIx launchers that export the size
    ("PMIX_RANK", "SLURM_STEP_NUM_TASKS"),              # Slurm `srun --mpi=pmix`
)

# Number of ranks on this host, as the launchers export it.
_LOCAL_SIZE_VARIABLES = (
    "MPI_LOCALNRANKS",              # MPICH hydra
    "OMPI_COMM_WORLD_LOCAL_SIZE",   # Open MPI
    "MV2_COMM_WORLD_LOCAL_SIZE",    # MVAPICH2
    "SLURM_STEP_TASKS_PER_NODE",    # Slurm (may read "4(x2)": the leading count is used)
)

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _parse_count(name, text):
    digits = text.strip().split("(")[0].split(",")[0]
    try:
        return int(digits)
    except ValueError:
        raise ValueError("environment variable %s=%r is not an integer" % (name, text)) from None


def detect_mpi_world(environ=None):
    """`(rank, size)` when this process was started by an MPI launcher, else None (environment only)."""
    environ = os.environ if environ is None else environ
    for rank_var, size_var in _RANK_SIZE_VARIABLES:
        if rank_var in environ and size_var in environ:
            rank = _parse_count(rank_var, environ[rank_var])
            size = _parse_count(size_var, environ[size_var])
            if size < 1 or not 0 <= rank < size:
                raise ValueError("inconsistent MPI environment: %s=%d, %s=%d" % (rank_var, rank, size_var, size))
            return rank, size
    return None


def detect_local_size(environ=None):
    """How many ranks of this job run on this host (1 when not under MPI or unknown)."""
    environ = os.environ if environ is None else environ
    for name in _LOCAL_SIZE_VARIABLES:
        if name in environ:
            return max(1, _parse_count(name, environ[name]))
    world = detect_mpi_world(environ)
    return 1 if world is None else world[1]  # unknown layout: assume every rank shares this host


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def threads_per_rank(ranks_on_host, cores=None):
    """Each rank's share of the host's cores: max(1, cores // ranks on the host)."""
    cores = usable_cores() if cores is None else cores
    return max(1, cores // max(1, ranks_on_host))


def limit_blas_threads(environ=None):
    """Under MPI with several ranks on this host, set the unset BLAS/OpenMP thread variables to this rank's share.

    N ranks each running BLAS with one thread per core oversubscribe the machine and are slower than one rank.
    Effective only before numpy (or torch) is imported — call it first thing. Variables the user set are kept.
    Returns the dict of variables it set.
    """
    environ = os.environ if environ is None else environ
    if detect_mpi_world(environ) is None:
        return {}
    local = detect_local_size(environ)
    if local <= 1:
        return {}
    share = str(threads_per_rank(local))
    chosen = {name: share for name in THREAD_VARIABLES if name not in environ}
    environ.update(chosen)
    return chosen


_SET_THREADS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                "scipy_openblas_set_num_threads", "MKL_Set_Num_Threads")


def limit_loaded_blas_threads(threads):
    """Tell BLAS libraries that are already loaded (numpy imported before oneflow) to use `threads` threads —
    the thread variables only work before that. Finds them in /proc/self/maps (Linux); returns their paths."""
    import ctypes
    import re

    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return []
    done = []
    for path in sorted(set(re.findall(r"(/\S*(?:openblas|mkl_rt)\S*\.so[\w.]*)", maps))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SET_THREADS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(ctypes.c_int(int(threads)))
                done.append(path)
                break
    return done


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
