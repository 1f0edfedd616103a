"""The api-gaps features on global tensors split over 2 real MPI ranks (`mpiexec -n 2 python -m mpi4py
tests/mpi_scripts/api_gaps_ranks.py`, under a timeout): values and gradients equal to those of the broadcast layout,
the row-split embedding weight renormalised where it lies (the in-process cases: tests/test_api_gaps.py)."""
import sys

import pytest

from test_global_mpi import MPIEXEC, SCRIPTS, mpi

pytest.importorskip("mpi4py")
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def test_api_gaps_families_on_two_ranks():
    done = mpi(2, SCRIPTS / "api_gaps_ranks.py", timeout=300, ONEFLOW_COMPAT_DEVICE="cpu")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("OK ")] == [
        "OK embedding",
        "OK resampling and padding",
        "OK scatter, einsum, norm",
    ], done.stdout
