"""What a compiled step no longer recomputes every call (benchmarks/bench_step_overhead.py times it): the CUDA
functions a launch runs, a convolution's or pooling's geometry, the learning rate of a step. Each memo must give
what the computation gives, and notice when its inputs change."""
import numpy as np
import pytest

import oneflow_compat as flow
import strict_device
from oneflow_compat.kernels import cuda_nn
from oneflow_compat.kernels import nn as nn_k


def test_a_launch_asks_the_module_for_its_function_once_per_device(monkeypatch):
    fake = strict_device.module()
    asked = []
    original = fake.RawModule.get_function

    def get_function(self, name):
        asked.append(name)
        return original(self, name)

    monkeypatch.setattr(fake.RawModule, "get_function", get_function)
    g = np.array([[1.0, -2.0, 3.0], [0.0, 5.0, -6.0]], np.float32)
    y = np.array([[1.0, 0.0, 2.0], [0.0, 0.5, 0.0]], np.float32)
    for _ in range(3):
        out = fake.asarray(g)
        cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, out, fake.asarray(y), 6)
        np.testing.assert_array_equal(out.get(), np.where(y > 0, g, 0))  # relu's gradient: g where y > 0
    assert asked == ["relu_mask_f32"]
    # the checks still run on every launch
    with pytest.raises(TypeError, match=r"^CUDA function relu_mask_f32: y must be a float32 array, got float64$"):
        cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, out, fake.asarray(y.astype(np.float64)), 6)
    with pytest.raises(KeyError):
        cuda_nn.MODULE.launch(fake, "no_such_function", 6, out)


def test_a_launch_on_a_machine_of_several_gpus_runs_on_the_current_one(monkeypatch):
    """One GPU visible: a launch asks the runtime for no device (always 0); several: each launch asks, and runs the
    function of the current GPU's module (its function asked once per GPU)."""
    fake = strict_device.module(gpus=2)
    strict_device.Launches.reset()
    asked = []
    original = fake.RawModule.get_function
    monkeypatch.setattr(fake.RawModule, "get_function",
                        lambda self, name: (asked.append(name), original(self, name))[1])
    g = fake.asarray(np.array([1.0, -1.0], np.float32))
    y = fake.asarray(np.array([1.0, 0.0], np.float32))
    for gpu in (0, 1, 1, 0):
        with fake.cuda.Device(gpu):
            cuda_nn.MODULE.launch(fake, "relu_mask_f32", 2, g, y, 2)
    assert asked == ["relu_mask_f32", "relu_mask_f32"]
    assert strict_device.Launches.by_device == {0: 2, 1: 2}
    one = strict_device.module(gpus=1)
    calls = []
    monkeypatch.setattr(one.cuda.runtime, "getDevice", lambda: calls.append(1) or 0)
    cuda_nn.MODULE.launch(one, "relu_mask_f32", 2, one.asarray(np.ones(2, np.float32)),
                          one.asarray(np.ones(2, np.float32)), 2)
    cuda_nn.MODULE.launch(one, "relu_mask_f32", 2, one.asarray(np.ones(2, np.float32)),
                          one.asarray(np.ones(2, np.float32)), 2)
    assert len(calls) <= 1  # (the first launch may ask once, making the module; later ones never)


def test_a_launch_checks_every_argument_on_its_fast_path_too():
    """The identity checks of the common case hand anything unusual to the full check, with its words."""
    fake = strict_device.module()
    x = fake.asarray(np.ones((2, 3), np.float32))
    cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, x, x, 6)  # (made, then the fast path below)
    with pytest.raises(ValueError, match=r"^CUDA function relu_mask_f32: y must be C-contiguous$"):
        cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, x, fake.asarray(np.ones((3, 2), np.float32)).T, 6)
    with pytest.raises(TypeError, match=r"^CUDA function relu_mask_f32: y must be a device array, got ndarray$"):
        cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, x, np.ones((2, 3), np.float32), 6)
    with pytest.raises(TypeError, match=r"^CUDA function relu_mask_f32: g must be a float32 array, got int32$"):
        cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, fake.asarray(np.ones(6, np.int32)), x, 6)
    with pytest.raises(TypeError, match=r"^CUDA function relu_mask_f32 takes 3 arguments \(g, y, n\), got 4$"):
        cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, x, x, 6, 6)
    # a dtype equal to the parameter's, another object (a non-canonical descriptor): launched, not refused
    other = np.dtype(np.float32).newbyteorder("=")
    z = fake.asarray(np.ones((2, 3), other))
    cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, z, x, 6)
    assert z.get().tolist() == [[1.0] * 3] * 2


