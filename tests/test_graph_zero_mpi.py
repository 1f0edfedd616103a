"""nn.Graph's ZeRO under MPI (`mpiexec -n 2`, tests/mpi_scripts/zero_graph.py): every stage trains an MLP with
AdamW exactly as without ZeRO, each rank holding half of the sharded optimizer states and parameters (every stage, as
OneFlow 0.9), with the reduce-scatter and all-gather `explain` reports. The simulated-rank tests are in
tests/test_graph_zero.py."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from test_global_mpi import MPIEXEC, SCRIPTS, mpi

pytest.importorskip("mpi4py")
pytestmark = pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)


def test_every_stage_under_mpi_equals_no_zero_and_shards_the_states():
    done = mpi(2, SCRIPTS / "zero_graph.py", timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    runs = [json.loads(line[4:]) for line in done.stdout.splitlines() if line.startswith("RUN ")]
    assert [r["zero"] for r in runs] == [0, 1, 2, 3]
    plain = runs[0]
    assert plain["losses"][-1] < plain["losses"][0]
    assert all(shape[0] in (32, 4) for shape in plain["states"].values())
    for r in runs[1:]:
        assert r["losses"] == plain["losses"], r["zero"]
        for a, b in zip(r["params"], plain["params"]):
            np.testing.assert_array_equal(np.array(a), np.array(b))
        # shard_min_size=16: the pieces of 0.weight (16x6), 0.bias (16) and 2.weight (2x32) are sharded, 2.bias
        # (a piece of 2 elements) stays whole
        rows = {"model.0.weight": 16, "model.0.bias": 16, "model.2.weight": 2, "model.2.bias": 4}
        for name, shape in r["states"].items():
            assert shape[0] == rows[name.split("-")[0]], (r["zero"], name, shape)
        whole = [[32, 6], [32], [4, 32], [4]]
        halves = [[16, 6], [16], [2, 32], [4]]
        assert r["local"] == halves and whole != halves
    # every stage: each sharded gradient is reduce-scattered (half its bytes sent per rank) and each sharded
    # parameter all-gathered for the forward pass; 2.bias (16 bytes) is all-reduced as without ZeRO
    sizes = [32 * 6 * 4, 32 * 4, 4 * 32 * 4]
    want = sorted([["reduce-scatter", b / 2] for b in sizes] + [["all-gather", b / 2] for b in sizes]
                  + [["all-reduce", 16.0]])
    for r in runs[1:]:
        assert r["collectives"] == want, r["zero"]
