"""flow.one_embedding sharded over 2 MPI ranks (tests/mpi_scripts/one_embedding_sharded.py) equals 1 rank: the
same losses and rows after nn.Graph training on a batch split over the ranks, each rank holding only the keys of
its shard (OneFlow's xxh64 sharding hash), and the two ranks' snapshots together holding the one rank's lines."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oneflow_compat as flow

pytest.importorskip("mpi4py")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "mpi_scripts" / "one_embedding_sharded.py"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)
_MPI_PREFIXES = ("PMI_", "OMPI_", "MV2_", "PMIX_", "MPI_LOCAL", "HYDRA_", "ONEFLOW_COMPAT_")


def _run(n, out):
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_PREFIXES)
           and k not in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", ONEFLOW_COMPAT_DEVICE="cpu")
    done = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, "-m", "mpi4py", str(SCRIPT), str(out)],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=150)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out / "result.json") as f:
        return json.load(f)


def _snapshot(paths):
    lines = {}
    for keys, values in flow.one_embedding.make_persistent_table_reader(
            [str(p) for p in paths], "final", flow.int64, flow.float, 8):
        lines.update(zip(keys.tolist(), values))
    return lines


def test_two_ranks_shard_the_table_and_equal_one_rank(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = _run(1, tmp_path / "one")
    two = _run(2, tmp_path / "two")
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-6)
    np.testing.assert_array_equal(np.array(two["rows"]), np.array(one["rows"]))
    assert sorted(os.listdir(tmp_path / "two" / "tab")) == ["0-2", "1-2"]  # OneFlow's rank folders
    single = _snapshot([tmp_path / "one" / "tab" / "0-1"])
    shards = [_snapshot([tmp_path / "two" / "tab" / d]) for d in ("0-2", "1-2")]
    assert shards[0] and shards[1] and not set(shards[0]) & set(shards[1])
    merged = {**shards[0], **shards[1]}
    assert sorted(merged) == sorted(single) == sorted(set(one["keys"]))
    for key, line in single.items():
        np.testing.assert_array_equal(merged[key], line)  # embedding and momentum
