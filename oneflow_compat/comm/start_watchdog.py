"""A watchdog for MPI's start: a rank that died before starting MPI would keep the others in MPI_Init forever.

MPI_Init holds the GIL while it waits for every rank, so no Python thread of this process can act. faulthandler's
watchdog is a C thread: at the limit it writes where this rank is stuck and exits with status 1 (there is no
MPI_Abort before MPI is up; every rank leaving ends the job). Its text is a traceback of the import that started
MPI, which says nothing useful, so it goes into a pipe instead, read by a small helper process: the first byte
means the watchdog fired, and the helper prints one line saying which rank gave up, why, and what to do. When MPI
starts in time, the pipe is closed unwritten and the helper ends silently.
"""
import faulthandler
import os
import subprocess
import sys
import threading

from .environment import TIMEOUT_ENV

# the helper: wait for the watchdog's first byte (or the end of the pipe), print the line given as argv[1] if it came
_HELPER = "import os, sys\nif os.read(0, 1):\n    os.write(2, sys.argv[1].encode() + b'\\n')\n"


def gave_up_line(rank, limit_s):
    return ("[rank %d] MPI did not start within %g s: another rank of this job ended or is stuck before starting "
            "MPI (its own error, if any, is above); this rank ends too. If the ranks only start slowly, raise %s."
            % (rank, limit_s, TIMEOUT_ENV))


class MPIStartWatchdog:
    """`with MPIStartWatchdog(rank, limit_s): import MPI` — ends this rank with one line after `limit_s`."""

    def __init__(self, rank, limit_s):
        self.rank = rank
        self.limit_s = limit_s
        self._write_end = None

    def __enter__(self):
        if self.limit_s == float("inf"):
            return self
        read_end, write_end = os.pipe()
        try:
            helper = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _HELPER, gave_up_line(self.rank, self.limit_s)],
                stdin=read_end, stdout=subprocess.DEVNULL,
                # its own session: a Ctrl-C or a process-group kill aimed at the ranks must not stop the line
                start_new_session=True)
        except OSError:
            helper = None  # no helper: the watchdog still ends the rank, printing its traceback to stderr
        finally:
            os.close(read_end)
        if helper is None:
            os.close(write_end)
            faulthandler.dump_traceback_later(self.limit_s, exit=True)
        else:
            self._write_end = write_end
            faulthandler.dump_traceback_later(self.limit_s, exit=True, file=write_end)
            threading.Thread(target=helper.wait, name="mpi-start-watchdog-reaper", daemon=True).start()
        return self

    def __exit__(self, *exc):
        if self.limit_s == float("inf"):
            return False
        faulthandler.cancel_dump_traceback_later()
        if self._write_end is not None:
            os.close(self._write_end)  # the helper reads the end of the pipe, nothing else, and ends silently
            self._write_end = None
        return False
