"""Data parallelism with global tensors: every rank holds the whole MLP (broadcast), feeds its own slice of each
batch (local -> global split(0)), and the backward pass all-reduces the gradients.

    python3 -m oneflow.distributed.launch --nproc_per_node 2 examples/global_data_parallel.py --data-dir DIR
    python examples/global_data_parallel.py --data-dir DIR          # one rank: the same losses

The printed losses do not depend on the number of ranks (up to float summation order): the model is initialised
on each rank from the same seed and broadcast from the first rank, and the batch is the same 100 images."""
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
placement = flow.placement("cuda", list(range(world)))
flow.manual_seed(0)

model = nn.Sequential(nn.Flatten(), nn.Linear(784, 500), nn.ReLU(), nn.Linear(500, 10))
model.to_global(placement=placement, sbp=flow.sbp.broadcast)  # replaces the parameters: optimizer after this
optimizer = flow.optim.Adam(model.parameters(), lr=0.001)
loss_fn = nn.CrossEntropyLoss()

(train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH, BATCH,
                                                                                out_dir=args.data_dir)
test_batches = list(zip(test_images, test_labels))[:args.eval_batches]


def my_rows(batch):
    """This rank's rows of a batch: the balanced split (the first BATCH % world ranks get one more row)."""
    return np.array_split(batch, world)[rank]


steps = min(args.steps, len(train_images))
for step, (images, labels) in enumerate(tqdm(zip(train_images[:steps], train_labels[:steps]), total=steps,
                                             desc="train", unit="step", disable=rank != 0)):
    x = flow.tensor(my_rows(images)).to_global(placement=placement, sbp=flow.sbp.split(0))
    y = flow.tensor(my_rows(labels), dtype=flow.int64).to_global(placement=placement, sbp=flow.sbp.split(0))
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    value = loss.numpy()  # a global tensor's value: every rank takes part
    if step % 100 == 0 and rank == 0:
        tqdm.write("step %d loss %.4f" % (step, value))

model.eval()
correct = 0
with flow.no_grad():
    for images, labels in tqdm(test_batches, desc="test", unit="batch", disable=rank != 0):
        x = flow.tensor(my_rows(images)).to_global(placement=placement, sbp=flow.sbp.split(0))
        predicted = model(x).argmax(dim=1).numpy()
        correct += int((predicted == labels).sum())
if rank == 0:
    print("test accuracy %.4f" % (correct / (len(test_batches) * BATCH)))
