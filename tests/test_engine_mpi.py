"""Data parallelism with fewer synchronisations, on 2 ranks (`mpiexec -n 2` of tests/mpi_scripts/
engine_data_parallel.py under a timeout): gradient buckets in eager backward and in nn.Graph, feeds' shapes and a
scalar's partial sums riding in the agreement check — with the numbers of one rank."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)

CHECKS = ["eager data parallel equals one rank", "eager step makes 3 collectives",
          "the loss's numpy() after backward sends nothing, same bits", "a loss changed after backward is summed again",
          "a steady step copies each gradient once", "gradients show broadcast and hold the sums",
          "a carried numpy() one rank made",
          "graph data parallel equals one rank", "graph call makes 1 collective",
          "the graph's loss numpy() sends nothing, same bits", "uneven feed", "5-d feed",
          "dtypes differ", "check_meta=False feed makes no collective",
          "check_meta=False with differing shapes fails naming both", "numpy of partial sums",
          "a bucket's carried check against numpy()", "a graph call's carried check against numpy()",
          "the failed graph call changed no parameter",
          "a graph with an effect before its first collective checks on its own"]


@pytest.fixture(scope="module")
def output():
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES) and k not in _LAUNCH_VARIABLES}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", ONEFLOW_COMPAT_OUTPUT="all",
               ONEFLOW_COMPAT_COMM_TIMEOUT="60", ONEFLOW_COMPAT_DEVICE="cpu")
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "engine_data_parallel.py")],
                          cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("rank", [0, 1])
def test_every_check_passes_on_every_rank(output, rank):
    prefix = "[rank %d] " % rank
    lines = [line[len(prefix):] for line in output.splitlines() if line.startswith(prefix)]
    assert [line[len("CHECK "):-len(" ok")] for line in lines if line.startswith("CHECK ")] == CHECKS
    assert lines[-1] == "DONE %d" % len(CHECKS)
