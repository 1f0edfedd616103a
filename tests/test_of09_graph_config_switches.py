"""GraphConfig.enable_multi_tensor_update / enable_fused_model_update_cast (OneFlow 0.9 graph_config.py:393-403):
kernel-merging switches that keep the numbers; they raised AttributeError here (test/graph/
test_multi_tensor_{sgd,adam}_update_with_cast.py). With them on, a training graph gives numpy's SGD numbers."""
import numpy as np
import pytest

import oneflow as flow


@pytest.mark.parametrize("switch", ["enable_multi_tensor_update", "enable_fused_model_update_cast"])
def test_switch_keeps_sgd_numbers(switch):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = flow.nn.Linear(3, 1, bias=False)
    with flow.no_grad():
        m.weight.fill_(1.0)
    opt = flow.optim.SGD(m.parameters(), lr=0.1)

    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)
            getattr(self.config, switch)(True)

        def build(self, x):
            loss = self.m(x).sum()
            loss.backward()
            return loss

    G()(flow.tensor(x))
    np.testing.assert_allclose(m.weight.numpy(), 1 - 0.1 * x.sum(0)[None, :], rtol=1e-6)
