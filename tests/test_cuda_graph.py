"""CUDA graphs (runtime/cuda_graph.py, ONEFLOW_COMPAT_CUDA_GRAPH=1) on the fake device with a fake CUDA runtime
(tests/strict_device.py): a capture records every launch with the arguments it had, and each later launch replays
them as a graph does — so a per-call value passed by value would be frozen at its first call, and a step that
synchronises or uploads pageable host data inside the capture fails as CUDA fails it.

The captured LeNet and MLP train steps equal the CPU's over calls whose learning rate changes and whose dropout
masks differ (the rates and keys are step scalars read from device memory); after the capture a call is one graph
launch and the packed download, with one synchronisation; what cannot be captured runs uncaptured with a notice
naming why."""
import ctypes
import logging
import re

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
import test_gpu_step_budget as budget
from cpu_reference import on_cpu
from kernel_testing import CUPY
from oneflow_compat.kernels import cuda_blas
from oneflow_compat.runtime import cuda_graph


@pytest.fixture
def graphs(monkeypatch):
    monkeypatch.setenv(cuda_graph.ENV, "1")


def _assert_same(got, want):
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert sorted(got[1]) == sorted(want[1])
    for name, value in want[1].items():
        np.testing.assert_allclose(got[1][name], value, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("model", [budget.lenet, budget.mlp], ids=["lenet", "mlp"])
def test_captured_steps_equal_the_cpu_steps(monkeypatch, graphs, model):
    with on_cpu():
        want = budget._steps(model, 5, schedule=([1, 3], [0.1, 0.05, 0.02]))
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)
    L, S = strict_device.Launches, strict_device.Syncs
    marks = []
    got = budget._steps(model, 5, on_step=lambda s: marks.append((L.count, S.total(), L.uploads)),
                        schedule=([1, 3], [0.1, 0.05, 0.02]))
    _assert_same(got, want)
    assert fake.cuda.captures == 1 and fake.cuda.launches == 4  # call 1 ran as usual, call 2 captured, 3-5 replay
    for (l0, s0, u0), (l1, s1, u1) in zip(marks[1:], marks[2:]):  # replayed calls
        assert l1 - l0 == 1  # the graph's launch (the loss and its checks come down as copies, no packing kernel)
        assert s1 - s0 == 1  # one synchronisation
        assert u1 - u0 == 1  # ONE copy up before the launch: the inputs and the step scalars, packed


@pytest.mark.skipif(CUPY is None, reason="CuPy with a usable GPU is not available (the suite under "
                                          "ONEFLOW_COMPAT_DEVICE=gpu on a GPU machine runs it)")
@pytest.mark.parametrize("model", [budget.lenet, budget.mlp], ids=["lenet", "mlp"])
def test_captured_steps_on_a_real_gpu_equal_the_cpu_steps(graphs, model):
    """The same on CuPy and CUDA themselves: the step is captured (the uploads outside the graph, the GEMMs through
    the project's cuBLAS handle), and five calls whose rate changes under the replays equal the CPU's. After five
    steps LeNet's convolution weights are compared at 1e-4 (float32 sums in another order: see
    tools/gpu_stages.py's WEIGHT_RTOL_LAST); the losses and the MLP at 1e-5."""
    with on_cpu():
        want = budget._steps(model, 5, schedule=([1, 3], [0.1, 0.05, 0.02]))
    got = budget._steps(model, 5, schedule=([1, 3], [0.1, 0.05, 0.02]))
    from oneflow_compat.framework import session as sess

    captured = [c.exe.captured for c in sess.default_session().compiled.values() if getattr(c.exe, "captured", None)]
    assert len(captured) == 1 and captured[0].disabled is None and captured[0].graph is not None
    assert captured[0].calls == 5
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    rtol = 1e-4 if model is budget.lenet else 1e-5
    for name, value in want[1].items():
        np.testing.assert_allclose(got[1][name], value, rtol=rtol, atol=rtol, err_msg=name)


def test_data_parallel_on_two_devices_of_one_gpu_is_captured(monkeypatch, graphs):
    with on_cpu():
        want = budget._steps(budget.mlp, 3, devices=2)
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)
    got = budget._steps(budget.mlp, 3, devices=2)
    _assert_same(got, want)
    assert fake.cuda.captures == 1 and fake.cuda.launches == 2


