"""LeNet and the MLP trained on the fake device whose raw launches run the project's CUDA sources compiled for the
host (tests/cuda_host.py: every thread of the grid, a cooperative module's blocks as threads at a barrier), not
their numpy twins: the train steps of the real kernel code (im2col, the weight gradient's operands, col2im, the
fused bias/relu epilogue, max pooling and its gradient, dropout, the softmax cross-entropy, the SGD and the bias
reductions) equal the CPU's. A small batch keeps the emulated threads few."""
import numpy as np
import pytest

import cuda_host
import strict_device
import test_gpu_step_budget as budget
from cpu_reference import on_cpu


@pytest.mark.skipif(not cuda_host.available(), reason="no C++ compiler to run the CUDA sources on the host")
@pytest.mark.parametrize("model", [budget.lenet, budget.mlp], ids=["lenet", "mlp"])
def test_steps_of_the_compiled_cuda_sources_equal_the_cpu_steps(monkeypatch, model):
    monkeypatch.setattr(budget, "BATCH", 6)
    with on_cpu():
        want = budget._steps(model, 2)
    strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1, runner=cuda_host.runner())
    got = budget._steps(model, 2)
    assert strict_device.Launches.by_name.get("raw:row_sums_f32" if model is budget.lenet else "raw:colsum_sgd_f32")
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got[0][0], got[0][-1])  # it trained
    assert sorted(got[1]) == sorted(want[1])
    for name, value in want[1].items():
        np.testing.assert_allclose(got[1][name], value, rtol=1e-5, atol=1e-6, err_msg=name)
