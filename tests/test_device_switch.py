"""ONEFLOW_COMPAT_DEVICE=auto|cpu|gpu (backend/devices.py) and the logical -> physical GPU map (backend/gpu_map.py).

`cpu` never imports CuPy; `auto` falls back to CPU devices with a notice naming why CUDA is not usable; `gpu` makes
every placement and device count a GPU one and an unusable CUDA an error carrying the failed call's exception.
"""
import logging
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
import strict_device
from oneflow_compat.backend import devices, gpu_map

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def unprobed(monkeypatch):
    """CUDA not probed yet in this process, and no fallback notice given yet."""
    monkeypatch.setattr(devices, "_CUDA", None)
    monkeypatch.setattr(devices, "_CUDA_REASON", None)
    monkeypatch.setattr(devices, "_NOTICED", False)


def _broken_cupy(error):
    """A module standing for a CuPy whose driver call fails with `error`."""
    def fail():
        raise error
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=fail)))


def _identity_job():
    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
        with flow.scope.placement("gpu", "0:0"):
            return flow.math.relu(x)
    return job


# --- the variable ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, mode", [(None, "auto"), ("", "auto"), ("auto", "auto"), ("cpu", "cpu"),
                                         ("gpu", "gpu"), (" GPU ", "gpu")])
def test_mode_values(monkeypatch, value, mode):
    if value is None:
        monkeypatch.delenv("ONEFLOW_COMPAT_DEVICE", raising=False)
    else:
        monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", value)
    assert devices.mode() == mode


@pytest.mark.parametrize("value", ["cuda", "tpu", "1"])
def test_invalid_mode_names_the_variable_and_the_allowed_values(monkeypatch, value):
    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", value)
    message = "ONEFLOW_COMPAT_DEVICE=%r: expected one of auto, cpu, gpu" % value
    with pytest.raises(ValueError) as e:
        devices.resolve_tag("gpu")
    assert str(e.value) == message
    with pytest.raises(ValueError, match="expected one of auto, cpu, gpu"):
        _identity_job()(np.ones((2, 3), np.float32))


# --- cpu ------------------------------------------------------------------------------------------------------
def test_cpu_mode_never_imports_cupy(tmp_path):
    # a `cupy` that records its import: the job, flow.cuda and a global "cuda" tensor must not load it
    (tmp_path / "cupy.py").write_text("open(%r, 'w').close()\nraise ImportError('imported')\n"
                                      % str(tmp_path / "imported"))
    script = """
import numpy as np, sys
import oneflow_compat as flow
import oneflow_compat.typing as tp
flow.config.gpu_device_num(2)

@flow.global_function()
def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
    with flow.scope.placement("gpu", "0:0-1"):
        return flow.math.relu(x)

out = job(-np.ones((2, 3), np.float32))
assert float(out.sum()) == 0.0
assert flow.cuda.is_available() is False and flow.cuda.device_count() == 0
flow.cuda.synchronize()
print("cupy" in sys.modules)
"""
    env = dict(os.environ, ONEFLOW_COMPAT_DEVICE="cpu", PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "False\n"
    assert not (tmp_path / "imported").exists()
    assert result.stderr.splitlines() == [
        "oneflow_compat: no usable CUDA device (ONEFLOW_COMPAT_DEVICE=cpu): flow.config.gpu_device_num(2) runs 2 CPU "
        "devices instead"]


def test_cpu_mode_ignores_a_usable_cuda(monkeypatch):
    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "cpu")
    monkeypatch.setattr(devices, "_CUDA", True)  # as if a GPU were there
    assert devices.cuda_usable() is False
    assert devices.resolve_tag("gpu") == "cpu"
    assert devices.unusable_reason() == "ONEFLOW_COMPAT_DEVICE=cpu"


