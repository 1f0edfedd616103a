"""Data, model and pipeline parallelism mixed (the shape of OneFlow's 4-rank mixed example): stage 0 runs data
parallel on the first half of the ranks (batch split(0), weights broadcast), stage 1 runs model parallel on the
second half (weights split across the ranks), and the activations cross from one half to the other with
`to_global(placement=…, sbp=…)`.

    python3 -m oneflow.distributed.launch --nproc_per_node 4 examples/global_mixed_parallel.py --data-dir DIR
    python3 -m oneflow.distributed.launch --nproc_per_node 2 examples/global_mixed_parallel.py --data-dir DIR
    python examples/global_mixed_parallel.py --data-dir DIR          # one rank: the same losses
"""
import argparse

import numpy as np
import oneflow as flow
import oneflow.nn as nn
from tqdm import tqdm

BATCH = 100
ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=".", help="folder holding mnist.npz (downloaded there if missing)")
ap.add_argument("--steps", type=int, default=600, help="training steps (600 = one epoch)")
ap.add_argument("--eval-batches", type=int, default=100, help="test batches to evaluate (100 = all)")
args = ap.parse_args()

rank, world = flow.env.get_rank(), flow.env.get_world_size()
half = max(1, world // 2)
FIRST = flow.placement("cuda", list(range(half)))  # 4 ranks: [0, 1]
SECOND = flow.placement("cuda", list(range(half, world)) or [0])  # 4 ranks: [2, 3]
B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)
flow.manual_seed(0)


class MixedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Flatten(), nn.Linear(784, 500), nn.ReLU())
        self.hidden = nn.Linear(500, 256)
        self.out = nn.Linear(256, 10)
        self.stage0.to_global(placement=FIRST, sbp=B)  # data parallel: full copies
        for layer in (self.hidden, self.out):
            layer.to_global(placement=SECOND, sbp=B)
        # model parallel: hidden's output rows and out's input columns are split across SECOND's ranks
        self.hidden.weight.data = self.hidden.weight.to_global(sbp=S0)
        self.hidden.bias.data = self.hidden.bias.to_global(sbp=S0)
        self.out.weight.data = self.out.weight.to_global(sbp=S1)

    def forward(self, x):
        h = self.stage0(x)  # split(0) on FIRST
        h = h.to_global(placement=SECOND, sbp=B)
        return self.out(self.hidden(h).relu())


model = MixedMLP()
optimizer = flow.optim.Adam(model.parameters(), lr=0.001)
loss_fn = nn.CrossEntropyLoss()
(train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH, BATCH,
                                                                                out_dir=args.data_dir)
test_batches = list(zip(test_images, test_labels))[:args.eval_batches]


def first_half_rows(batch):
    """This rank's rows of a batch if it is in FIRST (balanced split), else nothing (it feeds no data)."""
    return np.array_split(batch, half)[rank] if rank < half else batch[:0]


steps = min(args.steps, len(train_images))
for step, (images, labels) in enumerate(tqdm(zip(train_images[:steps], train_labels[:steps]), total=steps,
                                             desc="train", unit="step", disable=rank != 0)):
    x = flow.tensor(first_half_rows(images)).to_global(placement=FIRST, sbp=S0)
    y = flow.tensor(labels, dtype=flow.int64, placement=SECOND, sbp=B)
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    value = loss.numpy()
    if step % 100 == 0 and rank == 0:
        tqdm.write("step %d loss %.4f" % (step, value))

correct = 0
with flow.no_grad():
    for images, labels in tqdm(test_batches, desc="test", unit="batch", disable=rank != 0):
        x = flow.tensor(first_half_rows(images)).to_global(placement=FIRST, sbp=S0)
        correct += int((model(x).argmax(dim=1).numpy() == labels).sum())
if rank == 0:
    print("test accuracy %.4f" % (correct / (len(test_batches) * BATCH)))
