"""The job's process comm: `get_process_comm()` picks the single-process comm or the MPI comm from what the
launcher's environment says (`environment.py`, `launcher_env.py`), once per process; and which process of the job
this is (`job_rank()` …), read from the environment without starting MPI.

Which communicator the MPI comm runs over: MPI_COMM_WORLD when it holds the whole job (one `mpiexec`, or the
launcher on one node); the communicator `join.py` makes when the launch variables say WORLD_SIZE is larger than
this MPI world (one `mpiexec` per node, or processes started by hand).

The environment helpers are re-exported here because callers read them as `world.detect_mpi_world()` etc.
"""
import contextlib
import os
import threading

from .environment import (THREAD_VARIABLES, detect_local_size, detect_mpi_world,  # noqa: F401 (re-exported)
                          limit_blas_threads, limit_loaded_blas_threads, threads_per_rank, usable_cores)
from .launcher_env import LaunchEnvironmentError, node_size, read_launch_environment  # noqa: F401 (re-exported)

# this process's index among the job's processes on its host, as the MPI launchers export it
_LOCAL_RANK_VARIABLES = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")


class MPIUnavailableError(RuntimeError):
    """The environment says this is one rank of a multi-process MPI job, but mpi4py cannot be imported."""


_process_comm = None


class _ThreadComm(threading.local):
    comm = None  # the comm of a simulated rank running in this thread (`simulated.py`), or None


_THREAD = _ThreadComm()


@contextlib.contextmanager
def simulated_rank(comm):
    """In this thread, while inside: `comm` (a `SimulatedComm`) is the process comm, and its rank and size are the
    job's (`explain --ranks N` runs a global-tensor program's N ranks as threads of one process)."""
    saved, _THREAD.comm = _THREAD.comm, comm
    try:
        yield comm
    finally:
        _THREAD.comm = saved


def thread_comm():
    """The comm of the simulated rank this thread runs (None: a real process)."""
    return _THREAD.comm


def job_rank():
    """This process's rank in the job: RANK, else the MPI launcher's rank, else 0 (a simulated rank's, in its
    thread)."""
    if _THREAD.comm is not None:
        return _THREAD.comm.rank
    launch = read_launch_environment()
    if launch is not None:
        return launch.rank
    world = detect_mpi_world()
    return 0 if world is None else world[0]


def job_size():
    """The number of processes of the job: WORLD_SIZE, else the MPI launcher's world size, else 1."""
    if _THREAD.comm is not None:
        return _THREAD.comm.size
    launch = read_launch_environment()
    if launch is not None:
        return launch.world_size
    world = detect_mpi_world()
    return 1 if world is None else world[1]


def job_local_rank():
    """This process's index on its node: LOCAL_RANK, else the MPI launcher's local rank, else 0."""
    launch = read_launch_environment()
    if launch is not None:
        return launch.local_rank
    for name in _LOCAL_RANK_VARIABLES:
        if name in os.environ:
            try:
                return int(os.environ[name])
            except ValueError:
                break
    world = detect_mpi_world()
    return 0 if world is None else world[0] % detect_local_size()


