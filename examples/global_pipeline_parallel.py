"""Pipeline parallelism with global tensors (the eager form of OneFlow's pipeline example): stage 0 of the MLP
lives on the first rank, stage 1 on the last; `to_global(placement=…)` moves the activations forward (and their
gradients back) between the stages. Every rank runs the whole script; a rank computes only the stages it holds.

    python3 -m oneflow.distributed.launch --nproc_per_node 2 examples/global_pipeline_parallel.py --data-dir DIR
    python examples/global_pipeline_parallel.py --data-dir DIR          # one rank holds both stages
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
BROADCAST = [flow.sbp.broadcast]
P0 = flow.placement("cuda", [0])
P1 = flow.placement("cuda", [world - 1])
flow.manual_seed(0)


class Stage0(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Flatten(), nn.Linear(784, 500), nn.ReLU())

    def forward(self, x):
        return self.layers(x)


class Stage1(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(500, 500), nn.ReLU(), nn.Linear(500, 10))

    def forward(self, x):
        return self.layers(x)


class PipelineModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage0 = Stage0().to_global(placement=P0, sbp=BROADCAST)
        self.stage1 = Stage1().to_global(placement=P1, sbp=BROADCAST)

    def forward(self, x):
        hidden = self.stage0(x)
        return self.stage1(hidden.to_global(placement=P1, sbp=BROADCAST))


model = PipelineModule()
optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
(train_images, train_labels), (test_images, test_labels) = flow.data.load_mnist(BATCH, BATCH,
                                                                                out_dir=args.data_dir)
test_batches = list(zip(test_images, test_labels))[:args.eval_batches]
steps = min(args.steps, len(train_images))
for step, (images, labels) in enumerate(tqdm(zip(train_images[:steps], train_labels[:steps]), total=steps,
                                             desc="train", unit="step", disable=rank != world - 1)):
    x = flow.tensor(images).to_global(placement=P0, sbp=BROADCAST)  # the first rank's copy feeds stage 0
    y = flow.tensor(labels, dtype=flow.int64).to_global(placement=P1, sbp=BROADCAST)
    loss = loss_fn(model(x), y)  # lives on the last rank
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 100 == 0 and rank == world - 1:
        tqdm.write("step %d loss %.4f" % (step, loss.to_local().item()))

correct = 0
with flow.no_grad():
    for images, labels in tqdm(test_batches, desc="test", unit="batch", disable=rank != world - 1):
        predicted = model(flow.tensor(images).to_global(placement=P0, sbp=BROADCAST)).argmax(dim=1)
        if rank == world - 1:
            correct += int((predicted.to_local().numpy() == labels).sum())
if rank == world - 1:
    print("test accuracy %.4f" % (correct / (len(test_batches) * BATCH)))
