"""`t.copy_(value)` inside nn.Graph.build (and `flow.normal(..., out=t)`, which writes through it): the copy is an op
of the job whose output `t` reads from then on, as any in-place op in build (`_global/inplace.py` rebind: OneFlow
0.9's lazy interpreter records the output as the tensor's new name; test/graph/test_graph_normal_inplace.py). It
read the lazy value and raised. Expected values: numpy written here."""
import numpy as np

import oneflow as flow


def test_copy_into_a_captured_and_a_lazy_tensor():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    captured = flow.zeros(2, 3)

    class G(flow.nn.Graph):
        def build(self, x):
            captured.copy_(x * 2)
            y = x + 1
            y.copy_(flow.ones(2, 3, dtype=flow.int64))  # (cast to y's dtype)
            return captured + 0, y

        def __init__(self):
            super().__init__()

    a, b = G()(flow.tensor(x))
    np.testing.assert_array_equal(a.numpy(), 2 * x)
    assert b.dtype == flow.float32
    np.testing.assert_array_equal(b.numpy(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(captured.numpy(), np.zeros((2, 3), np.float32))  # no write-back, as 0.9


def test_normal_with_out_in_build_returns_draws():
    data = flow.zeros(64, 64)

    class G(flow.nn.Graph):
        def build(self):
            flow.normal(size=data.shape, mean=0.0, std=1.0, out=data)
            return data

    out = G()().numpy()
    assert out.shape == (64, 64) and np.all(np.isfinite(out))
    assert abs(out.mean()) < 0.1 and 0.9 < out.std() < 1.1
