"""Which process is which rank: each rank writes its pid and host into the launcher's job folder when it starts.

MPICH reports a process killed by a signal by pid and host only ("BAD TERMINATION … PID 1234 RUNNING AT host");
the launchers (`tools/launch.py`, `distributed/launch.py`) create a private folder for the job, name it in
`ONEFLOW_COMPAT_JOB_DIR`, and map the reported pid back to a rank with these records (`mpiexec_report.py`).
Without the variable (plain `mpiexec`), or where the folder is not visible (a rank on another host), nothing is
written. Environment and files only: no MPI, no numpy.
"""
import os
import socket

JOB_DIR_ENV = "ONEFLOW_COMPAT_JOB_DIR"
_PREFIX = "rank-"


def record_this_process(rank, environ=None):
    """Write `rank-<rank>` = "<pid> <host>" into the job folder, if the launcher made one visible here."""
    folder = (os.environ if environ is None else environ).get(JOB_DIR_ENV)
    if not folder or not os.path.isdir(folder):
        return None
    path = os.path.join(folder, "%s%d" % (_PREFIX, int(rank)))
    partial = "%s.%d.partial" % (path, os.getpid())
    try:
        with open(partial, "w") as f:
            f.write("%d %s\n" % (os.getpid(), socket.gethostname()))
        os.replace(partial, path)  # a reader never sees half a record
    except OSError:
        return None  # the record only improves a report; the job itself must not fail for it
    return path


def read_records(folder):
    """{pid: [(rank, host), …]} from the records in `folder` (pids of different hosts may repeat)."""
    records = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return records
    for name in names:
        if not name.startswith(_PREFIX) or name.endswith(".partial"):
            continue
        try:
            rank = int(name[len(_PREFIX):])
            with open(os.path.join(folder, name)) as f:
                pid_text, host = f.read().split()
            records.setdefault(int(pid_text), []).append((rank, host))
        except (OSError, ValueError):
            continue
    return records
