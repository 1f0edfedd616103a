"""OneFlow 0.9's Module.to / float / double / half (only floating parameters and buffers take a dtype; a
non-floating dtype is refused with its TypeError and words: python/oneflow/nn/modules/module.py, v0.9.0) and
`flow.get_rng_state()` being `flow.default_generator.get_state()` (python/oneflow/framework/generator.py)."""
import numpy as np
import pytest

import oneflow as flow


class _Mixed(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", flow.ones(2, 3))
        self.w = flow.nn.Parameter(flow.ones(2, 3))
        self.n = flow.nn.Parameter(flow.ones(2, 3).to(flow.int32), requires_grad=False)


@pytest.mark.parametrize("call, want", [
    (lambda m: m.to(flow.float64), flow.float64),
    (lambda m: m.to(dtype=flow.float16), flow.float16),
    (lambda m: m.to("cpu", flow.float64), flow.float64),
    (lambda m: m.to(flow.zeros(1, dtype=flow.float16)), flow.float16),
    (lambda m: m.to(tensor=flow.zeros(1, dtype=flow.float64)), flow.float64),
    (lambda m: m.double(), flow.float64),
    (lambda m: m.half(), flow.float16),
])
def test_only_floating_tensors_take_the_dtype(call, want):
    m = _Mixed()
    assert call(m) is m
    assert (m.buf.dtype, m.w.dtype, m.n.dtype) == (want, want, flow.int32)
    np.testing.assert_array_equal(m.n.numpy(), np.ones((2, 3), np.int32))
    np.testing.assert_array_equal(m.w.numpy(), np.ones((2, 3)))
    m.float()
    assert (m.buf.dtype, m.w.dtype, m.n.dtype) == (flow.float32, flow.float32, flow.int32)


def test_module_to_refuses():
    m = _Mixed()
    with pytest.raises(TypeError, match=r"^nn\.Module\.to only accepts floating point dtypes, but got desired "
                                        r"dtype=oneflow\.int64$"):
        m.to(flow.int64)
    with pytest.raises(ValueError, match=r"^Unsupported parameters in module\.to: 3\.5$"):
        m.to(3.5)
    assert m.to("cpu") is m and m.w.device == flow.device("cpu")


def test_rng_state_is_the_default_generators():
    flow.manual_seed(11)
    np.testing.assert_array_equal(flow.default_generator.get_state().numpy(), flow.get_rng_state().numpy())
    flow.randn(10, 10)
    state = flow.default_generator.get_state()
    np.testing.assert_array_equal(state.numpy(), flow.get_rng_state().numpy())
    a = flow.randn(5)
    flow.default_generator.set_state(state)
    np.testing.assert_array_equal(a.numpy(), flow.randn(5).numpy())
    g = flow.Generator()  # other generators keep their own 16 bytes
    g.manual_seed(3)
    assert tuple(g.get_state().shape) == (16,)
