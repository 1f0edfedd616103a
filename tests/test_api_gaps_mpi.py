"""The api-gaps features on global tensors split over 2 real MPI ranks (`mpiexec -n 2 python -m mpi4py
tests/mpi_scripts/api_gaps_ranks.py`, under a timeout): values and gradients equal to those of the broadcast layout,
the row-split embedding weight renormalised where it lies (the in-process cases: tests/test_api_gaps.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def test_api_gaps_families_on_two_ranks():
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_PREFIXES) and k not in _LAUNCH_VARIABLES}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", ONEFLOW_COMPAT_DEVICE="cpu")
    done = subprocess.run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "api_gaps_ranks.py")], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("OK ")] == [
        "OK embedding",
        "OK resampling and padding",
        "OK scatter, einsum, norm",
    ], done.stdout