def test_products_through_cupys_own_cublas_give_the_capture_up_with_its_error(monkeypatch, graphs, caplog):
    """What the first H100 run met once its uploads were out of the capture: where the products go through CuPy's
    own matmul (ONEFLOW_COMPAT_OWN_CUBLAS=0), CuPy refuses them inside the capture; the call
    and every later one run uncaptured, with the same values, and the notice says why."""
    with on_cpu():
        want = budget._steps(budget.mlp, 3)
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)
    monkeypatch.setenv(cuda_blas.ENV, "0")
    assert cuda_blas.library(fake) is None and cuda_blas.unavailable_reason(fake) == "ONEFLOW_COMPAT_OWN_CUBLAS=0"
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="oneflow_compat"):
        got = budget._steps(budget.mlp, 3)
    _assert_same(got, want)
    assert fake.cuda.launches == 0
    messages = [r.getMessage() for r in caplog.records if "CUDA graph" in r.getMessage()]
    assert messages == ["ONEFLOW_COMPAT_CUDA_GRAPH=1: job 'train' runs without a CUDA graph: NotImplementedError: "
                        "calling cuBLAS API during stream capture is currently unsupported (the products went "
                        "through CuPy's matmul: ONEFLOW_COMPAT_OWN_CUBLAS=0)"]


def test_an_nn_graph_is_captured_and_each_call_keeps_its_own_outputs(monkeypatch, graphs):
    """An nn.Graph on the device, captured: its input is a device tensor (copied into the graph's static input
    after the call's copy up), its outputs are made by captured fetch steps the replays do not run in Python —
    each call returns copies made after its launch, so an earlier call's output keeps its values."""
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=True, gpus=1)
    model = flow.nn.Linear(3, 2).to("cuda")

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    step = Step()
    xs = [np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3) * (i + 1) for i in range(5)]
    outs = [step(flow.tensor(x).to("cuda")) for x in xs]
    assert fake.cuda.captures == 1 and fake.cuda.launches == 4
    w, b = model.weight.numpy(), model.bias.numpy()
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out.numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)


def _rmsprop_job():
    flow.clear_default_session()
    flow.config.gpu_device_num(1)

    @flow.global_function(type="train")
    def train(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        w = flow.get_variable("w", (3, 2), initializer=flow.constant_initializer(0.5))
        loss = flow.math.reduce_sum(flow.matmul(x, w) ** 2)
        flow.optimizer.RMSProp(flow.optimizer.PiecewiseConstantScheduler([1], [0.1, 0.01])).minimize(loss)
        return loss

    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    return [train(x) for _ in range(3)], flow.get_all_variables()["w"].numpy()


def test_a_host_learning_rate_is_found_before_any_capture(monkeypatch, graphs, caplog):
    with on_cpu():
        want = _rmsprop_job()
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=True, gpus=1)
    caplog.clear()  # (the CPU reference's own notice, where the suite runs on the fake device, is not this one)
    with caplog.at_level(logging.WARNING, logger="oneflow_compat"):
        got = _rmsprop_job()
    assert fake.cuda.captures == 0
    messages = [r.getMessage() for r in caplog.records if "CUDA graph" in r.getMessage()]
    assert messages == ["ONEFLOW_COMPAT_CUDA_GRAPH=1: job 'train' runs without a CUDA graph: the train-step counter "
                        "read on the host by a step (a host learning rate): a captured CUDA graph would replay the "
                        "value of its first call"]
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


def test_a_job_with_a_cpu_op_is_not_captured(monkeypatch, graphs, caplog):
    strict_device.install(monkeypatch, "auto", allow_syncs=True, gpus=1)
    flow.config.gpu_device_num(1)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0"):
            y = flow.math.relu(x, name="on_cpu")
        with flow.scope.placement("gpu", "0:0"):
            return flow.math.square(y)

    with caplog.at_level(logging.WARNING, logger="oneflow_compat"):
        out = job(np.arange(-3, 3, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(out, np.maximum(np.arange(-3, 3, dtype=np.float32).reshape(2, 3), 0) ** 2)
    # (the first op on CPU devices in the job's order: the boxing that moves the input to them)
    assert any(re.fullmatch(r"ONEFLOW_COMPAT_CUDA_GRAPH=1: job 'job' runs without a CUDA graph: op '\S*on_cpu\S*' "
                            r"runs on CPU devices", r.getMessage()) for r in caplog.records)


def test_a_job_on_two_gpus_is_not_captured(monkeypatch, graphs, caplog):
    """Two logical devices on two GPUs: a graph's stream belongs to one GPU, so the job runs uncaptured (said)."""
    with on_cpu():
        want = budget._steps(budget.mlp, 2, devices=2)
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=2)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="oneflow_compat"):
        got = budget._steps(budget.mlp, 2, devices=2)
    _assert_same(got, want)
    assert fake.cuda.captures == 0
    assert [r.getMessage() for r in caplog.records if "CUDA graph" in r.getMessage()] == [
        "ONEFLOW_COMPAT_CUDA_GRAPH=1: job 'train' runs without a CUDA graph: its devices are on 2 GPUs (a captured "
        "graph runs on one stream, which belongs to one GPU)"]


