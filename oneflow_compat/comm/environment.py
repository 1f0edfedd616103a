"""Which process of which job is this, and how many cores may it use? Read from the launcher's environment only.

Nothing here imports mpi4py or numpy: a plain `python script.py` must not need, load or initialise MPI, and the
thread limits below only work if they are set before numpy loads its BLAS. Both the MPI comm (`mpi_comm.py`, for
the host layout) and the comm chooser (`world.py`) read it, so that neither has to import the other.
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

# Variables an MPI launcher sets for the processes of ITS job (rank, size, the PMI server's address, ...): a job
# started from such a process must not inherit them. The MPI library's own configuration under the same prefixes
# (Open MPI's and PMIx's MCA parameters, Open MPI's consent to run as root) belongs to the machine, not to the job,
# and is kept: the first GPU machine set OMPI_MCA_plm=isolated, without which its mpiexec looks for ssh and fails.
MPI_JOB_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "MV2_", "HYDRA_", "MPI_LOCAL")
MPI_CONFIGURATION_PREFIXES = ("OMPI_MCA_", "PMIX_MCA_", "OMPI_ALLOW_RUN_AS_ROOT")


def is_job_variable(name, prefixes=MPI_JOB_PREFIXES):
    """Whether the environment variable `name` describes a running job (it starts with one of `prefixes`) rather
    than configure the MPI library (MPI_CONFIGURATION_PREFIXES): what a launcher drops from a new job's
    environment."""
    return name.startswith(prefixes) and not name.startswith(MPI_CONFIGURATION_PREFIXES)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

TIMEOUT_ENV = "ONEFLOW_COMPAT_COMM_TIMEOUT"
# Long enough for a slow step on a loaded machine, short enough that a stuck job is noticed (a warning comes at
# half of it); a job that truly needs no limit says so with "inf".
DEFAULT_TIMEOUT_S = 60.0


def check_timeout(value, source="timeout"):
    """`value` as seconds > 0 (`inf` allowed, spelled out); NaN, zero, negative or non-numbers are errors — none
    of them may silently disable the limit."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s=%r is not a number of seconds (write inf for no limit)" % (source, value)) from None
    if not seconds > 0:  # also rejects NaN, which compares false to everything
        raise ValueError("%s must be a positive number of seconds or inf, got %r" % (source, value))
    return seconds


def comm_timeout_from_env(environ=None):
    """The comm timeout `ONEFLOW_COMPAT_COMM_TIMEOUT` asks for (seconds, or inf), else `DEFAULT_TIMEOUT_S`."""
    text = (os.environ if environ is None else environ).get(TIMEOUT_ENV)
    if text is None or not text.strip():
        return DEFAULT_TIMEOUT_S
    return check_timeout(text.strip(), TIMEOUT_ENV)


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


def limit_loaded_blas_threads(threads):
    """Tell BLAS libraries that are already loaded (numpy imported before oneflow) to use `threads` threads —
    the thread variables only work before that. Finds them through threadpoolctl (OpenBLAS, MKL, BLIS, …, on
    Linux, macOS and Windows); returns their paths."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # a dependency; without it the variables above are the only limit
        return []
    done = []
    for controller in ThreadpoolController().select(user_api="blas").lib_controllers:
        # OpenBLAS's count is process-wide and threadpoolctl lets only one thread set it: take control first
        clear = getattr(type(controller), "clear_controlling_thread", None)
        if clear is not None:
            clear(force=True)
        controller.set_num_threads(int(threads))
        done.append(controller.filepath)
    return done