def _calls_made_by(fn, files, n=10):
    """Python calls per call of fn made by the functions of `files` to anything but the fake device's
    functions (cProfile's counts: no timing)."""
    import cProfile
    import pstats

    fn()  # (made and planned: the memos filled)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        fn()
    profile.disable()
    made = 0
    for (callee_file, _, _), (_, _, _, _, callers) in pstats.Stats(profile).stats.items():
        if callee_file.endswith("strict_device.py"):
            continue  # (the fake's attribute reads: CuPy's are C attributes, no calls; its kernels: CuPy's own)
        for (caller_file, _, _), counts in callers.items():
            if any(caller_file.replace("\\", "/").endswith(f) for f in files):
                made += counts[1] if isinstance(counts, tuple) else counts
    return made / n


def test_a_launch_and_a_planned_product_make_few_python_calls():
    """The host work of a kernel launch and of a cuBLAS product, counted in Python calls (what the first GPU run's
    profile showed as ~29 µs per launch and ~34 µs per product): a launch with two arrays and a scalar at most 6
    Python calls (it was 14: the device asked of the runtime, the arguments' flags, per-argument checks), a product
    whose operand layouts were seen before at most 11 (its plan, the handle, the call: it was 32)."""
    from oneflow_compat.kernels import cuda_blas

    fake = strict_device.module(gpus=1)
    g, y = fake.asarray(np.ones(6, np.float32)), fake.asarray(np.ones(6, np.float32))
    launch = _calls_made_by(lambda: cuda_nn.MODULE.launch(fake, "relu_mask_f32", 6, g, y, 6),
                            ["kernels/cuda_source.py"])
    assert launch <= 6, launch
    a, b = fake.asarray(np.ones((5, 4), np.float32)), fake.asarray(np.ones((3, 4), np.float32)).T
    product = _calls_made_by(lambda: cuda_blas.matmul(fake, a, b), ["kernels/cuda_blas.py"])
    assert product <= 11, product
    np.testing.assert_array_equal(cuda_blas.matmul(fake, a, b).get(), np.full((5, 3), 4.0, np.float32))


def test_step_scalars_of_one_key_are_one_slot_computed_once_per_call():
    from oneflow_compat.backend.step_scalars import StepScalars

    fake = strict_device.module()
    scalars = StepScalars(fake)
    asked = []
    a = scalars.add(np.float32, lambda: asked.append("a") or 0.5, key=("rate", 1))
    b = scalars.add(np.float32, lambda: asked.append("b") or 0.25, key=("rate", 1))
    c = scalars.add(np.float64, lambda: asked.append("c") or 0.125, key=("rate", 1))  # another dtype: its own
    d = scalars.add(np.float32, lambda: asked.append("d") or 2.0)
    assert a is b and len(scalars.slots) == 3
    scalars.upload()
    assert asked == ["a", "c", "d"]
    assert (a.get().item(), c.get().item(), d.get().item()) == (0.5, 0.125, 2.0)


def test_a_lenet_step_uploads_one_learning_rate_for_all_its_updates(monkeypatch):
    """Every update of LeNet's one SGD reads the same rate: one slot (it was one per variable, 9 values computed on
    the host per call), and the dense weights' GEMM updates share their -lr·scale and 1 slots."""
    import test_gpu_step_budget as budget
    from oneflow_compat.framework import session as sess

    strict_device.install(monkeypatch, "gpu", allow_syncs=True)
    budget._steps(budget.lenet, 1)
    (plan_scalars,) = [c.exe.plan.scalars for c in sess.default_session().compiled.values()]
    (scalars,) = plan_scalars.by_device.values()
    assert [str(dtype) for _, _, dtype, _ in scalars.slots] == ["uint64", "float32", "float32", "float32", "float32"]
    assert sorted(key[0][0] for key in scalars.keyed) == ["device rate", "learning rate", "minus lr times", "one"]


