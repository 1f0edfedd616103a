"""Gradients read inside nn.Graph.build on 2 ranks (tests/test_graph_retain_grad.py runs this under `mpiexec -n 2`):
data parallel (input split(0), weight broadcast) and model parallel (weight split(0)); the returned `x.grad`,
`h.grad` and `weight.grad` equal the numpy gradients whatever their SBP. Rank 0 prints `OK <case> <sbps>`."""
import numpy as np

import oneflow_compat as flow
from oneflow_compat import nn

P = flow.placement("cpu", ranks=[0, 1])
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
rng = np.random.RandomState(1)
x = rng.randn(4, 3).astype(np.float32)
y = rng.randn(4, 2).astype(np.float32)
w = rng.randn(2, 3).astype(np.float32)
h = x @ w.T
dh = (1 - np.tanh(h) ** 2) * y
ref = {"x": dh @ w, "h": dh, "w": dh.T @ x}


class G(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.0))

    def build(self, x, y):
        x.retain_grad()
        h = self.model(x)
        h.retain_grad()
        (flow.tanh(h) * y).sum().backward()
        return x.grad, h.grad, self.model.weight.grad


for case, x_sbp, w_sbp in (("data parallel", S0, B), ("model parallel", B, S0)):
    model = nn.Linear(3, 2, bias=False).to_global(P, B)  # (a local tensor made global S(0) would be one shard)
    with flow.no_grad():
        model.weight.copy_(flow.tensor(w).to_global(P, B))
    model.to_global(P, w_sbp)
    gx = flow.tensor(x, requires_grad=True).to_global(P, B).to_global(P, x_sbp)
    gy = flow.tensor(y).to_global(P, B).to_global(P, x_sbp)
    got = dict(zip(("x", "h", "w"), G(model)(gx, gy)))
    for k, t in got.items():
        np.testing.assert_allclose(t.numpy(), ref[k], rtol=1e-5, atol=1e-6, err_msg="%s %s" % (case, k))
    if flow.env.get_rank() == 0:
        print("OK %s %s" % (case, " ".join("%s=%s" % (k, tuple(t.sbp)) for k, t in got.items())), flush=True)
