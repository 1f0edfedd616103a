"""2-D SBP with global tensors on 4 real MPI ranks (`mpiexec -n 4 python -m mpi4py tests/mpi_scripts/global_2d.py`,
under a timeout): the "2D SBP" page's program, every to_global between {B, S(0), S(1), P}^2 on a 2 x 2 mesh and
to / from 1-D placements (each rank's piece and the value against numpy), local -> global on a mesh, layout-free
random numbers, and a data x model parallel MLP trained 20 steps eagerly and as an nn.Graph equal to one rank and to
numpy (rtol 1e-5). The same boxing on simulated ranks, with its bytes: tests/test_boxing_nd.py.

And the legacy form across processes: a data x model parallel MLP on a (2, 2) hierarchy of 2 machines x 2 devices
(`flow.scope.placement("cpu", ["0:0-1", "1:0-1"], (2, 2))`) and of 4 machines x 1 device, each machine an MPI rank,
trained 20 steps == the same job on one device (tests/mpi_scripts/legacy_2d.py; in-process devices:
tests/test_sbp2d.py)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oneflow_compat.comm import mpiexec_command
from oneflow_compat.comm.environment import is_job_variable

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parent.parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")

pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def _clean_env():
    return {k: v for k, v in os.environ.items() if not is_job_variable(k, _MPI_PREFIXES) and k not in _LAUNCH_VARIABLES}


def test_2d_sbp_on_four_ranks():
    env = _clean_env()
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", ONEFLOW_COMPAT_OUTPUT="raw",
               COLUMNS="120")
    done = subprocess.run([str(MPIEXEC), "-n", "4", sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "global_2d.py")], cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    oks = [line for line in done.stdout.splitlines() if line.startswith("OK ")]
    assert oks == [
        "OK the 2D SBP page's program",
        "OK 256 transitions of a 8x12 tensor on a 2x2 mesh and to/from 1-D placements",
        "OK 640 transitions of a 7x5 tensor on a 2x2 mesh and to/from 1-D placements",
        "OK local -> global on a mesh",
        "OK creation ops on a mesh == on one rank",
        "OK random numbers on a mesh == on one rank",
        "OK a data x model parallel MLP, 20 steps eager on a 2x2 mesh == 1 rank == numpy",
        "OK a data x model parallel MLP, 20 steps nn.Graph on a 2x2 mesh == 1 rank == numpy",
        "OK Adam and clip_grad_norm_ on 2-D layouts == 1 rank",
        "OK conv, batch norm, pooling, dropout, embedding on 2-D data layouts == 1 rank",
        "OK explain lists the per-axis steps",
    ], done.stdout
    # every rank printed its piece as the page shows it, its three lines together (no other rank's output inside):
    # its device, the local shape, two rows of eight numbers
    row = r"(?: *-?\d\.\d{4},){7} *-?\d\.\d{4}\]"
    for r in range(4):
        block = (r"^cpu:%d, oneflow\.Size\(\[1, 2, 8\]\), \ntensor\(\[\[\[%s,\n {9}\[%s\]\], "
                 r"dtype=oneflow\.float32\)$" % (r, row, row))
        assert len(re.findall(block, done.stdout, re.M)) == 1, (r, done.stdout)
    assert done.stdout.count("dtype=oneflow.float32)") == 4


# --- the legacy form across processes ---------------------------------------------------------------------------------
LEGACY = ROOT / "tests" / "mpi_scripts" / "legacy_2d.py"


def _run_legacy(cmd):
    env = _clean_env()
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", ONEFLOW_COMPAT_SEED="5")
    done = subprocess.run(cmd, cwd=ROOT, env=mpiexec_command.environment(MPIEXEC, env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done


@pytest.fixture(scope="module")
def legacy_one_device(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("ref") / "ref.npz")
    _run_legacy([sys.executable, str(LEGACY), "1", out])
    return dict(np.load(out))


@pytest.mark.parametrize("ranks,per_machine", [(2, 2), (4, 1)])
def test_legacy_2d_hybrid_across_processes_equals_one_device(legacy_one_device, tmp_path, ranks, per_machine):
    out = str(tmp_path / "got.npz")
    done = _run_legacy(["timeout", "180", str(MPIEXEC), "-n", str(ranks), sys.executable, "-m", "mpi4py",
                        str(LEGACY), str(per_machine), out])
    assert done.stdout.count("done %d %d" % (ranks, per_machine)) == 1
    got, ref = dict(np.load(out)), legacy_one_device
    assert set(got) == set(ref) and {"losses", "w1", "b1", "w2", "b2", "w1-momentum"} <= set(got)
    assert ref["losses"][-5:].mean() < ref["losses"][:5].mean()  # it learns
    np.testing.assert_allclose(got["losses"], ref["losses"], rtol=1e-5)
    for k in sorted(set(got) - {"losses"}):  # the weights, their momenta, the train step
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)
