"""`oneflow.nn.parallel.DistributedDataParallel` (issue 21, part 3): the DDP page's program on 2 ranks equals
1-rank training on the mean gradient (numpy reference written here), parameters are broadcast from rank 0 and
buffers before each forward; on one process DDP changes nothing."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import oneflow_compat as flow
from tests.test_global_mpi import MPIEXEC, mpi

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "mpi_scripts" / "ddp_training.py"

X = [np.array([[1, 2], [2, 3]], np.float32), np.array([[4, 6], [3, 1]], np.float32)]
Y = [np.array([[8], [13]], np.float32), np.array([[26], [9]], np.float32)]


def reference(ranks):
    """SGD(lr=0.01) on the mean over the ranks of each rank's sum-of-squares gradient; per-rank losses."""
    w = np.zeros((2, 1), np.float32)
    losses = [[] for _ in range(ranks)]
    for i in range(500):
        grads = []
        for r in range(ranks):
            err = X[r] @ w - Y[r]
            if (i + 1) % 50 == 0:
                losses[r].append(float((err ** 2).sum()))
            grads.append(2 * X[r].T @ err)
        w = w - np.float32(0.01) * (sum(grads) / np.float32(ranks))
    return w, losses


@pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)
def test_ddp_page_program_on_two_ranks_equals_the_mean_gradient_training():
    done = mpi(2, SCRIPT, timeout=120, ONEFLOW_COMPAT_OUTPUT="raw")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = sorted((json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")),
                  key=lambda r: r["rank"])
    assert [r["rank"] for r in rows] == [0, 1]
    w, losses = reference(2)
    for r in rows:
        np.testing.assert_allclose(r["w"], w.ravel(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["losses"], losses[r["rank"]], rtol=1e-4, atol=1e-9)
        assert r["repr"].endswith("dtype=oneflow.float32, grad_fn=<accumulate_grad>)")
    assert rows[0]["w"] == rows[1]["w"]  # the all-reduced gradient keeps the replicas equal
    np.testing.assert_allclose(w.ravel(), [2.0, 3.0], atol=1e-3)


def test_ddp_on_one_process_trains_as_the_plain_module():
    def train(wrap):
        m = flow.nn.Linear(2, 1)
        m.weight.data = flow.tensor([[0.5, -0.5]])
        m.bias.data = flow.tensor([0.1])
        if wrap:
            m = flow.nn.parallel.DistributedDataParallel(m, bucket_size=1)
        opt = flow.optim.SGD(m.parameters(), lr=0.05)
        for _ in range(5):
            loss = ((m(flow.tensor(X[0])) - flow.tensor(Y[0])) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return m.weight.numpy(), m.bias.numpy()

    plain, wrapped = train(False), train(True)
    np.testing.assert_array_equal(plain[0], wrapped[0])
    np.testing.assert_array_equal(plain[1], wrapped[1])


def test_ddp_refuses_what_oneflow_refuses():
    m = flow.nn.Linear(2, 1).double()
    with pytest.raises(AssertionError, match="only float32 parameters are supported"):
        flow.nn.parallel.DistributedDataParallel(m)
    with pytest.raises(TypeError, match="expected a flow.nn.Module"):
        flow.nn.parallel.DistributedDataParallel(3)
