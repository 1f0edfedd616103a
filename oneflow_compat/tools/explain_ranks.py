"""`oneflow-compat explain --ranks N script.py`: the plan of a program as N ranks would run it, printed once.

* A legacy program (job functions) is compiled in this one process as rank 0 of N machines (each driving its
  `flow.config.gpu_device_num` / `cpu_device_num` devices). Its plan is the logical job with every placement, SBP
  and boxing of all N machines, and every rank compiles the same one (a real job checks that: `passes/pipeline.py`
  `check_same_plans_across_ranks`), so the other ranks need not run: `PlanOnlyComm` stands for them. It answers
  the agreements of compilation (every rank agrees with rank 0) and refuses to move data — nothing runs, since
  `explain` compiles the first job call instead of running it.
* A global-tensor program runs op by op, its boxing moving real pieces between the ranks, so it needs N ranks
  that run: it is started again under `mpiexec -n N` (this environment's, as `oneflow-compat launch` does), and
  the report, gathered from every rank, is printed once by rank 0. The program is recognised at its first use of
  the global-tensor API (`framework/client_mode.py`); what it printed until then in this process is dropped, so it
  appears once, from rank 0 of the real run.
"""
import io
import os
import sys

from oneflow_compat.comm.process_comm import ProcessComm


class PlanOnlyComm(ProcessComm):
    """Rank 0 of a world of `size` processes that compile the same plan: object collectives return rank 0's value
    for every rank (the agreement every compiled rank reaches), data collectives are refused."""

    def __init__(self, size):
        self._size = int(size)

    @property
    def rank(self):
        return 0

    @property
    def size(self):
        return self._size

    def barrier(self):
        pass

    def bcast_object(self, obj, root=0):
        return obj

    def allgather_object(self, obj):
        return [obj] * self._size

    def _no_data(self, *args, **kwargs):
        raise RuntimeError("explain --ranks %d compiles the plan without running it: no data moves between the "
                           "simulated ranks (a job call is explained, not run)" % self._size)

    allreduce_ = allgatherv = reduce_scatter = alltoallv = bcast_ = reduce_ = gatherv = exchange = send = recv = \
        _no_data

    def abort(self, exit_code=1):
        os._exit(exit_code)


class _GlobalProgram(BaseException):
    """Raised at the program's first use of the global-tensor API (a BaseException: the program's own `except
    Exception` must not swallow it)."""


def run(options, out, run_script):
    """Explains `options.script` for `options.ranks` ranks; returns the exit status and the reports."""
    from oneflow_compat.comm import world
    from oneflow_compat.framework import client_mode

    n = options.ranks
    if world.job_size() > 1:
        print("explain: --ranks %d simulates the ranks in one process; this process is already one of %d ranks "
              "(run explain without --ranks under mpiexec or the launcher)" % (n, world.job_size()),
              file=sys.stderr)
        return 2, []
    real_out = out or sys.stdout
    buffered = io.StringIO()
    saved = (world._process_comm, world.detect_mpi_world, client_mode.use, sys.stdout)
    original_use = client_mode.use

    def use(mode, what):
        if mode == client_mode.GLOBAL and client_mode.current() is None:
            raise _GlobalProgram()
        return original_use(mode, what)

    world._process_comm = PlanOnlyComm(n)
    world.detect_mpi_world = lambda environ=None: (0, n)
    client_mode.use = use
    sys.stdout = buffered
    try:
        code, reports = run_script(options.script, options.args, buffered)
    except _GlobalProgram:
        code, reports = None, []
    finally:
        world._process_comm, world.detect_mpi_world, client_mode.use, sys.stdout = saved
    if code is None:
        return _on_mpi_ranks(options, n), []
    real_out.write(buffered.getvalue())
    real_out.flush()
    return code, reports


def _on_mpi_ranks(options, n):
    """The global-tensor program on n MPI ranks, explained there (its report printed once, by rank 0)."""
    from oneflow_compat.tools import launch

    try:
        launch.find_mpiexec()
    except launch.LaunchError as error:
        print("explain: %s is a global-tensor program: its ranks must run, and %s" % (options.script, error),
              file=sys.stderr)
        return 2
    argv = ["-m", "oneflow_compat", "explain"]
    for flag in ("svg", "png"):
        if getattr(options, flag):
            argv += ["--" + flag, getattr(options, flag)]
    argv += [options.script] + list(options.args)
    print("explain: %s is a global-tensor program: running it on %d ranks (mpiexec -n %d), its report printed "
          "once" % (options.script, n, n), file=sys.stderr, flush=True)
    env = launch.child_environment(n, None, None)
    env.pop("ONEFLOW_COMPAT_OUTPUT", None)  # the default: rank 0's output, once
    sys.stdout.flush()
    return launch.run_child(launch.mpiexec_command(n, argv), env)
