"""`spawn` / `start_processes` (OneFlow 0.9's `multiprocessing/spawn.py`): N processes run `fn(i, *args)`; the first
that fails ends the others, and the parent raises `ProcessRaisedException` with that process's traceback
("-- Process i terminated with the following error:") or `ProcessExitedException` naming its exit code or signal
("process i terminated with exit code N" / "with signal SIGKILL"). `spawn` always uses the 'spawn' start method
and warns when told another one, as OneFlow 0.9 does; `start_processes` takes any."""
import multiprocessing
import multiprocessing.connection
import signal
import sys
import warnings

from oneflow_compat.multiprocessing._prctl import set_pdeathsig


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.error_index = error_index
        self.pid = pid


class ProcessRaisedException(ProcessException):
    """A process ended by an exception of `fn`."""


class ProcessExitedException(ProcessException):
    """A process ended by a signal or a non-zero exit code."""

    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name


def _wrap(fn, i, args, error_queue):
    set_pdeathsig(signal.SIGINT)  # a child whose parent dies gets SIGINT (Linux), instead of living on
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent ended it
    except Exception:
        import traceback

        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.error_queues = error_queues
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self):
        return [int(process.pid) for process in self.processes]

    def join(self, timeout=None):
        """Waits up to `timeout` for the processes; True once all ended well, False while some run. A process that
        failed ends the others and raises (see the module docstring)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            exitcode = failed.exitcode
            if exitcode < 0:
                name = signal.Signals(-exitcode).name
                raise ProcessExitedException("process %d terminated with signal %s" % (error_index, name),
                                             error_index=error_index, error_pid=failed.pid, exit_code=exitcode,
                                             signal_name=name)
            raise ProcessExitedException("process %d terminated with exit code %d" % (error_index, exitcode),
                                         error_index=error_index, error_pid=failed.pid, exit_code=exitcode)
        msg = "\n\n-- Process %d terminated with the following error:\n" % error_index
        msg += self.error_queues[error_index].get()
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_queues):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.")
        super().__init__(processes, error_queues)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    mp = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        error_queue = mp.SimpleQueue()
        process = mp.Process(target=_wrap, args=(fn, i, args, error_queue), daemon=daemon)
        process.start()
        error_queues.append(error_queue)
        processes.append(process)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Spawns `nprocs` processes running `fn(i, *args)` (i = 0..nprocs-1). Returns None when `join`, else the
    `ProcessContext`."""
    if start_method != "spawn":
        warnings.warn("This method only supports start_method=spawn (got: %s).\nTo use a different start_method "
                      "use:\n\t\t oneflow.multiprocessing.start_processes(...)" % start_method)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
