"""OneFlow 0.9's shape / indexing / product / linalg names on global tensors split over 2 real MPI ranks
(`mpiexec -n 2 python -m mpi4py tests/mpi_scripts/api_shape_ranks.py`, under a timeout): values against numpy and
gradients equal to those of the broadcast layout, per family, and a graph of them on split tensors equal to eager
(the in-process cases: tests/test_api_shape.py)."""
import sys

import pytest

from test_global_mpi import MPIEXEC, SCRIPTS, mpi

pytest.importorskip("mpi4py")
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def test_api_shape_families_on_two_ranks():
    done = mpi(2, SCRIPTS / "api_shape_ranks.py", timeout=300, ONEFLOW_COMPAT_DEVICE="cpu")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("OK ")] == [
        "OK joining and splitting",
        "OK dims, diagonal, as_strided, broadcasting",
        "OK index_add, repeat_interleave, searchsorted, bincount",
        "OK tensordot, mv, cross, norms, inv",
        "OK inside nn.Graph on split tensors == eager",
    ], done.stdout
