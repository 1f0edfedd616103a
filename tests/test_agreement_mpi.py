"""The ranks agree on what they run: `mpiexec -n 2` runs of tests/mpi_scripts/agreement_*.py under a timeout.

* agreement_checks.py (with shared memory on, where a to_global's check rides in its collective, and off): eager ops that differ in type, attrs, input shapes or SBPs, different nn.Graphs, a graph
  called a different number of times, a rank that caught a rejected call: every rank raises `AgreementError`
  naming both sides (instead of pairing the collectives up or hanging); two threads calling one nn.Graph and two
  threads running eager global ops (with backward and numpy()) get the sequential run's results on both ranks.
* agreement_timeout.py: a rank held up inside a graph call; the waiting rank's timeout names the graph, the call
  and the op whose collective waits.
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "mpi_scripts"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)

CHECKS = ["eager op type", "eager op attrs", "eager input shapes", "eager input sbp", "eager agrees again",
          "a to_global makes one collective", "to_global against numpy()", "to_global against a local tensor's to_global",
          "a to_global onto other ranks", "a to_global onto other ranks against one onto the same",
          "a to_global onto other ranks against numpy()", "two different to_globals onto other ranks",
          "to_globals onto other ranks agree again",
          "local ops are not compared", "different graphs", "a graph called a different number of times",
          "a rank that caught a rejected call", "two threads calling one nn.Graph",
          "two threads running to_global", "two threads running eager global ops"]


def mpi2(script, timeout, **extra_env):
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES) and k not in _LAUNCH_VARIABLES}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", **extra_env)
    started = time.perf_counter()
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py", str(SCRIPTS / script)],
                          cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    done.elapsed = time.perf_counter() - started
    return done


@pytest.fixture(scope="module", params=["1", "0"], ids=["shm", "mpi"])
def checks(request):
    # a generous comm timeout: a check that hangs instead of failing ends the run with a report, not a pass.
    # Through shared memory a to_global's check rides in its collective; with it off (MPI's collectives) every
    # check is an all-reduce of its own: both must fail alike, naming both sides
    done = mpi2("agreement_checks.py", 240, ONEFLOW_COMPAT_OUTPUT="all", ONEFLOW_COMPAT_COMM_TIMEOUT="60",
                ONEFLOW_COMPAT_SHM=request.param)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("rank", [0, 1])
def test_every_check_passes_on_every_rank(checks, rank):
    lines = [line[len("[rank %d] " % rank):] for line in checks.splitlines() if line.startswith("[rank %d] " % rank)]
    assert [line[len("CHECK "):-len(" ok")] for line in lines if line.startswith("CHECK ")] == CHECKS
    assert lines[-1] == "DONE %d" % len(CHECKS)


def test_a_timeout_names_the_graph_call_and_op_on_the_waiting_rank():
    done = mpi2("agreement_timeout.py", 120, ONEFLOW_COMPAT_COMM_TIMEOUT="2")
    assert done.returncode != 0
    assert done.elapsed < 45, "the held-up rank (60 s) was not ended by the timeout"
    assert "passed the second call" not in done.stdout
    op = re.search(r"^COLLECTIVE (\S+)$", done.stdout, re.MULTILINE).group(1)
    assert re.search(r"\[rank 0\] \S+: rank 0: \w+ #\d+ over ranks \(0, 1\) in nn\.Graph 'Gather_0' call #2, global op #2, "
                     r"op '%s'"
                     % re.escape(op), done.stderr), done.stderr
