"""A local tensor's device index, as OneFlow 0.9: `flow.device("cuda")` is the process's own device (index
LOCAL_RANK: Device::ParseAndNew / Device::New(type), core/framework/device.cpp @ v0.9.0), an op's results are on its
inputs' device, index included, inputs on cuda:0 and cuda:1 are refused with CheckInputDeviceIdentical's words
(core/framework/local_tensor_infer_cache.cpp), `.to("cuda:1")` / `.cuda(1)` move (framework/tensor.py `_cuda`),
`flow.cuda.current_device()` is the local rank and `set_device` refuses any other index (python/oneflow/cuda/
__init__.py, core/device/cuda_util.cpp GetCudaDeviceIndex).

The index is checked where "cuda" runs on the CPU too (the devices the user named). On the strict fake device with
2 GPUs, a cuda:1 tensor's arrays are made and its kernels launched with GPU 1 current (CuPy's device context), its
training step on GPU 1 only."""
import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.backend import devices
from oneflow_compat.comm import world

import strict_device

DEVICE_WORDS = "Expected all tensors to be on the same device, but found at least two devices, "


@pytest.fixture
def cuda_on_cpu(monkeypatch):
    """"cuda" tensors running on the CPU (no usable GPU), whatever device the suite runs on."""
    monkeypatch.setattr(devices, "mode", lambda: "cpu")
    flow.clear_default_session()


@pytest.fixture
def two_gpus(monkeypatch):
    return strict_device.install(monkeypatch, "gpu", allow_syncs=True, gpus=2)


def _raised(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def test_a_device_without_index_is_the_processs_own(cuda_on_cpu, monkeypatch):
    assert flow.device("cuda") == flow.device("cuda:0") and flow.device("cpu").index == 0
    monkeypatch.setattr(world, "job_local_rank", lambda: 1)  # the second process of a node
    assert flow.device("cuda") == flow.device("cuda", 1) and repr(flow.device("cuda")) == \
        "device(type='cuda', index=1)"
    t = flow.tensor([1.0], device="cuda")
    assert str(t.device) == "cuda:1" and t.get_device() == 1
    assert flow.cuda.current_device() == 1
    flow.cuda.set_device(1)  # its own device: a no-op
    with pytest.raises(ValueError, match="does not equal to the local rank is not supported"):
        flow.cuda.set_device(0)
    assert (t + flow.tensor([2.0], device="cuda:1")).device == flow.device("cuda:1")  # the same device, named
    with pytest.raises(RuntimeError, match="Invalid device tag cuda:x"):
        flow.device("cuda:x")
    with pytest.raises(ValueError, match="Device ID should be non-negative"):
        flow.device("cuda", -2)


def test_results_keep_the_inputs_device_index(cuda_on_cpu):
    a = flow.tensor([[1.0, -2.0], [3.0, 4.0]], device="cuda:1")
    assert a.device == flow.device("cuda:1") and a.is_cuda and a.get_device() == 1
    assert "device='cuda:1'" in repr(a)
    outs = [a * 2, a.relu(), a.sum(), a.t(), a[0], a[flow.tensor([1, 0], device="cuda:1")], flow.cat([a, a]),
            a.clone(), flow.zeros_like(a), a.new_ones(3), a.to(flow.float64), flow.matmul(a, a),
            flow.nn.functional.dropout(a, 0.5, training=True), flow.tensor(3.0) + a]
    for out in outs:
        assert out.device == flow.device("cuda:1"), out
    np.testing.assert_allclose((a * 2).numpy(), [[2.0, -4.0], [6.0, 8.0]])
    b = a.to("cuda:0")
    assert b.device == flow.device("cuda:0") and a.cuda(0).device == flow.device("cuda:0")
    assert b.cuda(1).device == flow.device("cuda:1") and b.to(a).device == flow.device("cuda:1")
    assert a.cpu().device == flow.device("cpu") and b.cuda().device == flow.device("cuda:0")
    np.testing.assert_allclose(b.numpy(), a.numpy())


def test_two_indices_of_one_type_are_refused_with_oneflow_words(cuda_on_cpu):
    a = flow.tensor([1.0, 2.0], device="cuda:0")
    b = flow.tensor([3.0, 4.0], device="cuda:1")
    assert (DEVICE_WORDS + "cuda:0 (positional 0) and cuda:1 (positional 1)!") in _raised(lambda: a + b)
    assert (DEVICE_WORDS + "cuda:1 (positional 0) and cuda:0 (positional 1)!") in _raised(lambda: flow.cat([b, a]))
    assert (DEVICE_WORDS + "cuda:1 (positional 0) and cuda:0 (positional 1)!") in _raised(lambda: b.add_(a))
    # a 0-d CUDA tensor is no CPU scalar: not moved
    assert DEVICE_WORDS in _raised(lambda: b * flow.tensor(2.0, device="cuda:0"))
    # a module on cuda:1 refuses cuda:0 data
    m = flow.nn.Linear(2, 1).to("cuda:1")
    assert m.weight.device == flow.device("cuda:1")
    assert DEVICE_WORDS in _raised(lambda: m(a.reshape(1, 2)))


def test_gradients_stay_on_the_tensors_device(cuda_on_cpu):
    w = flow.tensor([1.0, 2.0], device="cuda:1", requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.device == flow.device("cuda:1")
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0])
    x = flow.tensor([1.0, 3.0], device="cuda:1", requires_grad=True)
    y = x.to("cuda:0")  # OneFlow's copy op: the gradient goes back to cuda:1
    assert not y.is_leaf
    (y * y).sum().backward()
    assert x.grad.device == flow.device("cuda:1")
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 6.0])


