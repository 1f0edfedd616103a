"""nn.Graph with ZeRO on every rank of the world (tests/test_graph_zero_mpi.py runs it under `mpiexec -n 2`): an
MLP trained with AdamW for 4 steps without ZeRO and with each stage; rank 0 prints one JSON line per run with its
losses, final parameters, and the local shapes the ranks hold of the optimizer states and parameters, and also the
bytes `explain` reports for each graph's collectives."""
import json
import sys

import numpy as np

import oneflow_compat as flow
from oneflow_compat import nn
from oneflow_compat.runtime import global_eager

world = global_eager.world_size()
P = flow.placement("cpu", list(range(world)))
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
rng = np.random.RandomState(3)
INIT = {k: (rng.randn(*s) * 0.3).astype(np.float32) for k, s in
        [("0.weight", (32, 6)), ("0.bias", (32,)), ("2.weight", (4, 32)), ("2.bias", (4,))]}
DATA = [(rng.randn(12, 6).astype(np.float32), rng.randint(0, 4, (12,)).astype(np.int64)) for _ in range(4)]


def run(zero):
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 4))
    model.load_state_dict({k: flow.tensor(v) for k, v in INIT.items()})
    model.to_global(placement=P, sbp=B)
    opt = flow.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.1)
    loss_fn = nn.CrossEntropyLoss()

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            if zero:
                self.config.enable_zero(True, stage=zero, shard_min_size=16)

        def build(self, x, y):
            loss = loss_fn(self.model(x), y)
            loss.backward()
            return loss

    graph = Train()
    losses = []
    for x, y in DATA:
        losses.append(float(graph(flow.tensor(x, placement=P, sbp=S0), flow.tensor(y, placement=P, sbp=S0)).numpy()))
    states = {k: list(v.to_local().shape) for k, v in graph.state_dict().items()
              if isinstance(v, flow.Tensor) and k.startswith("model.")}
    params = [p.numpy().tolist() for p in model.parameters()]
    local = [list(p.to_local().shape) for p in model.parameters()]
    collectives = sorted([b["collective"], b["bytes"]] for b in graph.explain_report().boxing
                         if b["collective"] != "local-slice")
    return dict(zero=zero, losses=losses, params=params, states=states, local=local, collectives=collectives)


for stage in [0, 1, 2, 3]:
    out = run(stage)
    if global_eager.rank() == 0:
        print("RUN " + json.dumps(out))
        sys.stdout.flush()