def job_node_size():
    """The number of nodes: the launcher's --nnodes, else (under mpiexec) the world size over the ranks on this
    host, else 1 (processes started by hand count as one node)."""
    nodes = node_size()
    if nodes is not None:
        return nodes
    if read_launch_environment() is None:
        world = detect_mpi_world()
        if world is not None:
            return max(1, world[1] // detect_local_size())
    return 1


def _single_process_comm():
    from .process_comm import SingleProcessComm
    return SingleProcessComm()


def get_process_comm():
    """The process-level comm of this job, created on first use and cached.

    Not under MPI (or a world of 1 without mpi4py): a `SingleProcessComm`, and mpi4py is never imported.
    Under MPI: an `MPIComm` over MPI_COMM_WORLD, or over the joined worlds (module docstring); with size > 1 this
    also installs the failure handlers (an uncaught exception on any rank aborts every rank) and the per-rank
    output rules (`output.py`).
    """
    global _process_comm
    if _THREAD.comm is not None:
        return _THREAD.comm
    if _process_comm is not None:
        return _process_comm
    launch = read_launch_environment()
    world = detect_mpi_world()
    if launch is not None and world is None and launch.world_size > 1:
        # started by hand with the five variables: RANK 0 serves the MPI start-up (`pmi_server.py`), and MPI_Init
        # makes one MPI_COMM_WORLD of WORLD_SIZE processes
        from .environment import comm_timeout_from_env
        from .pmi_server import bootstrap
        _check_hand_start_is_mpich(launch)
        bootstrap(launch, comm_timeout_from_env())
        world = (launch.rank, launch.world_size)
    group = world[1] if world is not None else 1
    if launch is not None:
        _check_launch_fits_mpi(launch, world)
        rank, size = launch.rank, launch.world_size
    elif world is not None:
        rank, size = world
    else:
        rank, size = 0, 1
    if world is None and size == 1:
        _process_comm = _single_process_comm()
        return _process_comm
    try:
        import mpi4py  # noqa: F401  (only checks that it is installed; MPI itself starts in MPIComm)
    except ImportError:
        if size == 1:
            _process_comm = _single_process_comm()
            return _process_comm
        import sys
        raise MPIUnavailableError(
            "this process is rank %d of an MPI job of %d processes, but mpi4py is not installed in %s; "
            "install it into this environment (pip install mpich mpi4py) or run the script without mpiexec"
            % (rank, size, sys.executable)) from None
    from .rank_records import record_this_process
    record_this_process(rank)  # lets a launcher name this rank should MPI report it killed by a signal
    MPIComm, install_failure_handlers, set_job_communicator, timeout_from_env = _start_mpi(rank)
    from .output import setup_rank_output
    base = None
    if size > group:
        from .join import join_world
        base = join_world(launch, timeout_from_env())
        set_job_communicator(base)
    comm = MPIComm(base_comm=base)
    if (comm.rank, comm.size) != (rank, size):
        raise MPIUnavailableError(
            "the launcher's environment says rank %d of %d, but MPI_COMM_WORLD is rank %d of %d: "
            "mpi4py is probably built against a different MPI than the mpiexec that started this job"
            % (rank, size, comm.rank, comm.size))
    if size > 1:
        install_failure_handlers()
        setup_rank_output(rank, size)
    from .rank_records import record_segments
    record_segments(rank)  # MPI has started: the launcher removes this rank's segments should it not finalize
    _process_comm = comm
    return _process_comm


def _start_mpi(rank):
    """Import the MPI comm, which initialises MPI — under a watchdog (`start_watchdog.py`): MPI_Init waits for every
    rank, and a rank that died before starting MPI (a failed import, a broken environment) would keep the others in
    it forever."""
    from .environment import comm_timeout_from_env
    from .start_watchdog import MPIStartWatchdog
    with MPIStartWatchdog(rank, comm_timeout_from_env()):
        from .mpi_comm import MPIComm, install_failure_handlers, set_job_communicator, timeout_from_env
    return MPIComm, install_failure_handlers, set_job_communicator, timeout_from_env


def _check_hand_start_is_mpich(launch):
    """Processes started by hand join through MPICH's start-up protocol (PMI, served by RANK 0: `pmi_server.py`).
    Open MPI starts by another (PMIx, its daemons): its singletons try to start a daemon over ssh and fail in
    MPI_Init. Where this environment's MPI is Open MPI (what its mpiexec says), say so before trying."""
    from . import mpiexec_command

    mpiexec = mpiexec_command.find_mpiexec()
    if mpiexec and mpiexec_command.flavour(mpiexec) == mpiexec_command.OPEN_MPI:
        raise LaunchEnvironmentError(
            "RANK=%d of WORLD_SIZE=%d was started without an MPI launcher, which works with MPICH only (rank 0 "
            "serves MPICH's start-up); this environment's MPI is Open MPI (%s): start the job with `python -m "
            "oneflow.distributed.launch --nproc_per_node N script.py`, or with `mpiexec -n N python -m mpi4py "
            "script.py`" % (launch.rank, launch.world_size, mpiexec))


def _check_launch_fits_mpi(launch, world):
    """The launch variables and the MPI launcher's must describe the same job (or the worlds must be joinable)."""
    if world is None:
        if launch.world_size > 1:
            # MPICH gives every process started without a launcher the same MPI identity, and refuses to join two
            # of them (Connect/Accept: "local and remote groups must not overlap")
            raise LaunchEnvironmentError(
                "RANK=%d of WORLD_SIZE=%d was started without an MPI launcher, and MPI cannot join processes started "
                "that way into one job: start the job with `python -m oneflow.distributed.launch "
                "--nproc_per_node N script.py`, or start each process under `mpiexec -n 1 python script.py` (with "
                "the five launch variables exported)" % (launch.rank, launch.world_size))
        return
    mpi_rank, mpi_size = world
    if launch.world_size < mpi_size:
        raise LaunchEnvironmentError(
            "WORLD_SIZE=%d, but mpiexec started %d processes in this MPI world: unset the launch variables "
            "(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK) to run under mpiexec alone"
            % (launch.world_size, mpi_size))
    if launch.world_size == mpi_size and launch.rank != mpi_rank:
        raise LaunchEnvironmentError(
            "RANK=%d, but this is rank %d of the %d processes mpiexec started: with WORLD_SIZE equal to the MPI "
            "world's size, RANK must be the MPI rank (the launch variables were probably exported to every "
            "process alike)" % (launch.rank, mpi_rank, mpi_size))
