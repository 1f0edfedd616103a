"""Gradients read inside nn.Graph.build on 2 MPI ranks (tests/mpi_scripts/graph_retain_grad.py): data parallel
(x split(0): x.grad split, weight.grad partial sum) and model parallel (weight split(0)); the returned gradients
equal numpy's. One process: tests/test_graph_retain_grad.py."""
import sys

import pytest

from test_global_mpi import MPIEXEC, SCRIPTS, mpi

pytest.importorskip("mpi4py")
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def test_gradients_of_global_tensors_on_two_ranks_equal_numpy():
    done = mpi(2, SCRIPTS / "graph_retain_grad.py", timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    oks = [line for line in done.stdout.splitlines() if line.startswith("OK ")]
    assert oks == ["OK data parallel x=(oneflow.sbp.split(dim=0),) h=(oneflow.sbp.split(dim=0),) "
                   "w=(oneflow.sbp.partial_sum,)",
                   "OK model parallel x=(oneflow.sbp.partial_sum,) h=(oneflow.sbp.split(dim=1),) "
                   "w=(oneflow.sbp.split(dim=0),)"], done.stdout
