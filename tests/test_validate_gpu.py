"""`validate --device gpu`: every signature's device pieces computed with the GPU's array module (here the strict fake
device of tests/strict_device.py, whose raw kernels run on their twins) against the one-device numpy reference,
and each op's one-device GPU run checked against numpy on its own row; refused with the reason where CUDA is not
usable."""
import argparse
import io
import re

import pytest

import strict_device
from oneflow_compat.tools import validate

DEVICE_KERNELS = ["conv2d", "conv2d_bias_act", "conv2d_grad_input", "conv2d_grad_weight", "max_pool2d",
                  "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad", "matmul_bias_act", "matmul_relu_grad",
                  "sparse_softmax_cross_entropy", "sparse_softmax_cross_entropy_and_grad", "dropout", "gather",
                  "batch_gather", "one_hot", "dim_gather", "relu", "bias_add"]


def _options(**kw):
    return argparse.Namespace(**dict(dict(op_types=DEVICE_KERNELS, failures_only=False, devices=[2, 3],
                                          device="gpu"), **kw))


def test_device_kernels_pass_against_numpy_on_every_signature(monkeypatch):
    strict_device.install(monkeypatch, "gpu", allow_syncs=True)
    out = io.StringIO()
    assert validate.run(_options(), out) == 0, out.getvalue()
    text = out.getvalue()
    rows = [line for line in text.splitlines() if "1 device on the GPU" in line]
    assert len({line.split()[0] for line in rows}) == len(DEVICE_KERNELS)  # each op's own GPU row
    assert all(line.rstrip().endswith("OK") for line in rows)
    assert text.splitlines()[-1].endswith(", 0 failed")
    assert strict_device.Launches.by_name.get("raw:im2col_f64", 0) > 0  # the device kernels ran (float64 rows)


def test_a_wrong_device_kernel_is_reported(monkeypatch):
    from oneflow_compat.kernels import cuda_nn

    strict_device.install(monkeypatch, "gpu", allow_syncs=True)
    wrong = dict(cuda_nn.MODULE.twins)
    for name in ("max_pool_f32", "max_pool_f64"):
        wrong[name] = lambda x, out, *rest: out.__setitem__(Ellipsis, 0)
    monkeypatch.setattr(cuda_nn.MODULE, "twins", wrong)
    out = io.StringIO()
    assert validate.run(_options(op_types=["max_pool2d"], failures_only=True), out) == 1
    assert re.search(r"1 device on the GPU +1 +FAIL  output 0 differs from the host's", out.getvalue())


def test_gpu_device_needs_cuda(monkeypatch, capsys, request):
    if request.config.pluginmanager.has_plugin("strict_device"):
        pytest.skip("the fake device's plugin reports CUDA usable whatever ONEFLOW_COMPAT_DEVICE says")
    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "cpu")
    assert validate.run(_options()) == 2
    assert "validate --device gpu: ONEFLOW_COMPAT_DEVICE=gpu, but CUDA is not usable: ONEFLOW_COMPAT_DEVICE=cpu" \
        in capsys.readouterr().err
