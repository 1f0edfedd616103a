"""`oneflow-compat explain --ranks N script.py`: the plan of a program as N ranks would run it, printed once.

* A legacy program (job functions) is compiled in this one process as rank 0 of N machines (each driving its
  `flow.config.gpu_device_num` / `cpu_device_num` devices). Its plan is the logical job with every placement, SBP
  and boxing of all N machines, and every rank compiles the same one (a real job checks that: `passes/pipeline.py`
  `check_same_plans_across_ranks`), so the other ranks need not run: `PlanOnlyComm` stands for them. It answers
  the agreements of compilation (every rank agrees with rank 0) and refuses to move data — nothing runs, since
  `explain` compiles the first job call instead of running it.
* A global-tensor program runs op by op, its boxing moving real pieces between the ranks, so its N ranks must run:
  they run as N threads of this process (`comm/simulated.py`: the simulated comm, the same collectives and
  checks as MPI's), each with its own context (`runtime/context.bound`: session, plans, boxing log, gradient
  buckets) and its own process comm (`comm/world.simulated_rank`: rank and size are the simulated rank's). The
  program is recognised at its first use of the global-tensor API (`framework/client_mode.py`); what it printed
  until then in this process is dropped, then every rank runs it from the start, rank 0's output is shown (as
  `mpiexec` shows by default), and the report, gathered from every rank, is printed once. What the ranks share:
  the modules (a program's module-level state) and the random generators (`_global/generators.py`: the values
  drawn differ from a real run's; explain shows layouts and bytes, not values).
"""
import builtins
import io
import os
import sys
import threading

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


def run(options, out, run_script, eager_report):
    """Explains `options.script` for `options.ranks` ranks; returns the exit status and the reports. `run_script`
    and `eager_report` (every rank's eager boxing, gathered: a collective) are `explain.py`'s."""
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
        return _on_simulated_ranks(options, n, real_out, eager_report)
    real_out.write(buffered.getvalue())
    real_out.flush()
    return code, reports


class _RankZeroOutput:
    """sys.stdout while simulated ranks run: what rank 0 (or the main thread) writes passes, the others' is dropped
    (`mpiexec`'s default: rank 0's output)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        from oneflow_compat.comm import world

        comm = world.thread_comm()
        return self.stream.write(text) if comm is None or comm.rank == 0 else len(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _on_simulated_ranks(options, n, out, eager_report):
    """The global-tensor program run by n simulated ranks (threads of this process), explained: (exit status,
    reports), the reports printed once."""
    import oneflow_compat_alias
    from oneflow_compat.comm import world
    from oneflow_compat.comm.environment import comm_timeout_from_env
    from oneflow_compat.comm.simulated import SimulatedWorld
    from oneflow_compat.runtime import context, global_eager, graph_report

    print("explain: %s is a global-tensor program: running its %d ranks in this process (simulated ranks, one "
          "thread each), its report printed once" % (options.script, n), file=sys.stderr, flush=True)
    path = os.path.abspath(options.script)
    with open(path) as f:
        code_object = compile(f.read(), path, "exec")
    oneflow_compat_alias.install_override()

    def rank_main(comm):
        # the thread is named as a process's main thread: the ranks' identity checks match threads by name
        # (`runtime/agreement.py`), and reports name it as a real run would
        threading.current_thread().name = "MainThread"
        with world.simulated_rank(comm), context.bound(context.Context()) as ctx:
            status = 0
            try:
                exec(code_object, {"__name__": "__main__", "__file__": path, "__builtins__": builtins})
            except SystemExit as done:
                status = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            try:
                if status or not global_eager.started():
                    return status, []
                return status, [eager_report()] + graph_report.reports()
            finally:
                ctx.reset()

    timeout = comm_timeout_from_env()
    simulated = SimulatedWorld(n, timeout=min(timeout, 600.0))
    saved = sys.argv, sys.stdout, list(sys.path)
    sys.argv, sys.stdout = [options.script] + list(options.args), _RankZeroOutput(out)
    sys.path.insert(0, os.path.dirname(path))
    try:
        results = simulated.run(rank_main)
    finally:
        sys.argv, sys.stdout = saved[0], saved[1]
        sys.path[:] = saved[2]
    statuses = [status for status, _ in results]
    status, reports = next((s for s in statuses if s), 0), results[0][1]
    if not status and not reports:
        print("explain: %s defines no job function and runs no global tensor op" % options.script, file=out)
        status = 1
    for i, report in enumerate(reports):
        if i:
            print("", file=out)
        print(str(report), file=out)
    out.flush()
    return status, reports
