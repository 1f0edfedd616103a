"""Dynamic blobs moved between processes (Wide&Deep's hybrid embedding, OneFlow-Benchmark v0.4.0
`wdl_train_eval_with_hybrid_embd.py`): ids found by `argwhere` on 2 devices are gathered to device 0:0 for the
low-frequency table and its rows broadcast back for `tensor_scatter_nd_update`. The pieces are shorter than the
static shape's cuts, so under `mpiexec -n 2` their sizes travel before the data (runtime/boxing.py); the result
equals the 2-device in-process run and numpy."""
import os
import subprocess
import sys

import numpy as np
import pytest
from oneflow_compat.comm import mpiexec_command

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
IDS = [1, 5, 3, 0, 7, 2, 9, 4]

SCRIPT = '''
import sys
import numpy as np
import oneflow_compat as flow
import oneflow_compat.typing as tp

mpi = sys.argv[1] == "mpi"
flow.config.cpu_device_num(1 if mpi else 2)
if mpi:
    flow.env.machine([{"addr": "127.0.0.1"}, {"addr": "localhost"}])
both = ["0:0", "1:0"] if mpi else "0:0-1"


@flow.global_function()
def job(x: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
    with flow.scope.placement("cpu", both):
        idx = flow.argwhere(flow.math.greater(x, flow.constant(2, dtype=flow.int32)))
        ids = flow.gather_nd(params=x, indices=idx)
    with flow.scope.placement("cpu", "0:0"):
        table = flow.get_variable("t", shape=(10, 3), initializer=flow.ones_initializer())
        rows = flow.gather(params=table, indices=ids) * flow.reshape(flow.cast(ids, flow.float), (-1, 1))
    with flow.scope.placement("cpu", both):
        z = flow.reshape(flow.zeros_like(x, dtype=flow.float), (-1, 1)) * flow.constant(0.0, shape=(1, 3))
        z = flow.tensor_scatter_nd_update(params=z, updates=rows, indices=idx)
        return flow.cast_to_static_shape(z)


out = job(np.array(%r, np.int32))
print("RESULT", " ".join("%%g" %% v for v in out.ravel()))  # every rank holds the returned value
''' % (IDS,)


def _run(tmp_path, cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=str(tmp_path),
                       env=mpiexec_command.environment(MPIEXEC))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, p.stdout
    return [np.array(line.split()[1:], np.float64).reshape(8, 3) for line in lines]


@pytest.mark.skipif(not os.path.exists(MPIEXEC), reason="no mpiexec in the virtual environment")
def test_dynamic_pieces_cross_processes_as_on_two_devices(tmp_path):
    script = tmp_path / "hybrid.py"
    script.write_text(SCRIPT)
    x = np.array(IDS)
    expected = np.where(x > 2, x, 0).astype(np.float64)[:, None] * np.ones((1, 3))
    local = _run(tmp_path, [sys.executable, str(script), "local"])
    np.testing.assert_array_equal(local[0], expected)
    for got in _run(tmp_path, [MPIEXEC, "-n", "2", sys.executable, str(script), "mpi"]):
        np.testing.assert_array_equal(got, expected)
