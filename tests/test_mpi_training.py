"""The hybrid job on N MPI ranks (and ranks × devices) trains exactly what one device trains."""
import os
import subprocess
import sys

import numpy as np
import pytest
from oneflow_compat.comm import mpiexec_command

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi_scripts", "hybrid_job.py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")

pytestmark = pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")


def _run(cmd, timeout=120):
    env = dict(os.environ, ONEFLOW_COMPAT_SEED="5")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=mpiexec_command.environment(MPIEXEC, env))
    assert p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    refs = {}
    for batch in (12, 10):
        out = str(tmp_path_factory.mktemp("ref") / "ref.npz")
        _run([sys.executable, SCRIPT, "data", "1", str(batch), out])
        refs[batch] = dict(np.load(out))
    return refs


def _compare(ref, got):
    assert set(ref) == set(got)
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-4, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("ranks,per_machine,variant,batch", [
    (2, 1, "data", 12), (2, 1, "model", 10), (2, 1, "pipeline", 12), (2, 1, "mirrored", 10),
    (3, 1, "data", 10), (3, 1, "model", 12), (3, 1, "mirrored", 12),
    (2, 2, "data", 10), (2, 2, "model", 10), (2, 2, "pipeline", 10), (2, 2, "mirrored", 12),
])
def test_ranks_equal_one_device(reference, tmp_path, ranks, per_machine, variant, batch):
    out = str(tmp_path / "got.npz")
    p = _run(["timeout", "100", MPIEXEC, "-n", str(ranks), sys.executable, "-m", "mpi4py", SCRIPT, variant,
              str(per_machine), str(batch), out])
    assert p.stdout.count("done") == 1  # the script's output appears once
    _compare(reference[batch], dict(np.load(out)))
