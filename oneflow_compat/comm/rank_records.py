"""Which process is which rank: each rank writes its pid and host into the launcher's job folder when it starts.

MPICH reports a process killed by a signal by pid and host only ("BAD TERMINATION … PID 1234 RUNNING AT host");
the launchers (`tools/launch.py`, `distributed/launch.py`) create a private folder for the job, name it in
`ONEFLOW_COMPAT_JOB_DIR`, and map the reported pid back to a rank with these records (`mpiexec_report.py`).
Without the variable (plain `mpiexec`), or where the folder is not visible (a rank on another host), nothing is
written. Environment and files only: no MPI, no numpy.

Once MPI has started, each rank also records the shared-memory segments MPICH made for it (`/dev/shm/mpich_shm_*`,
read from `/proc/self/maps`). MPICH unlinks them in MPI_Finalize; a rank killed or aborted never gets there, and
its segments would stay in memory until the machine restarts (1-4 MB per job). When the job is over, the launcher
removes those of them still present on its host (`remove_leftover_segments`).
"""
import os
import socket

JOB_DIR_ENV = "ONEFLOW_COMPAT_JOB_DIR"
_PREFIX = "rank-"
_SEGMENTS = "segments-"
SEGMENT_DIR = "/dev/shm"
SEGMENT_PREFIX = "mpich_shm_"  # the names MPICH gives its shared-memory segments


def record_this_process(rank, environ=None):
    """Write `rank-<rank>` = "<pid> <host>" into the job folder, if the launcher made one visible here."""
    folder = (os.environ if environ is None else environ).get(JOB_DIR_ENV)
    if not folder or not os.path.isdir(folder):
        return None
    try:
        return _write(folder, "%s%d" % (_PREFIX, int(rank)), "%d %s\n" % (os.getpid(), socket.gethostname()))
    except OSError:
        return None  # the record only improves a report; the job itself must not fail for it


def _write(folder, name, text):
    path = os.path.join(folder, name)
    partial = "%s.%d.partial" % (path, os.getpid())
    with open(partial, "w") as f:
        f.write(text)
    os.replace(partial, path)  # a reader never sees half a record
    return path


def mapped_segments(maps="/proc/self/maps"):
    """The MPICH shared-memory segments this process maps (their paths, still linked), sorted."""
    found = set()
    try:
        with open(maps) as f:
            for line in f:
                fields = line.split(None, 5)  # address, permissions, offset, device, inode, path
                path = fields[5].strip() if len(fields) == 6 else ""
                if path.endswith(" (deleted)"):  # unlinked already: nothing to remove
                    continue
                if os.path.dirname(path) == SEGMENT_DIR and os.path.basename(path).startswith(SEGMENT_PREFIX):
                    found.add(path)
    except OSError:
        return []
    return sorted(found)


def record_segments(rank, environ=None, maps="/proc/self/maps"):
    """Write `segments-<rank>` = this host, then the MPICH segments this process maps, into the job folder (if the
    launcher made one visible here). Called once MPI has started."""
    folder = (os.environ if environ is None else environ).get(JOB_DIR_ENV)
    if not folder or not os.path.isdir(folder):
        return None
    segments = mapped_segments(maps)
    try:
        return _write(folder, "%s%d" % (_SEGMENTS, int(rank)), "\n".join([socket.gethostname()] + segments) + "\n")
    except OSError:
        return None  # the record only helps a clean-up; the job itself must not fail for it


def remove_leftover_segments(folder):
    """After the job (every rank has ended): unlink the MPICH segments its ranks on this host recorded that are still
    there — those of ranks killed or aborted before MPI_Finalize. Returns the paths removed."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(_SEGMENTS) and not n.endswith(".partial")]
    except OSError:
        return []
    host, removed = socket.gethostname(), []
    for name in names:
        try:
            with open(os.path.join(folder, name)) as f:
                lines = f.read().split("\n")
        except OSError:
            continue
        if lines[0] != host:  # a segment name means nothing on another host
            continue
        for path in lines[1:]:
            if os.path.dirname(path) != SEGMENT_DIR or not os.path.basename(path).startswith(SEGMENT_PREFIX):
                continue
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass  # unlinked by MPI_Finalize, or by another rank's record of the same segment
    return removed


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