def test_without_the_variable_nothing_is_captured(monkeypatch):
    monkeypatch.delenv(cuda_graph.ENV, raising=False)
    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)
    budget._steps(budget.mlp, 3)
    assert fake.cuda.captures == 0 and fake.cuda.launches == 0


def test_the_fake_capture_refuses_what_cuda_and_cupy_refuse():
    """What the first H100 run met: CuPy refuses any upload while the stream captures (pinned memory included:
    `copy_from_host_async` checks first) and its own cuBLAS calls (`cublas.setStream`); the project's cuBLAS handle
    (kernels/cuda_blas.py) is captured and replayed."""
    xp = strict_device.module(gpus=1)
    a = xp.asarray(np.arange(4, dtype=np.float32))
    m = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    pinned = np.frombuffer(xp.cuda.alloc_pinned_memory(16), np.float32, 4)
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        cuda_blas.prepare(xp)  # this thread's handle bound to the stream that captures, before it does
        stream.begin_capture()
        with pytest.raises(RuntimeError, match="a device -> host copy while a stream is capturing"):
            a.get()
        with pytest.raises(RuntimeError, match=re.escape(strict_device.H2D_IN_CAPTURE)):
            xp.asarray(np.ones(3))
        with pytest.raises(RuntimeError, match=re.escape(strict_device.H2D_IN_CAPTURE)):
            a.set(pinned)
        for product in (lambda: m @ m.T, lambda: xp.matmul(m, m.T), lambda: xp.dot(m, m.T),
                        lambda: xp.tensordot(m, m, axes=([1], [1]))):
            with pytest.raises(NotImplementedError, match=strict_device.CUBLAS_IN_CAPTURE):
                product()
        xp.matmul(m.astype(np.int32), m.T.astype(np.int32))  # CuPy's integer products are its own kernels
        b = a * 2  # recorded: replayed by each launch after the first
        p = cuda_blas.matmul(xp, m, m.T)  # through the project's handle: captured
        graph = stream.end_capture()
    graph.launch()
    a[...] = xp.asarray(np.full(4, 10, np.float32))
    m[...] = xp.asarray(np.ones((2, 3), np.float32))
    graph.launch()
    np.testing.assert_array_equal(b.get(), np.full(4, 20, np.float32))
    np.testing.assert_array_equal(p.get(), np.full((2, 2), 3, np.float32))


def test_the_fake_cublas_refuses_a_handle_off_the_capturing_stream_or_on_its_default_workspace():
    xp = strict_device.module(gpus=1)
    m = xp.asarray(np.ones((2, 2), np.float32))
    cuda_blas.matmul(xp, m, m)  # the handle bound to the null stream
    stream = xp.cuda.Stream(non_blocking=True)
    lib = cuda_blas.library(xp)
    handle = lib.handle()
    with stream:
        stream.begin_capture()
        with pytest.raises(RuntimeError, match="on a handle bound to stream .* while the current stream is"):
            lib.call("cublasSgemm_v2", handle, 0, 0, 2, 2, 2, lib.scalar(ctypes.c_float, 1), m.data.ptr, 2,
                     m.data.ptr, 2, lib.scalar(ctypes.c_float, 0), m.data.ptr, 2)
        lib.call("cublasSetStream_v2", handle, stream.ptr)  # without setting the workspace again
        with pytest.raises(RuntimeError, match="captured on cuBLAS's default workspace"):
            lib.call("cublasSgemm_v2", handle, 0, 0, 2, 2, 2, lib.scalar(ctypes.c_float, 1), m.data.ptr, 2,
                     m.data.ptr, 2, lib.scalar(ctypes.c_float, 0), m.data.ptr, 2)
        stream.end_capture()
