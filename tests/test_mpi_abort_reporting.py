"""A failing rank's report reaches the user before the job is torn down, and a failure ends the job even when
the launcher does not act on the failed rank's abort."""
import os
import subprocess
import sys
import time

import pytest
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

pytest.importorskip("mpi4py")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "mpi_scripts")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")

pytestmark = pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec beside %s" % sys.executable)


def _mpirun(n, script, timeout=60):
    env = {k: v for k, v in os.environ.items()
           if not is_job_variable(k, ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_"))}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    started = time.perf_counter()
    result = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-m", "mpi4py", os.path.join(SCRIPTS, script)],
                            cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env), capture_output=True, text=True, timeout=timeout)
    return result, time.perf_counter() - started


@pytest.mark.parametrize("n", [2, 3])
def test_other_ranks_end_the_job_when_the_abort_is_lost(n):
    result, elapsed = _mpirun(n, "comm_lost_abort.py")
    assert result.returncode != 0
    assert "not reached" not in result.stdout
    assert elapsed < 10, elapsed  # the last rank sleeps 60 s: the others ended the job
    assert "failed (its report is above) and the launcher has not ended this rank" in result.stderr, result.stderr


def test_output_drain_returns_at_once_when_nothing_is_pending(tmp_path):
    from oneflow_compat.comm.output import _unread_bytes, wait_until_output_is_read

    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"x" * 100)
        assert _unread_bytes(write_end) in (100, None)  # None: this platform cannot tell
        os.read(read_end, 100)
        assert _unread_bytes(write_end) in (0, None)
    finally:
        os.close(read_end)
        os.close(write_end)
    with open(tmp_path / "file", "w") as f:
        assert _unread_bytes(f.fileno()) == 0
    started = time.perf_counter()
    wait_until_output_is_read(limit_s=5)  # pytest's captured stdout/stderr are files or drained pipes
    assert time.perf_counter() - started < 1