def _step(device):
    flow.manual_seed(3)
    m = flow.nn.Linear(4, 3).to(device)
    opt = flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = flow.tensor(np.arange(8, dtype=np.float32).reshape(2, 4) / 8, device=device)
    for _ in range(2):
        loss = (m(x) ** 2).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
    return m.weight.numpy(), loss.numpy()


def test_a_cuda_1_training_step_runs_on_gpu_1_only(two_gpus):
    with_cpu = _step("cpu")
    strict_device.Launches.reset()
    got = _step("cuda:1")
    used = {g for g, n in strict_device.Launches.by_device.items() if n}
    assert used == {1}  # made, computed, differentiated, updated and zeroed with GPU 1 current
    for g, w in zip(got, with_cpu):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    strict_device.Launches.reset()
    _step("cuda")  # the process's own device (local rank 0): GPU 0
    assert {g for g, n in strict_device.Launches.by_device.items() if n} == {0}
    assert two_gpus.cuda.current == 0  # the switch went back to the home GPU


def test_indexing_on_cuda_1_runs_there(two_gpus):
    a = flow.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda:1")
    strict_device.Launches.reset()
    got = a[flow.tensor([1, 1, 0], device="cuda:1")]
    a[0] = 7.0
    assert set(strict_device.Launches.by_device) == {1}
    assert got.device == flow.device("cuda:1")
    np.testing.assert_allclose(got.numpy(), [[3.0, 4.0], [3.0, 4.0], [1.0, 2.0]])
    np.testing.assert_allclose(a.numpy(), [[7.0, 7.0], [3.0, 4.0]])


def test_a_device_the_machine_lacks_is_refused(two_gpus):
    with pytest.raises(RuntimeError, match=r"invalid device ordinal \(101\).*cuda:2, this process sees 2 CUDA"):
        flow.tensor([1.0], device="cuda:2")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        flow.ones(2).to("cuda:5")


def test_an_nn_graph_on_cuda_1_runs_there_and_keeps_its_inputs_device(two_gpus):
    m = flow.nn.Linear(3, 2).to("cuda:1")

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(flow.optim.SGD(m.parameters(), lr=0.1))

        def build(self, x):
            loss = self.m(x).sum()
            loss.backward()
            return loss

    g = G()
    x = flow.ones(4, 3, device="cuda:1")
    w = m.weight.numpy().copy()
    strict_device.Launches.reset()
    for _ in range(2):
        out = g(x)
    assert set(strict_device.Launches.by_device) == {1}  # built, fed, run and updated on GPU 1
    assert out.device == flow.device("cuda:1") and m.weight.device == flow.device("cuda:1")
    np.testing.assert_allclose(m.weight.numpy(), w - 2 * 0.1 * 4, rtol=1e-6)  # d loss / d w = 4 per element
    # OneFlow 0.9's RunLazyNNGraph: the inputs' meta (their device included) is the first call's
    with pytest.raises(RuntimeError, match=r"nn.Graph ONLY accepts static inputs tensor meta, please check whether "
                                           r"your input tensor meta each step is the same as the input of first call "
                                           r"graph.\nThe excepted tensor meta is: shape=\(4,3\), dtype=oneflow.float32, "
                                           r"device=cuda:1, but the actual tensor meta is: shape=\(4,3\), "
                                           r"dtype=oneflow.float32, device=cuda:0"):
        g(flow.ones(4, 3, device="cuda:0"))


def test_in_place_writes_of_a_cuda_1_tensor_run_there(two_gpus):
    a = flow.ones(3, 4, device="cuda:1")
    m = flow.nn.Linear(4, 2).to("cuda:1")
    (m(a) ** 2).sum().backward()
    state = m.state_dict()
    writes = [lambda: flow.nn.init.normal_(a), lambda: flow.nn.init.constant_(a, 2.0),
              lambda: a.copy_(flow.zeros(3, 4, device="cuda:1")), lambda: a.copy_(flow.ones(3, 4)),
              lambda: a.masked_fill_(a < 1, -1.0), lambda: a.clamp_(0, 2), lambda: a.__setitem__(a > 0, 3.0),
              lambda: flow.nn.utils.clip_grad_norm_(m.parameters(), 0.5),
              lambda: flow.nn.utils.clip_grad_value_(m.parameters(), 0.1), lambda: m.load_state_dict(state),
              lambda: flow.optim.Adam(m.parameters(), lr=0.1).step(), lambda: flow.nn.BatchNorm1d(4).to("cuda:1")(a),
              lambda: a[0].add_(1)]
    for k, write in enumerate(writes):
        strict_device.Launches.reset()
        write()
        assert set(strict_device.Launches.by_device) == {1}, (k, strict_device.Launches.by_device)
    # (the last write, through a view, reaches `a` where views share storage: host arrays only for now, views.py)
    np.testing.assert_array_equal(a.numpy()[1:], np.full((2, 4), 3.0))


def test_synchronize_waits_for_the_device_it_names(two_gpus, monkeypatch):
    flow.cuda.synchronize()  # the current device: the local rank's
    flow.cuda.synchronize(1)
    flow.cuda.synchronize("cuda:1")
    flow.cuda.synchronize(flow.device("cuda", 0))
    flow.cuda.synchronize(-1)  # negative: nothing to wait for
    assert two_gpus.cuda.synchronized == [0, 1, 1, 0]
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        flow.cuda.synchronize(3)
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu:0"):
        flow.cuda.synchronize("cpu")
    monkeypatch.setattr(world, "job_local_rank", lambda: 1)
    flow.cuda.synchronize()
    assert two_gpus.cuda.synchronized[-1] == 1
