"""nn.Graph training on 2 ranks equals eager training on one device (tests/test_graph.py runs this under
`mpiexec -n 2`).

* Pipeline never changes the numbers: seed 004's model (the docs' MNIST MLP cut into two stages on ranks [0] and
  [1], SGD lr=0.001, batch 16) trained 20 graph steps, for each stage spelling and gradient accumulation steps,
  against the same model trained eagerly with the full batch as LOCAL tensors (each process is then one device
  on its own): per-step mean loss and final parameters. Rank 0 prints `OK <spelling> acc=<n> …` per
  configuration, and the plan of the first graph (`flow.explain(graph)`).
* Data parallelism: each rank feeds its OWN half of the batch (local -> global split(0)), weights broadcast with
  momentum SGD and accumulation 2 (micro-batches cut per local piece): losses, outputs (packed back in order) and
  parameters equal the full-batch eager run; the output stays distributed (each rank's piece is its half).
"""
import sys

import numpy as np

import oneflow_compat as flow
from oneflow_compat import nn

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
BATCH = 16
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[1])
B = flow.sbp.broadcast


class Front(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear0 = nn.Linear(28 * 28, 512)
        self.relu0 = nn.ReLU()

    def forward(self, x):
        return self.relu0(self.linear0(self.flatten(x)))


class Back(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(512, 512)
        self.relu1 = nn.ReLU()
        self.linear2 = nn.Linear(512, 10)
        self.relu2 = nn.ReLU()

    def forward(self, x):
        return self.relu2(self.linear2(self.relu1(self.linear1(x))))


class TwoStages(nn.Module):
    def __init__(self, placed):
        super().__init__()
        self.m_stage0 = Front()
        self.m_stage1 = Back()
        self.placed = placed
        if placed:
            self.m_stage0.to_consistent(placement=P0, sbp=B)
            self.m_stage1.to_consistent(placement=P1, sbp=B)

    def forward(self, x):
        h = self.m_stage0(x)
        if self.placed:
            h = h.to_consistent(placement=P1, sbp=B)
        return self.m_stage1(h)


def data():
    x = flow.randn(BATCH, 1, 28, 28)
    y = flow.randint(0, 10, (BATCH,))
    return x, y


def eager_reference():
    flow.manual_seed(0)
    model = TwoStages(placed=False)
    sgd = flow.optim.SGD(model.parameters(), lr=0.001)
    loss_fn = nn.CrossEntropyLoss()
    x, y = data()
    losses = []
    for _ in range(STEPS):
        loss = loss_fn(model(x), y)
        loss.backward()
        sgd.step()
        sgd.zero_grad()
        losses.append(float(loss.numpy()))
    return losses, [p.numpy().copy() for p in model.parameters()]


GRAPHS = []


def graph_run(spelling, acc):
    flow.manual_seed(0)
    model = TwoStages(placed=True)
    sgd = flow.optim.SGD(model.parameters(), lr=0.001)

    class PipelineGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            if spelling == "stage_id":
                self.model.m_stage0.config.stage_id = 0
                self.model.m_stage1.config.stage_id = 1
            elif spelling == "none":
                pass  # no stages: micro-batch after micro-batch
            elif spelling == "set_stage":
                self.model.m_stage0.config.set_stage(0, P0)
                self.model.m_stage1.config.set_stage(1, P1)
            else:
                self.model.m_stage0.to(nn.graph.GraphModule).set_stage(stage_id=0, placement=P0)
                self.model.m_stage1.to(nn.graph.GraphModule).set_stage(stage_id=1, placement=P1)
            self.loss_fn = nn.CrossEntropyLoss()
            self.config.set_gradient_accumulation_steps(acc)
            self.add_optimizer(sgd)

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss

    graph = PipelineGraph()
    GRAPHS.append(graph)
    x, y = data()
    x, y = x.to_consistent(P0, [B]), y.to_consistent(P1, [B])
    losses = []
    for _ in range(STEPS):
        loss = graph(x, y)
        local = loss.to_local()
        expected = (acc,) if acc > 1 else ()
        if flow.env.get_rank() == 1:
            assert tuple(local.shape) == expected, (local.shape, expected)
        else:
            assert tuple(local.shape) == (0,) * max(1, len(expected)), local.shape
        losses.append(float(loss.numpy().mean()))  # a collective: every rank calls it
    schedule = graph._compiled.schedule
    assert schedule == ("gpipe" if spelling != "none" and acc > 1 else "sequential"), (spelling, acc, schedule)
    return losses, [p.numpy() for p in model.parameters()]


def data_parallel():
    P01 = flow.placement("cpu", ranks=[0, 1])
    rank = flow.env.get_rank()
    rng = np.random.RandomState(7)
    full_x = rng.randn(12, 6).astype(np.float32)
    full_y = rng.randint(0, 3, (12,)).astype(np.int64)

    def model_and_opt():
        flow.manual_seed(3)
        model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))
        return model, flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)

    model, sgd = model_and_opt()
    loss_fn = nn.CrossEntropyLoss()
    ref = []
    x, y = flow.tensor(full_x), flow.tensor(full_y)
    for _ in range(4):
        logits = model(x)
        loss = loss_fn(logits, y)
        loss.backward()
        sgd.step()
        sgd.zero_grad()
        ref.append((float(loss.numpy()), logits.numpy().copy()))
    ref_params = [p.numpy().copy() for p in model.parameters()]

    model, sgd = model_and_opt()
    model.to_global(P01, B)
    sgd = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.01)

    class DataParallel(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.loss_fn = loss_fn
            self.config.set_gradient_accumulation_steps(2)
            self.add_optimizer(sgd)

        def build(self, x, y):
            logits = self.model(x)
            loss = self.loss_fn(logits, y)
            loss.backward()
            return loss, logits

    graph = DataParallel()
    mine = slice(6 * rank, 6 * rank + 6)  # this rank's own rows: nothing is fed from rank 0
    x = flow.tensor(full_x[mine]).to_global(P01, flow.sbp.split(0))
    y = flow.tensor(full_y[mine]).to_global(P01, flow.sbp.split(0))
    for step in range(4):
        loss, logits = graph(x, y)
        assert tuple(loss.shape) == (2,), loss.shape
        assert logits.sbp == (flow.sbp.split(0),) and tuple(logits.shape) == (12, 3), (logits.sbp, logits.shape)
        np.testing.assert_allclose(logits.to_local().numpy(), ref[step][1][mine], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(float(loss.numpy().mean()), ref[step][0], rtol=1e-5)
    for p, q in zip(model.parameters(), ref_params):
        np.testing.assert_allclose(p.numpy(), q, rtol=1e-5, atol=1e-6)
    if rank == 0:
        print("OK data parallel acc=2 own pieces", flush=True)


ref_losses, ref_params = eager_reference()
data_parallel()
runs = {}
for spelling, acc in [("stage_id", 2), ("stage_id", 1), ("set_stage", 2), ("graph_module", 2), ("none", 2)]:
    losses, params = runs[spelling, acc] = graph_run(spelling, acc)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for p, q in zip(params, ref_params):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-7)
    loss_diff = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
    param_diff = max(float(np.max(np.abs(p - q))) for p, q in zip(params, ref_params))
    if flow.env.get_rank() == 0:
        print("OK %s acc=%d steps=%d loss-rel-diff=%.2g param-abs-diff=%.2g"
              % (spelling, acc, STEPS, loss_diff, param_diff), flush=True)
# the pipelined schedule sums the same gradients in the same order as micro-batch after micro-batch: bit for bit
gpipe, sequential = runs["stage_id", 2], runs["none", 2]
assert gpipe[0] == sequential[0] and all(np.array_equal(p, q) for p, q in zip(gpipe[1], sequential[1]))
if flow.env.get_rank() == 0:
    print("OK gpipe == sequential bit for bit", flush=True)
    print(flow.explain(GRAPHS[0]), flush=True)