# --- auto -----------------------------------------------------------------------------------------------------
def test_auto_fallback_notice_names_the_failed_import(monkeypatch, unprobed, caplog):
    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "auto")
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` fails with ModuleNotFoundError
    with caplog.at_level(logging.WARNING, logger="oneflow_compat"):
        assert devices.resolve_tag("gpu") == "cpu"
        assert devices.resolve_tag("gpu") == "cpu"
    assert [r.getMessage() for r in caplog.records if r.name == "oneflow_compat"] == [
        "no usable CUDA device (CuPy is not installed; pip install 'oneflow_compat[gpu]' brings it): \"gpu\" "
        "placements run on CPU devices"]
    assert flow.cuda.is_available() is False


def test_auto_fallback_notice_names_the_failed_driver_call(monkeypatch, unprobed, caplog):
    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "auto")
    monkeypatch.setitem(sys.modules, "cupy", _broken_cupy(RuntimeError("cudaErrorInsufficientDriver: CUDA driver "
                                                                         "version is insufficient")))
    with caplog.at_level(logging.WARNING, logger="oneflow_compat"):
        out = _identity_job()(-np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(out, np.zeros((2, 3), np.float32))
    assert [r.getMessage() for r in caplog.records if r.name == "oneflow_compat"] == [
        "no usable CUDA device (CUDA is not usable through CuPy: RuntimeError: cudaErrorInsufficientDriver: "
        "CUDA driver version is insufficient): \"gpu\" placements run on CPU devices"]


def test_auto_keeps_cpu_placements_on_the_host_where_cuda_is_usable(monkeypatch):
    strict_device.install(monkeypatch, "auto")
    flow.config.cpu_device_num(2)

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((4, 3))) -> tp.Numpy:
        with flow.scope.placement("cpu", "0:0-1"):
            return flow.math.relu(x)

    np.testing.assert_array_equal(job(-np.ones((4, 3), np.float32)), np.zeros((4, 3), np.float32))
    assert sess_default_placement().device_tag == "gpu"  # a GPU machine's default: gpu_device_num 1


def sess_default_placement():
    from oneflow_compat.framework import session as sess
    from oneflow_compat.framework import trace

    return trace.default_placement(sess.default_session(), None)


# --- gpu ------------------------------------------------------------------------------------------------------
def test_gpu_mode_without_cuda_is_an_error_carrying_the_reason(tmp_path):
    (tmp_path / "cupy.py").write_text("raise ImportError('libcudart.so.13: cannot open shared object file')\n")
    script = """
import numpy as np
import oneflow_compat as flow
import oneflow_compat.typing as tp

@flow.global_function()
def job(x: tp.Numpy.Placeholder((2, 3))) -> tp.Numpy:
    return flow.math.relu(x)

print("is_available", flow.cuda.is_available())
job(np.ones((2, 3), np.float32))
"""
    env = dict(os.environ, ONEFLOW_COMPAT_DEVICE="gpu", PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert result.stdout == "is_available False\n"
    assert result.stderr.rstrip().splitlines()[-1] == (
        "oneflow_compat.backend.devices.CudaUnavailableError: ONEFLOW_COMPAT_DEVICE=gpu, but CUDA is not usable: "
        "CuPy could not be imported: ImportError: libcudart.so.13: cannot open shared object file")


def test_gpu_mode_puts_every_placement_and_device_count_on_the_gpu(monkeypatch):
    from oneflow_compat.framework import session as sess
    from oneflow_compat.runtime.plan import Plan

    strict_device.install(monkeypatch, "gpu")
    monkeypatch.setattr(Plan, "release", False)
    flow.config.cpu_device_num(3)  # three logical devices on the GPU

    @flow.global_function()
    def job(x: tp.Numpy.Placeholder((6, 2))) -> tp.Numpy:
        y = flow.math.relu(x)  # default placement: 3 devices
        with flow.scope.placement("cpu", "0:0-1"):
            return y * 2.0

    x = np.arange(-6, 6, dtype=np.float32).reshape(6, 2)
    np.testing.assert_array_equal(job(x), np.maximum(x, 0) * 2)
    placements = {op.placement for op in sess.default_session().jobs["job"].ops}
    assert {p.device_tag for p in placements} == {"gpu"}
    assert {p.requested_tag for p in placements} == {"gpu", "cpu"}  # what the script asked stays known
    assert sorted(p.parallel_num for p in placements) == [2, 3]
    compiled = sess.default_session().compiled["job"]
    held = [r for r in compiled.plan.regs if r is not None and getattr(r, "dtype", None) != object]
    assert held and all(isinstance(r, strict_device.StrictArray) for r in held)
    assert flow.cuda.is_available() is True


def test_gpu_mode_global_cpu_placement_runs_on_the_gpu(monkeypatch):
    strict_device.install(monkeypatch, "gpu")
    x = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), placement=flow.placement("cpu", [0]),
                    sbp=flow.sbp.broadcast)
    y = (x * 2).sum()
    assert isinstance(y._value.pieces[0], strict_device.StrictArray)
    assert float(y.numpy()) == 30.0


# --- logical -> physical GPU ----------------------------------------------------------------------------------
@pytest.mark.parametrize("device, local_rank, per_process, gpus, expected", [
    (0, 0, 1, 8, 0), (0, 3, 1, 8, 3), (1, 1, 2, 8, 3), (3, 1, 4, 8, 7),
    (2, 0, 4, 1, 0),  # four logical devices share the only GPU
    (1, 2, 2, 4, 1),  # slot 5 wraps around four GPUs
    (0, 4, 1, 2, 0)])
def test_physical_gpu_rule(device, local_rank, per_process, gpus, expected):
    assert gpu_map.physical_gpu(device, local_rank, per_process, gpus) == expected


def test_physical_gpu_override():
    slots = gpu_map.parse_gpu_map(" 3, 2,1,0 ", 4)
    assert slots == [3, 2, 1, 0]
    assert [gpu_map.physical_gpu(d, r, 2, 4, slots) for r in (0, 1) for d in (0, 1)] == [3, 2, 1, 0]
    assert gpu_map.parse_gpu_map("", 4) is None and gpu_map.parse_gpu_map(None, 4) is None
    with pytest.raises(ValueError) as e:
        gpu_map.physical_gpu(0, 2, 2, 4, slots)
    assert str(e.value) == ("ONEFLOW_COMPAT_GPU_MAP lists 4 GPU(s), but logical device 0 of local rank 2 is slot 4 "
                            "(2 device(s) per process)")


@pytest.mark.parametrize("text, message", [
    ("0,a", "ONEFLOW_COMPAT_GPU_MAP='0,a': expected comma-separated GPU numbers such as '1,0', got 'a'"),
    ("0,,1", "ONEFLOW_COMPAT_GPU_MAP='0,,1': expected comma-separated GPU numbers such as '1,0', got ''"),
    ("-1", "ONEFLOW_COMPAT_GPU_MAP='-1': expected comma-separated GPU numbers such as '1,0', got '-1'"),
    ("0,2", "ONEFLOW_COMPAT_GPU_MAP='0,2' names GPU 2, but this host has 2 GPU(s)")])
def test_bad_gpu_map_is_an_error_naming_the_variable(text, message):
    with pytest.raises(ValueError) as e:
        gpu_map.parse_gpu_map(text, 2)
    assert str(e.value) == message


def test_physical_gpu_argument_errors():
    with pytest.raises(ValueError, match="no GPU to map logical device 0 to"):
        gpu_map.physical_gpu(0, 0, 1, 0)
    with pytest.raises(ValueError, match=r"logical device 2 outside the 2 device\(s\) of a process"):
        gpu_map.physical_gpu(2, 0, 2, 4)
