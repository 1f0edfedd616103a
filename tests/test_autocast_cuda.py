"""`flow.autocast("cuda")` on GPU tensors (issue 22): OneFlow 0.9's TensorAutoCastProcessor rules
(oneflow/core/functional/tensor_processor.cpp, auto_mixed_precision_lists.cpp @ v0.9.0) — white-list ops compute in
float16, gray/clear-list ops keep float16 only where every floating input has it, every other op computes in
float32 — on the fake device (tests/strict_device.py: CuPy's rules on numpy) and on the GPU; CPU tensors, and "cuda"
tensors where no GPU is usable, are left alone. References: numpy float16 written here."""
import numpy as np
import pytest

import oneflow_compat as flow
import strict_device
from oneflow_compat._global import autocast_mode
from oneflow_compat.backend import devices

F16, F32 = np.float16, np.float32
A = np.linspace(-1.5, 2.0, 12, dtype=F32).reshape(3, 4)
B = np.linspace(0.7, -1.1, 20, dtype=F32).reshape(4, 5)


@pytest.fixture
def gpu(monkeypatch):
    """"cuda" tensors on the suite's GPU where it runs on one, else on the fake device."""
    return strict_device.suite_gpu_or_fake(monkeypatch)


def _cuda(a, requires_grad=False):
    return flow.tensor(a, device="cuda", requires_grad=requires_grad)


def _f16(a):
    """What float32 data becomes once cast to float16."""
    return np.asarray(a, F32).astype(F16)


def test_white_list_ops_compute_in_float16(gpu):
    with flow.autocast("cuda"):
        y = flow.matmul(_cuda(A), _cuda(B))
        x = _cuda(np.linspace(-1, 1, 50, dtype=F32).reshape(1, 2, 5, 5))
        w = _cuda(np.linspace(0.5, -0.5, 36, dtype=F32).reshape(2, 2, 3, 3))
        c = flow.nn.functional.conv2d(x, w)
    assert y.dtype == flow.float16 and y.device.type == "cuda" and c.dtype == flow.float16
    want = (_f16(A).astype(F32) @ _f16(B).astype(F32)).astype(F16)  # float16 operands, float16 result
    np.testing.assert_allclose(y.numpy().astype(F32), want.astype(F32), rtol=2e-3, atol=1e-3)
    xs, ws = _f16(x.numpy()).astype(F32), _f16(w.numpy()).astype(F32)
    conv = np.zeros((1, 2, 3, 3), F32)
    for o in range(2):
        for i in range(3):
            for j in range(3):
                conv[0, o, i, j] = np.sum(xs[0, :, i:i + 3, j:j + 3] * ws[o])
    np.testing.assert_allclose(c.numpy().astype(F32), conv.astype(F16).astype(F32), rtol=2e-3, atol=2e-3)


def test_gray_and_clear_ops_keep_float16_only_where_every_input_has_it(gpu):
    with flow.autocast("cuda"):
        y = flow.matmul(_cuda(A), _cuda(B))  # float16
        same = y + y
        mixed = y + _cuda(np.ones((3, 5), F32))
        relu, soft, mean = flow.relu(y), flow.softmax(y, dim=1), y.mean()
        reshaped = y.reshape(5, 3)
    y16 = y.numpy()
    assert y16.dtype == F16
    assert (same.dtype, relu.dtype, soft.dtype, mean.dtype, reshaped.dtype) == (flow.float16,) * 5
    assert mixed.dtype == flow.float32  # a float32 input: computed in float32, the float16 one cast up
    np.testing.assert_array_equal(same.numpy(), y16 + y16)
    np.testing.assert_array_equal(mixed.numpy(), y16.astype(F32) + 1)
    np.testing.assert_array_equal(relu.numpy(), np.maximum(y16, F16(0)))
    e = np.exp(y16.astype(F32) - y16.astype(F32).max(1, keepdims=True))
    np.testing.assert_allclose(soft.numpy().astype(F32), e / e.sum(1, keepdims=True), rtol=2e-3, atol=1e-3)


def test_ops_on_no_list_compute_in_float32(gpu):
    h = flow.tensor(A.astype(F16), device="cuda")
    assert flow.exp(h).dtype == flow.float16  # outside a scope: the input's dtype
    with flow.autocast("cuda"):
        e, s = flow.exp(h), flow.sigmoid(h)  # float16 inputs cast up: computed in float32
    assert (e.dtype, s.dtype) == (flow.float32, flow.float32)
    h32 = A.astype(F16).astype(F32)
    np.testing.assert_allclose(e.numpy(), np.exp(h32), rtol=1e-5)
    np.testing.assert_allclose(s.numpy(), 1 / (1 + np.exp(-h32)), rtol=1e-5)


