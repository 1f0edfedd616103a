"""2-D SBP with global tensors on 4 real MPI ranks (`mpiexec -n 4 python -m mpi4py tests/mpi_scripts/global_2d.py`,
under a timeout): the "2D SBP" page's program, every to_global between {B, S(0), S(1), P}^2 on a 2 x 2 mesh and
to / from 1-D placements (each rank's piece and the value against numpy), local -> global on a mesh, layout-free
random numbers, and a data x model parallel MLP trained 20 steps eagerly and as an nn.Graph equal to one rank and to
numpy (rtol 1e-5). The same boxing on simulated ranks, with its bytes: tests/test_boxing_nd.py."""
import os
import re
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


def test_2d_sbp_on_four_ranks():
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_PREFIXES) and k not in _LAUNCH_VARIABLES}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", ONEFLOW_COMPAT_OUTPUT="raw",
               COLUMNS="120")
    done = subprocess.run([str(MPIEXEC), "-n", "4", sys.executable, "-m", "mpi4py",
                           str(ROOT / "tests" / "mpi_scripts" / "global_2d.py")], cwd=ROOT, env=env,
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
