"""A failure anywhere ends the whole MPI job quickly and clearly — never a hang."""
import os
import subprocess
import sys
import time

import pytest
from oneflow_compat.comm import mpiexec_command

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_scripts", "failing_job.py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")

pytestmark = pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")


def _run(mode):
    t = time.monotonic()
    p = subprocess.run(["timeout", "60", MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py", SCRIPT, mode],
                       capture_output=True, text=True, timeout=90, env=mpiexec_command.environment(MPIEXEC))
    return p, time.monotonic() - t


def test_plan_mismatch_names_the_first_differing_op_on_every_rank():
    p, _ = _run("mismatch")
    assert p.returncode != 0
    assert "differs across ranks" in p.stderr and "hidden-weight" in p.stderr, p.stderr[-3000:]
    assert "finished" not in p.stdout


def test_exception_on_one_rank_ends_all_ranks_with_its_traceback():
    p, elapsed = _run("raise")
    assert p.returncode not in (0, 124), p.stderr[-2000:]
    assert "boom on rank 1 at step 3" in p.stderr
    assert elapsed < 10, elapsed


def test_killed_rank_ends_the_run_quickly():
    p, elapsed = _run("kill")
    assert p.returncode not in (0, 124)
    assert elapsed < 10, elapsed
