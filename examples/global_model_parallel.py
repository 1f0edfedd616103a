"""Model (tensor) parallelism with global tensors: the MLP's weights are split across the ranks, the batch is
broadcast. The first Linear's weight is split along its output rows (split(0)), so its output comes out split
along the hidden features (split(1)); the second Linear's weight is split along its input columns (split(1)),
so its matmul produces partial sums that are added across ranks (partial_sum -> broadcast). The layouts of the
activations are chosen by the ops' SBP signatures; nothing in `forward` mentions them.

    python3 -m oneflow.distributed.launch --nproc_per_node 2 examples/global_model_parallel.py --data-dir DIR
    python examples/global_model_parallel.py --data-dir DIR          # one rank: the same losses
"""
import argparse

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
placement = flow.placement("cuda", list(range(world)))
B = flow.sbp.broadcast
flow.manual_seed(0)


class SplitMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.hidden = nn.Linear(784, 500)
        self.relu = nn.ReLU()
        self.out = nn.Linear(500, 10)
        self.to_global(placement=placement, sbp=B)  # each rank's initial values -> the first rank's
        self.hidden.weight.data = self.hidden.weight.to_global(sbp=flow.sbp.split(0))  # (500, 784): rows
        self.hidden.bias.data = self.hidden.bias.to_global(sbp=flow.sbp.split(0))
        self.out.weight.data = self.out.weight.to_global(sbp=flow.sbp.split(1))  # (10, 500): columns

    def forward(self, x):
        return self.out(self.relu(self.hidden(self.flatten(x))))


model = SplitMLP()
optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
for name, p in model.named_parameters():
    if rank == 0:
        print("%-14s %-12s %s" % (name, tuple(p.shape), p.sbp))
hidden = model.hidden(flow.zeros(BATCH, 784, placement=placement, sbp=B))
if rank == 0:
    print("hidden activations: %s %s" % (tuple(hidden.shape), hidden.sbp))

(train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH, BATCH,
                                                                                out_dir=args.data_dir)
test_batches = list(zip(test_images, test_labels))[:args.eval_batches]
steps = min(args.steps, len(train_images))
for step, (images, labels) in enumerate(tqdm(zip(train_images[:steps], train_labels[:steps]), total=steps,
                                             desc="train", unit="step", disable=rank != 0)):
    # every rank reads the same batch; placement + sbp make it global directly
    x = flow.tensor(images, placement=placement, sbp=B)
    y = flow.tensor(labels, dtype=flow.int64, placement=placement, sbp=B)
    logits = model(x)
    loss = loss_fn(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    value = loss.numpy()
    if step % 100 == 0 and rank == 0:
        tqdm.write("step %d loss %.4f" % (step, value))

correct = 0
with flow.no_grad():
    for images, labels in tqdm(test_batches, desc="test", unit="batch", disable=rank != 0):
        predicted = model(flow.tensor(images, placement=placement, sbp=B)).argmax(dim=1).numpy()
        correct += int((predicted == labels).sum())
if rank == 0:
    print("test accuracy %.4f" % (correct / (len(test_batches) * BATCH)))
