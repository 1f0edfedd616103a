"""What one `to_global` costs each rank, counted (bytes copied and summed, arrivals, comm calls), held against the
least each transition needs on 2 and 4 MPI ranks of one host: tests/mpi_scripts/boxing_passes.py (its docstring
lists the figures). A change that adds a copy, a pass over a result, a synchronisation or a collective to a row fails
here, whatever the machine's load (benchmarks/bench_boxing.py times the same rows)."""
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

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


@pytest.mark.parametrize("n", [2, 4])
def test_every_row_moves_the_least_bytes_in_one_call(n):
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES)}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "boxing_passes.py")], cwd=ROOT,
                          env=mpiexec_command.environment(MPIEXEC, env), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "passes OK: %d rows over %d ranks\n" % (13 if n == 2 else 14, n)
