"""The launcher's last resort (`tools/launch._kill_job`): when mpiexec does not end in time, the ranks it started on
this host (their records in the job folder) are killed with it, so that none outlives the launcher holding the
output pipes open. A stand-in "mpiexec" that ignores SIGTERM starts one "rank" that ignores SIGTERM and SIGINT;
no MPI is involved."""
import os
import subprocess
import sys
import textwrap

import pytest

from oneflow_compat.tools import launch
from process_tree import running, wait_until_gone

# the rank writes its record as `comm/rank_records.record_this_process` does (importing the package takes seconds)
RANK = textwrap.dedent("""
    import os, signal, socket, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    folder = os.environ["ONEFLOW_COMPAT_JOB_DIR"]
    with open(os.path.join(folder, "rank-0"), "w") as f:
        f.write("%d %s\\n" % (os.getpid(), socket.gethostname()))
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(60)
""")
# the stand-in "mpiexec" also starts a "proxy" that records nothing (as hydra's proxy, it holds the output pipes)
PROXY = textwrap.dedent("""
    import os, signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(60)
""")
MPIEXEC = textwrap.dedent("""
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    subprocess.Popen([sys.executable, "-c", sys.argv[3], sys.argv[4]])
    time.sleep(60)
""")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to see the processes")
def test_a_job_past_its_time_is_killed_with_the_ranks_it_started_here(tmp_path):
    pid_file, proxy_file = tmp_path / "rank.pid", tmp_path / "proxy.pid"
    command = [sys.executable, "-c", MPIEXEC, RANK, str(pid_file), PROXY, str(proxy_file)]
    with pytest.raises(subprocess.TimeoutExpired):
        launch.run_child(command, dict(os.environ), timeout=8)
    assert pid_file.exists() and proxy_file.exists(), "the stand-ins did not start within the job's 8 s"
    rank, proxy = int(pid_file.read_text()), int(proxy_file.read_text())
    assert wait_until_gone([rank, proxy]) == [], "a process of the job outlived the launcher"


def test_a_process_that_is_not_the_jobs_is_left_alone(tmp_path):
    # a record whose pid now belongs to another process (here: this test's own child) is not killed
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / "rank-0").write_text("%d %s\n" % (other.pid, __import__("socket").gethostname()))
        stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        launch._kill_job(stand_in, str(tmp_path))
        assert stand_in.wait(timeout=10) == -9
        assert running([other.pid]) == [other.pid]
    finally:
        other.kill()
        other.wait()
