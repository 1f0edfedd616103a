"""The data-parallel MLP training step on global tensors, written once: what `benchmarks/bench_data_parallel.py`
times (2 ranks against 1) and what `tests/mpi_scripts/engine_data_parallel.py` checks (the numbers of one rank, the
collectives per step). It is the step a OneFlow 0.9 user writes for data parallelism:

* the MLP 784-512-512-10 (`LAYERS`), initialised from one seed and broadcast on a placement;
* each rank feeds its own rows of a batch (`to_global` of local tensors onto split(0); `check_meta=False`, OneFlow's
  promise that every rank feeds one shape, exchanges no shapes);
* SGD with momentum; eagerly (forward, `zero_grad`, backward — the gradients all-reduced through buckets — `step`)
  or compiled as an `nn.Graph` (`graph=True`);
* the loss fetched with `numpy()`, which every rank takes part in.

    dp = DataParallelMLP(placement, lr=0.01, momentum=0.9, graph=False)
    loss = dp.step(x_rows, y_rows)      # a float; x_rows/y_rows: this rank's rows (numpy arrays or local tensors)
    x, y = dp.feed(x_rows, y_rows)      # the global batch alone (to count what the step itself makes)
    loss = dp.run(x, y)                 # the step on a fed batch: its loss as a global tensor

Every rank of the world runs the same calls, those outside the placement with empty rows.

It lives in the package (the tools layer: it uses the global-tensor surface) because the test suite must not
depend on the benchmarks, and both need the very same step.
"""
import numpy as np

from oneflow_compat import nn, optim
from oneflow_compat import sbp as flow_sbp
from oneflow_compat._global.creation import tensor
from oneflow_compat._global.generators import manual_seed
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.ir.dtypes import int64

LAYERS = (784, 512, 512, 10)


def mlp(placement, seed=0):
    """The MLP of `LAYERS` (Linear + ReLU between), initialised from `seed` and broadcast on `placement`."""
    manual_seed(seed)
    layers = []
    for k, (n_in, n_out) in enumerate(zip(LAYERS[:-1], LAYERS[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if k < len(LAYERS) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    model.to_global(placement=placement, sbp=flow_sbp.broadcast)  # replaces the parameters: optimizer after this
    return model


class DataParallelMLP:
    """The model, its SGD optimizer and loss on `placement`, eager or as an nn.Graph (see the module docstring)."""

    def __init__(self, placement, lr=0.01, momentum=0.9, graph=False, check_meta=True, seed=0):
        self.placement, self.check_meta = placement, check_meta
        self.model = mlp(placement, seed)
        self.opt = optim.SGD(self.model.parameters(), lr=lr, momentum=momentum)
        self.loss_fn = nn.CrossEntropyLoss()
        self.graph = TrainGraph(self.model, self.opt, self.loss_fn) if graph else None

    def feed(self, x_rows, y_rows):
        """This rank's rows made one global batch (split(0) on the placement)."""
        x = x_rows if isinstance(x_rows, Tensor) else tensor(np.asarray(x_rows, np.float32))
        y = y_rows if isinstance(y_rows, Tensor) else tensor(np.asarray(y_rows), dtype=int64)
        split = flow_sbp.split(0)
        return (x.to_global(placement=self.placement, sbp=split, check_meta=self.check_meta),
                y.to_global(placement=self.placement, sbp=split, check_meta=self.check_meta))

    def run(self, x, y):
        """One training step on a fed batch; returns the loss (a global tensor)."""
        if self.graph is not None:
            return self.graph(x, y)
        loss = self.loss_fn(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss

    def step(self, x_rows, y_rows):
        """Feed, train, fetch: the loss as a float."""
        return float(self.run(*self.feed(x_rows, y_rows)).numpy())


class TrainGraph(nn.Graph):
    """One training step as an nn.Graph: forward, loss, backward and the optimizer's update (what the data-parallel
    step compiles; tests/mpi_scripts/global_2d.py and benchmarks/bench_graph.py train with it too)."""

    def __init__(self, model, optimizer, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss
