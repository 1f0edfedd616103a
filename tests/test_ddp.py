"""`oneflow.nn.parallel.DistributedDataParallel` (issue 21, part 3): the DDP page's program on 2 ranks equals
1-rank training on the mean gradient (numpy reference written here), parameters are broadcast from rank 0 and
buffers before each forward; on one process DDP changes nothing."""
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import oneflow_compat as flow
from tests.test_global_mpi import MPIEXEC, mpi
from oneflow_compat.comm.environment import is_job_variable

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
@pytest.mark.parametrize("device", ["host", "fake_gpu"])
def test_ddp_page_program_on_two_ranks_equals_the_mean_gradient_training(device):
    # fake_gpu: the page's "cuda" tensors are device arrays of the strict fake device in each rank (a GPU's gradients
    # accumulate on the device, never into the host buckets: mixing them failed on the first GPU run)
    if device == "host":
        done = mpi(2, SCRIPT, timeout=120, ONEFLOW_COMPAT_OUTPUT="raw")
    else:
        done = mpi(2, ROOT / "tests" / "mpi_scripts" / "on_fake_device.py", SCRIPT, timeout=120,
                   ONEFLOW_COMPAT_OUTPUT="raw", PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = sorted((json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")),
                  key=lambda r: r["rank"])
    assert [r["rank"] for r in rows] == [0, 1]
    w, losses = reference(2)
    for r in rows:
        np.testing.assert_allclose(r["w"], w.ravel(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["losses"], losses[r["rank"]], rtol=1e-4, atol=1e-9)
        flat = " ".join(r["repr"].split())  # (a cuda tensor's repr wraps its longer last line)
        assert flat.endswith("device='cuda:%d', dtype=oneflow.float32, grad_fn=<accumulate_grad>)" % r["rank"]), \
            r["repr"]  # (each rank's "cuda" is its local rank's GPU)
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


DDP_EXPLAINED = """
import numpy as np
import oneflow as flow
from oneflow.nn.parallel import DistributedDataParallel as ddp

rank = flow.env.get_rank()
m = ddp(flow.nn.Linear(3, 2), bucket_size=1)
opt = flow.optim.SGD(m.parameters(), lr=0.1)
x = flow.tensor(np.full((4, 3), rank + 1.0, np.float32))
for _ in range(2):
    loss = m(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("grad", m.weight.grad.numpy().ravel().tolist(), m.bias.grad.numpy().tolist())
"""


@pytest.mark.skipif(not MPIEXEC.exists(), reason="no mpiexec beside %s" % sys.executable)
def test_explain_lists_the_ddp_bucket_all_reduces_with_their_bytes(tmp_path):
    """DDP's gradients are all-reduced through the runtime's gradient buckets (one per parameter with bucket_size=1,
    in reverse order: the bias first), each listed by explain with the bytes its flat buffer's all-reduce sends on 2
    ranks (its own size) and the number of calls; the gradients are the means over the ranks."""
    import os
    import subprocess

    (tmp_path / "prog.py").write_text(DDP_EXPLAINED)
    env = {k: v for k, v in os.environ.items() if not is_job_variable(k, ("PMI_", "OMPI_", "MV2_", "PMIX_", "ONEFLOW_COMPAT_OUT"))}
    done = subprocess.run(["timeout", "120", sys.executable, "-m", "oneflow.distributed.launch", "--nproc_per_node",
                           "2", "-m", "oneflow_compat", "explain", "prog.py"], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    # d(sum of x @ W.T + b)/dW = column sums of x: 4 * (rank + 1), mean over the ranks 4 * 1.5 = 6; db = 4 rows
    assert lines.count("grad [6.0, 6.0, 6.0, 6.0, 6.0, 6.0] [4.0, 4.0]") == 2
    assert "eager global ops: 2 boxing transfers (4 calls), 64 bytes in all" in lines
    rows = [line.split() for line in lines if line.startswith("gradient bucket")]
    assert [r[2:5] + r[-3:] for r in rows] == [["[2]", "2", "float32", "all-reduce", "8", "2"],
                                               ["[2x3]", "6", "float32", "all-reduce", "24", "2"]]
