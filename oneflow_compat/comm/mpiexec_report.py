"""What a launcher makes of mpiexec's output: everything passed on unchanged, and a process that MPICH reports as
ended by a signal named by its rank.

MPICH's hydra reports such a process on its stdout as a block:

    =   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
    =   PID 26063 RUNNING AT node7
    =   EXIT CODE: 9
    ...
    YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)

and mpiexec exits with the bare signal number. Open MPI's mpiexec says it in one line, with the rank:

    mpiexec noticed that process rank 1 with PID 26063 on node node7 exited on signal 9 (Killed).

`MpiexecOutput` forwards mpiexec's stdout and stderr as they come
and reads that block; `killed_process_line` maps the pid back to a rank with the records the ranks wrote
(`rank_records.py`) and says it in one line; `exit_code` makes the launcher's status 128 + signal, as a shell
reports a process killed by a signal.
"""
import os
import re
import signal
import threading

from .rank_records import read_records

_PID_HOST = re.compile(r"PID (\d+) RUNNING AT (\S+)")
_EXIT_CODE = re.compile(r"EXIT CODE: (\d+)")
_EXIT_SIGNAL = re.compile(r"EXIT STRING: .*\(signal (\d+)\)")
_OPEN_MPI_KILLED = re.compile(r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)")


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


class MpiexecOutput:
    """Forwards `process.stdout` / `process.stderr` (pipes) to this process's fds 1 and 2, byte for byte, while
    reading MPICH's termination report out of them."""

    def __init__(self, process):
        self.pid = self.host = self.exit_code = self.signal = None
        self.rank = None  # where mpiexec names it (Open MPI)
        self._in_report = False
        self._lock = threading.Lock()
        self._threads = []
        for stream, target in ((process.stdout, 1), (process.stderr, 2)):
            if stream is None:
                continue
            thread = threading.Thread(target=self._pump, args=(stream, target), name="mpiexec-output-%d" % target,
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def _pump(self, stream, target):
        source = stream.fileno()
        partial = b""
        forwarding = True
        while True:
            try:
                chunk = os.read(source, 65536)
            except OSError:
                break
            if not chunk:
                break
            if forwarding:
                try:
                    _write_all(target, chunk)
                except OSError:  # our own output is gone (a closed pipe): keep reading, or mpiexec would block
                    forwarding = False
            lines = (partial + chunk).split(b"\n")
            partial = lines.pop()[-4096:]
            for line in lines:
                self._read(line)
        self._read(partial)
        stream.close()

    def _read(self, line):
        if b"exited on signal" in line:
            found = _OPEN_MPI_KILLED.search(line.decode("utf-8", "replace"))
            if found:
                with self._lock:
                    if self.pid is None:
                        self.rank, self.pid, self.host = int(found.group(1)), int(found.group(2)), found.group(3)
                        self.signal = int(found.group(4))
                return
        if b"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES" in line:
            self._in_report = True  # only the lines of the report are read (a program may print anything)
            return
        if not self._in_report:
            return
        text = line.decode("utf-8", "replace")
        with self._lock:
            found = _PID_HOST.search(text)
            if found and self.pid is None:
                self.pid, self.host = int(found.group(1)), found.group(2)
            found = _EXIT_CODE.search(text)
            if found and self.exit_code is None:
                self.exit_code = int(found.group(1))
            found = _EXIT_SIGNAL.search(text)
            if found and self.signal is None:
                self.signal = int(found.group(1))

    def wait(self, timeout=10.0):
        """Return once both streams ended (mpiexec has exited and its children closed them) or after `timeout`."""
        for thread in self._threads:
            thread.join(timeout)


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return "signal %d" % number


def killed_process_line(output, job_dir=None, only_rank=None):
    """One line naming the process MPICH reported as ended by a signal (rank, pid, host, signal), or None when it
    reported none. `only_rank`: the rank of the job's only process here, when the launcher started just one."""
    if output.pid is None or output.signal is None:
        return None
    candidates = read_records(job_dir).get(output.pid, []) if job_dir else []
    ranks = [rank for rank, host in candidates if host == output.host] or [rank for rank, _ in candidates]
    if len(ranks) == 1:
        who = "rank %d" % ranks[0]
    elif output.rank is not None:
        who = "rank %d" % output.rank
    elif only_rank is not None:
        who = "rank %d" % only_rank
    else:
        who = "a process of the job whose rank is unknown (it had not started oneflow)"
    return "%s (pid %d on %s) was killed by signal %d (%s)" % (who, output.pid, output.host, output.signal,
                                                               _signal_name(output.signal))


def exit_code(output, mpiexec_code):
    """The launcher's exit status: 128 + signal when MPICH reported a process killed by one (mpiexec itself exits
    with the bare signal number), else mpiexec's own status."""
    if output.signal is not None and mpiexec_code == output.signal:
        return 128 + output.signal
    return mpiexec_code
