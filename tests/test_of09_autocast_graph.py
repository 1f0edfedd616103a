"""`flow.autocast("cuda")` around an nn.Graph: its build is traced with autocast on, as in OneFlow 0.9.

OneFlow v0.9.0: the autocast state is per thread (core/framework/autocast.cpp) and the functional
TensorAutoCastProcessor checks it alone, not the lazy mode (core/functional/tensor_processor.cpp:182-243), so a graph
built and called inside a scope opened eagerly traces white-list ops in float16 (test/tensor/test_autocast.py
test_autocast_graph: a float16 Linear given float32 input returns float16). A scope opened inside build disables
itself (python/oneflow/amp/autocast_mode.py:176-180), and CPU autocast is disabled everywhere (:171-175).
Run on the fake device (tests/strict_device.py) or the suite's GPU; references in numpy float16.
"""
import numpy as np
import pytest

import oneflow_compat as flow
import strict_device

F16, F32 = np.float16, np.float32


@pytest.fixture
def gpu(monkeypatch):
    return strict_device.suite_gpu_or_fake(monkeypatch)


def _linear_graph():
    class LinearGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.linear = flow.nn.Linear(3, 4, bias=False).cuda().half()

        def build(self, x):
            return self.linear(x)

    return LinearGraph()


def test_graph_built_inside_autocast_computes_white_ops_in_float16(gpu):
    x_np = np.linspace(-1.0, 1.0, 9, dtype=F32).reshape(3, 3)
    x = flow.tensor(x_np, device="cuda")
    with flow.autocast(device_type="cuda"):
        graph = _linear_graph()
        y = graph(x)
        assert y.dtype == flow.float16  # OneFlow 0.9's test_autocast_graph assertion
    w = graph.linear.weight.numpy()
    assert w.dtype == F16
    want = (x_np.astype(F16).astype(F32) @ w.astype(F32).T).astype(F16)
    np.testing.assert_allclose(y.numpy().astype(F32), want.astype(F32), rtol=2e-3, atol=1e-3)
    again = graph(x)  # the compiled graph keeps its casts after the scope
    assert again.dtype == flow.float16
    np.testing.assert_array_equal(again.numpy(), y.numpy())


def test_graph_autocast_gray_ops_and_black_ops(gpu):
    a = np.linspace(-1.5, 2.0, 12, dtype=F32).reshape(3, 4)
    b = np.linspace(0.7, -1.1, 20, dtype=F32).reshape(4, 5)

    class G(flow.nn.Graph):
        def build(self, x, y):
            m = flow.matmul(x, y)  # white: float16
            return m, m + m, m + flow.ones(3, 5, device="cuda"), flow.exp(m)  # gray: f16 / f32, black: f32

    xa, yb = flow.tensor(a, device="cuda"), flow.tensor(b, device="cuda")
    with flow.autocast("cuda"):
        m, same, mixed, ex = G()(xa, yb)
    assert (m.dtype, same.dtype, mixed.dtype, ex.dtype) == (flow.float16, flow.float16, flow.float32, flow.float32)
    m16 = (a.astype(F16).astype(F32) @ b.astype(F16).astype(F32)).astype(F16)
    np.testing.assert_allclose(m.numpy().astype(F32), m16.astype(F32), rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(ex.numpy(), np.exp(m16.astype(F32)), rtol=1e-5)


def test_graph_without_autocast_or_cpu_tensors_is_not_cast(gpu):
    x = flow.tensor(np.ones((2, 3), F32), device="cuda")
    w = flow.tensor(np.ones((3, 4), F32), device="cuda")

    class G(flow.nn.Graph):
        def build(self, x, w):
            return flow.matmul(x, w)

    assert G()(x, w).dtype == flow.float32  # no scope
    with flow.autocast("cuda"):
        cpu = G()(flow.ones(2, 3), flow.ones(3, 4))  # CPU tensors: 0.9 casts only the scope's device type
    assert cpu.dtype == flow.float32


def test_autocast_opened_inside_build_disables_itself(gpu):
    x = flow.tensor(np.ones((2, 3), F32), device="cuda")
    w = flow.tensor(np.ones((3, 4), F32), device="cuda")

    class G(flow.nn.Graph):
        def build(self, x, w):
            with flow.autocast("cuda"):
                return flow.matmul(x, w)

    with pytest.warns(UserWarning, match="^Autocast is not supported for lazy mode. Disabling autocast.$"):
        y = G()(x, w)
    assert y.dtype == flow.float32