def test_a_steps_results_come_down_into_pinned_memory_with_one_wait(monkeypatch):
    """to_host_all on CUDA: each array copied asynchronously into one pinned buffer, one wait for the stream, no
    packing kernel; the values (strided, 0-d, empty, mixed dtypes) are the device's, each in memory of its own."""
    from oneflow_compat.backend import devices

    fake = strict_device.install(monkeypatch, "gpu", allow_syncs=False, gpus=1)
    r = np.random.default_rng(0)
    host = [r.standard_normal((3, 4)).astype(np.float32), np.arange(6, dtype=np.int64).reshape(2, 3),
            np.array(7, np.int32), np.zeros((0, 2), np.float64), np.array([True, False])]
    dev = [fake.asarray(h) for h in host]
    dev[1] = fake.asarray(np.ascontiguousarray(host[1].T)).T  # strided on the device
    before_launches, before_syncs = strict_device.Launches.count, strict_device.Syncs.total()
    got = devices.to_host_all(dev + ["a host value"])
    assert strict_device.Syncs.total() - before_syncs == 1 and strict_device.Launches.count == before_launches
    for g, h in zip(got, host):
        np.testing.assert_array_equal(g, h)
        assert g.dtype == h.dtype and g.flags.owndata
    assert got[-1] == "a host value"
    again = devices.to_host_all([fake.asarray(np.ones(3, np.float32)), fake.asarray(np.zeros(2, np.int8))])
    np.testing.assert_array_equal(got[0], host[0])  # (the buffer reused: the earlier results are their own)
    assert again[0].tolist() == [1.0] * 3 and again[1].tolist() == [0, 0]


def test_the_fake_devices_asynchronous_copy_lands_at_the_streams_wait():
    fake = strict_device.module(gpus=1)
    memory = fake.cuda.alloc_pinned_memory(16)
    out = np.frombuffer(memory, np.float32, 4)
    x = fake.asarray(np.arange(4, dtype=np.float32))
    stream = fake.cuda.get_current_stream()
    syncs = strict_device.Syncs.total()
    x.get(stream=stream, out=out, blocking=False)
    x += 10  # after the copy in stream order: not what it copies
    assert out.tolist() == [0.0] * 4 and strict_device.Syncs.total() == syncs  # not landed, no wait
    stream.synchronize()
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0] and strict_device.Syncs.total() == syncs + 1


def _conv_reference(x, w, stride, pad):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,fchw->nf", patch, w)
    return out


def test_the_remembered_convolution_geometry_is_the_geometry_of_each_call():
    r = np.random.default_rng(0)
    x, w = r.standard_normal((2, 3, 7, 7)).astype(np.float32), r.standard_normal((4, 3, 3, 3)).astype(np.float32)
    for stride, pad in [(1, 1), (2, 1), (1, 0), (2, 1), (1, 1)]:  # repeated geometries come from the memo
        got = nn_k.conv2d(np, x, w, strides=stride, pads=((pad, pad), (pad, pad)))
        np.testing.assert_allclose(got, _conv_reference(x, w, stride, pad), rtol=1e-5, atol=1e-5)
    # lists (unhashable) are computed each time; a float stride is refused every time, though 1.0 == 1
    got = nn_k.conv2d(np, x, w, strides=[2, 2], pads=[[1, 1], [1, 1]])
    np.testing.assert_allclose(got, _conv_reference(x, w, 2, 1), rtol=1e-5, atol=1e-5)
    for _ in range(2):
        with pytest.raises(TypeError):
            nn_k.conv2d(np, x, w, strides=1.0)
    for _ in range(2):
        with pytest.raises(ValueError, match="pads must be non-negative"):
            nn_k.conv2d(np, x, w, pads=((-1, 0), (0, 0)))


def test_the_learning_rate_of_a_step_follows_every_change_of_its_scheduler():
    s = flow.optimizer.PiecewiseConstantScheduler([2, 4], [0.1, 0.01, 0.001])
    want = [np.float32(v).item() for v in (0.1, 0.1, 0.1, 0.01, 0.01, 0.001)]
    assert [s.lr_at(t) for t in range(6)] == want
    assert s.lr_at(3) == s.lr_at(3) == want[3]
    s.values[1] = 0.5  # in place
    assert s.lr_at(3) == 0.5
    s.values = [0.1, 0.25, 0.001]  # replaced
    assert s.lr_at(3) == 0.25
    w = flow.optimizer.PiecewiseConstantScheduler([], [0.1], warmup=flow.optimizer.warmup.linear(10, 0.0))
    first = w.lr_at(5)
    w.warmup.start_multiplier = 0.5  # the warmup's own fields count too
    assert w.lr_at(5) != first


class _Interval:
    def __init__(self, us):
        self.us = us

    def elapsed_us(self):
        return self.us


class _Event:
    def __init__(self, name, us):
        self.name, self.time_range = name, _Interval(us)


