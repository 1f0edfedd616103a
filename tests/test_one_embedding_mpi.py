"""flow.one_embedding sharded over 2 MPI ranks (tests/mpi_scripts/one_embedding_sharded.py) equals 1 rank: the
same losses and rows after nn.Graph training on a batch split over the ranks, each rank holding only the keys of
its shard (OneFlow's xxh64 sharding hash), and the two ranks' snapshots together holding the one rank's lines."""
import json
import os
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from test_global_mpi import MPIEXEC, SCRIPTS, mpi

pytest.importorskip("mpi4py")
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def _run(n, out):
    done = mpi(n, SCRIPTS / "one_embedding_sharded.py", str(out), timeout=150, ONEFLOW_COMPAT_DEVICE="cpu")
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