def test_linear_is_float16_and_float32_parameters_get_float32_gradients(gpu):
    flow.manual_seed(0)
    m = flow.nn.Linear(4, 5).to("cuda")
    x = _cuda(A)
    with flow.autocast("cuda"):
        out = m(x)  # 0.9: matmul (white), then `res += bias` promoting the bias to float16
    assert out.dtype == flow.float16
    w, b = m.weight.numpy(), m.bias.numpy()
    want = (_f16(A).astype(F32) @ _f16(w).astype(F32).T).astype(F16) + _f16(b)
    np.testing.assert_allclose(out.numpy().astype(F32), want.astype(F32), rtol=2e-3, atol=2e-3)
    out.sum().backward()  # the casts are differentiable: gradients come back in the parameters' dtype
    assert m.weight.grad.dtype == flow.float32 and m.bias.grad.dtype == flow.float32
    np.testing.assert_allclose(m.weight.grad.numpy(), np.tile(_f16(A).astype(F32).sum(0), (5, 1)), rtol=1e-3)
    np.testing.assert_array_equal(m.bias.grad.numpy(), np.full(5, 3, F32))


def test_global_tensors_on_a_cuda_placement_are_cast(gpu):
    pl = flow.placement("cuda", [0])
    a = flow.tensor(A).to_global(placement=pl, sbp=flow.sbp.broadcast)
    b = flow.tensor(B).to_global(placement=pl, sbp=flow.sbp.broadcast)
    with flow.autocast("cuda"):
        y = flow.matmul(a, b)
    assert y.dtype == flow.float16 and y.placement == pl
    want = (_f16(A).astype(F32) @ _f16(B).astype(F32)).astype(F16)
    np.testing.assert_allclose(y.numpy().astype(F32), want.astype(F32), rtol=2e-3, atol=1e-3)


def test_scopes_set_and_restore_the_dtype_and_the_switch(gpu):
    with flow.autocast("cuda", dtype=flow.bfloat16):
        assert flow.get_autocast_gpu_dtype() == flow.bfloat16
        assert flow.matmul(_cuda(A), _cuda(B)).dtype == flow.bfloat16
        with flow.autocast("cuda", enabled=False):
            assert not flow.is_autocast_enabled()
            assert flow.matmul(_cuda(A), _cuda(B)).dtype == flow.float32
        assert flow.is_autocast_enabled()
    assert flow.get_autocast_gpu_dtype() == flow.float16 and not flow.is_autocast_enabled()
    assert flow.matmul(_cuda(A), _cuda(B)).dtype == flow.float32


def test_cpu_tensors_are_left_alone(gpu):
    with flow.autocast("cuda"):
        assert flow.matmul(flow.tensor(A), flow.tensor(B)).dtype == flow.float32  # a CPU tensor: no cast
        assert flow.exp(flow.tensor(A, dtype=flow.float16)).dtype == flow.float16  # nor cast up


def test_cuda_tensors_without_a_usable_gpu_run_on_the_cpu_and_are_left_alone(monkeypatch):
    monkeypatch.setenv("ONEFLOW_COMPAT_DEVICE", "cpu")
    monkeypatch.setattr(devices, "mode", lambda: "cpu")  # (the fake device's plugin fixes the switch to "gpu")
    flow.clear_default_session()
    with flow.autocast("cuda"):
        y = flow.matmul(_cuda(A), _cuda(B))
    assert y.dtype == flow.float32
    np.testing.assert_allclose(y.numpy(), A @ B, rtol=1e-6)


def test_the_colours_are_oneflows():
    assert [autocast_mode.color(t) for t in ("matmul", "broadcast_matmul", "conv2d", "conv2d_grad_input", "prelu",
                                             "matmul_bias_act")] == ["white"] * 6
    assert [autocast_mode.color(t) for t in ("add", "multiply", "scalar_mul", "softmax", "layer_norm",
                                             "reduce_mean", "avg_pool2d")] == ["gray"] * 7
    assert [autocast_mode.color(t) for t in ("relu", "reshape", "flatten", "expand_dims", "max_pool2d", "gather",
                                             "concat")] == ["clear"] * 7
    # 0.9 lists conv2d only: conv1d/conv3d, like exp, sigmoid and cast, are on no list (float32)
    assert [autocast_mode.color(t) for t in ("conv1d", "conv3d", "exp", "sigmoid", "cast")] == ["black"] * 5