def test_the_gpu_check_reports_the_devices_busy_time_per_step():
    from oneflow_compat.tools import gpu_stages

    events = [_Event("Memcpy HtoD (Pinned -> Device)", 1.5), _Event("im2col_f32", 20.0),
              _Event("sgemm_128x64", 30.25), _Event("Memcpy DtoH (Device -> Pinned)", 2.0),
              _Event("Memset (Device)", 0.5), _Event("Memcpy DtoD (Device -> Device)", 1.0)]
    assert gpu_stages.count_device_events(events) == {"kernels": 2, "htod": 1, "dtoh": 1, "dtod": 1, "memset": 1,
                                                      "device_us": 55.2}


def test_the_gpu_check_tells_which_kernels_make_the_devices_time():
    from oneflow_compat.tools import gpu_check, gpu_stages

    events = [_Event("sgemm_128x64", 30.0), _Event("row_sums_f32", 5.0), _Event("sgemm_128x64", 34.0),
              _Event("Memcpy HtoD (Pinned -> Device)", 1.5), _Event("row_sums_f32", 7.0), _Event("sgemm_128x64", 2.0)]
    # two steps: per step, the longest first, with the time per launch
    assert gpu_stages.device_time_table(events, steps=2) == [["sgemm_128x64", 1.5, 33.0, 22.0],
                                                             ["row_sums_f32", 1.0, 6.0, 6.0],
                                                             ["Memcpy HtoD (Pinned -> Device)", 0.5, 0.8, 1.5]]
    results = {"lenet": {"gpu": {"ms": 2.0, "by_kernel": gpu_stages.device_time_table(events, steps=2)},
                         "torch_by_kernel": [["volta_sgemm", 2, 40.0, 20.0]],
                         "torch_cuda_eager_ms": 2.5, "torch_cuda_eager_fed_ms": 2.6,
                         "gpu_host_profile": {"profiled_ms_per_step": 3.1, "by_category": [
                             ["kernel launches (kernels/cuda_source.py)", 400.0, 25.0],
                             ["CuPy allocations", 50.5, 3.0]]}}}
    lines = gpu_check.headline({"models": {"results": results}})
    assert "0.80x torch eager (2.500 ms); 0.77x torch eager fed from the host (2.600 ms)" in lines[0]
    assert "lenet GPU host us/step by category (profiled 3.100 ms/step): kernel launches (kernels/cuda_source.py) " \
           "400 (25 calls), CuPy allocations 50 (3 calls)" in lines
    assert "lenet GPU device us/step by kernel: sgemm_128x64 x1.5 33.0; row_sums_f32 x1 6.0; Memcpy HtoD (Pinned -> " \
           "Device) x0.5 0.8" in lines
    assert "lenet torch device us/step by kernel: volta_sgemm x2 40.0" in lines


def test_the_host_profile_sums_its_rows_by_category():
    from oneflow_compat.tools import gpu_stages

    cat = gpu_stages.host_category
    assert cat("kernels/cuda_source.py:161(__call__)") == "kernel launches (kernels/cuda_source.py)"
    assert cat("kernels/cuda_blas.py:294(run)") == "cuBLAS products (kernels/cuda_blas.py)"
    assert cat("~:0(<method 'sum' of 'cupy._core.core._ndarray_base' objects>)") == "CuPy reductions"
    assert cat("site-packages/cupy/_creation/basic.py:15(empty)") == "CuPy allocations"
    assert cat("~:0(<built-in method cupy._core.core.array>)") == "uploads (host -> device)"
    assert cat("~:0(<method 'get' of 'cupy._core.core._ndarray_base' objects>)") == "downloads, syncs (device -> host)"
    assert cat("oneflow_compat/runtime/plan.py:158(step)") == "oneflow_compat/runtime"
    assert cat("~:0(<method 'get' of 'dict' objects>)") == "python, numpy, builtins"

    def step():
        _twice_busy()

    prof = gpu_stages.host_profile(step, 2)
    by = {c: (us, calls) for c, us, calls in prof["by_category"]}
    assert by["the fake device (tests/, a dry run)"][1] >= 2  # step and _twice_busy (this file), its generator


def _twice_busy():
    return sum(i * i for i in range(2000))


def test_the_gpu_checks_host_profile_names_the_functions_a_step_runs():
    from oneflow_compat.tools import gpu_stages

    def step():
        _twice_busy()
        _twice_busy()

    prof = gpu_stages.host_profile(step, 3)
    busy = [row for row in prof["top"] if row[0].endswith("(_twice_busy)")]
    assert len(busy) == 1 and busy[0][1] == 2.0 and busy[0][0].startswith("tests/test_step_overhead.py:")
    assert prof["profiled_ms_per_step"] > 0
