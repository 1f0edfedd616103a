"""Which physical GPU each logical device runs on (backend/gpu_map.py, runtime/runtime.py): local rank × devices per
process + d (modulo the GPUs there are), or ONEFLOW_COMPAT_GPU_MAP; the process's first device's GPU made current
once, steps of a device on another GPU run with that GPU current, and its variables and fed pieces are made there.
Checked on the fake device with a fake CUDA runtime of several GPUs (launches counted per current GPU); and the
per-device cache of the erfc table."""
import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
from cpu_reference import on_cpu
from oneflow_compat.backend import gpu_map
from oneflow_compat.comm import world
from oneflow_compat.kernels import activation


def _train(devices, steps=2):
    flow.clear_default_session()
    flow.config.gpu_device_num(devices)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((8, 6)), y: tp.Numpy.Placeholder((8,), dtype=flow.int32)) -> tp.Numpy:
        h = flow.layers.dense(x, 5, activation=flow.nn.relu, kernel_initializer=flow.random_normal_initializer(),
                              name="h")
        logits = flow.layers.dense(h, 3, kernel_initializer=flow.random_normal_initializer(), name="o")
        loss = flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits)
        flow.optimizer.SGD(flow.optimizer.PiecewiseConstantScheduler([], [0.1]), momentum=0).minimize(loss)
        return loss

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, 8).astype(np.int32)
    losses = [train(x, y) for _ in range(steps)]
    return losses, {k: v.numpy() for k, v in flow.get_all_variables().items()}


@pytest.mark.parametrize("local_rank, gpus, gpu_map_env, want", [
    (0, 2, None, {0, 1}),  # two logical devices of one process on its host's two GPUs
    (1, 4, None, {2, 3}),  # the second process of a host: slots 2 and 3
    (1, 3, None, {2, 0}),  # more slots than GPUs: modulo
    (0, 1, None, {0}),  # one GPU: every logical device shares it
    (0, 2, "1,0", {1, 0}),  # the override
])
def test_each_logical_device_runs_on_its_physical_gpu(monkeypatch, local_rank, gpus, gpu_map_env, want):
    with on_cpu():
        expected = _train(2)
    monkeypatch.setattr(world, "job_local_rank", lambda: local_rank)
    if gpu_map_env is None:
        monkeypatch.delenv(gpu_map.GPU_MAP_ENV, raising=False)
    else:
        monkeypatch.setenv(gpu_map.GPU_MAP_ENV, gpu_map_env)
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=True, gpus=gpus)
    got = _train(2)
    # the home GPU (logical device 0's) was made current first
    assert fake.cuda.used[:1] == [gpu_map.physical_gpu(0, local_rank, 2, gpus, gpu_map.parse_gpu_map(gpu_map_env,
                                                                                                      gpus))]
    used = {g for g, n in strict_device.Launches.by_device.items() if n}
    assert used == want  # every GPU of the process's devices ran kernels, and no other
    for g, w in zip(got[0], expected[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    for name, value in expected[1].items():
        np.testing.assert_allclose(got[1][name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_process_gpus_rule_and_errors():
    xp = strict_device.module(gpus=4)
    gpus = gpu_map.ProcessGpus(local_rank=1, devices_per_process=2, environ={})
    assert [gpus.of(xp, d) for d in (0, 1)] == [2, 3]
    assert gpus.select_home(xp) == 2 and xp.cuda.current == 2
    with gpus.on(xp, 1) as gpu:
        assert gpu == 3 and xp.cuda.current == 3
    assert xp.cuda.current == 2
    # more devices than the process drives GPUs (gpu mode: a legacy "cpu" placement of 4 reader devices on a
    # session of 2 GPU devices, as the zoo's wide & deep has): they cycle over the process's own GPUs
    assert [gpus.of(xp, d) for d in (2, 3)] == [2, 3]
    one_per_rank = gpu_map.ProcessGpus(local_rank=3, environ={})  # the global API: a device per rank
    assert one_per_rank.of(xp, 0) == 3
    bad = gpu_map.ProcessGpus(local_rank=0, devices_per_process=2, environ={gpu_map.GPU_MAP_ENV: "0,7"})
    with pytest.raises(ValueError, match="names GPU 7, but this host has 4 GPU"):
        bad.of(xp, 0)


def test_erfc_table_is_kept_per_device():
    xp = strict_device.module(gpus=2)
    a = xp.asarray(np.linspace(0, 3, 7, dtype=np.float32))
    activation._erfc_nonnegative(xp, a)
    with xp.cuda.Device(1):
        activation._erfc_nonnegative(xp, a)
    keys = [k for k in activation._ERFCX_TABLES if k[0] == id(xp)]
    assert sorted(k[1] for k in keys) == [0, 1]  # one table per GPU, each made on its own device


@pytest.mark.parametrize("local_rank, want", [(0, {0}), (1, {1})])
def test_a_placement_wider_than_the_device_count_runs_on_the_processs_own_gpu(monkeypatch, local_rank, want):
    """The zoo's wide&deep reads with a "cpu" placement of 2 devices beside gpu_device_num(1): under
    ONEFLOW_COMPAT_DEVICE=gpu those run on GPUs too (the first GPU run: "logical device 1 outside the 1 device(s)
    of a process"). The extra devices cycle over the process's own GPU (gpu_device_num(1): one GPU per process,
    local rank × 1 + 0), so a reader placement never moves a process's computation to another process's GPU."""
    monkeypatch.setattr(world, "job_local_rank", lambda: local_rank)
    monkeypatch.delenv(gpu_map.GPU_MAP_ENV, raising=False)
    strict_device.install(monkeypatch, "gpu", allow_syncs=True, gpus=4)
    flow.config.gpu_device_num(1)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 2))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            y = flow.identity(x) * 2
        return y + 1

    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    np.testing.assert_array_equal(job(x), x * 2 + 1)
    assert {g for g, n in strict_device.Launches.by_device.items() if n} == want
