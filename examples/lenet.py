"""LeNet on MNIST, written as a OneFlow 0.9 user writes it: `nn.Conv2d` / `nn.MaxPool2d` modules, a `Dataset` over
mnist.npz with a `DataLoader`, eager training or an `nn.Graph` step, and data parallelism with
`DistributedDataParallel` (local tensors) or with global tensors (a broadcast model, the batch split over the ranks).

    python examples/lenet.py --data-dir ../shared/data                        # eager, one process
    python examples/lenet.py --data-dir ../shared/data --graph                # nn.Graph
    python3 -m oneflow.distributed.launch --nproc_per_node 2 examples/lenet.py --data-dir ../shared/data --ddp
    python3 -m oneflow.distributed.launch --nproc_per_node 2 examples/lenet.py --data-dir ../shared/data --global

Every run prints "epoch <e> loss <mean training loss> test accuracy <acc> (<seconds> s)". The numbers do not
depend on the number of ranks (up to float summation order): the model starts from the same seed everywhere, the
`DistributedSampler` splits each shuffled global batch of --batch-size images over the ranks (one rank takes the
whole batch), and the gradients are averaged over the ranks (DDP) or summed over the split batch (global).
Without mnist.npz (`--synthetic`), random images of ten noisy class prototypes stand in (for quick checks)."""
import argparse
import os
import time

import numpy as np

import oneflow as flow
import oneflow.nn as nn
from oneflow.utils.data import DataLoader, Dataset, DistributedSampler


class LeNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, num_classes))

    def forward(self, x):
        return self.classifier(flow.flatten(self.features(x), 1))


class TrainStep(nn.Graph):
    """One training step as an nn.Graph: forward, loss, backward and the optimizer's update, built on the first call
    (tests/test_flowvision.py and tests/mpi_scripts/flowvision_dp.py train flowvision's models with it too)."""

    def __init__(self, model, optimizer, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(optimizer)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def eager_train_step(model, optimizer, loss_fn, x, y):
    """The same step run eagerly, op by op: returns the loss."""
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


class EvalStep(nn.Graph):
    """The predicted classes as an nn.Graph."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x).argmax(1)


class MNIST(Dataset):
    """(image (1, 28, 28) float32 normalised, label int64) pairs of mnist.npz's train or test part."""

    MEAN, STD = 0.1307, 0.3081

    def __init__(self, images, labels):
        self.images = ((images.astype(np.float32) / 255.0 - self.MEAN) / self.STD)[:, None]
        self.labels = labels.astype(np.int64)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i]


def load_data(data_dir, synthetic, train_size=None):
    path = os.path.join(data_dir, "mnist.npz")
    if not synthetic and os.path.exists(path):
        d = np.load(path)
        x_train, y_train, x_test, y_test = d["x_train"], d["y_train"], d["x_test"], d["y_test"]
    else:
        if not synthetic:
            raise FileNotFoundError("%s not found (use --synthetic for random stand-in data)" % path)
        rng = np.random.RandomState(0)
        prototypes = rng.randint(0, 256, (10, 28, 28))

        def draw(n):
            y = rng.randint(0, 10, n)
            x = np.clip(prototypes[y] + rng.normal(0, 60, (n, 28, 28)), 0, 255).astype(np.uint8)
            return x, y.astype(np.uint8)

        (x_train, y_train), (x_test, y_test) = draw(train_size or 6000), draw(1000)
    if train_size:
        x_train, y_train = x_train[:train_size], y_train[:train_size]
    return MNIST(x_train, y_train), MNIST(x_test, y_test)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    ap.add_argument("--synthetic", action="store_true", help="random stand-in images instead of mnist.npz")
    ap.add_argument("--graph", action="store_true", help="train and evaluate with nn.Graph")
    ap.add_argument("--ddp", action="store_true", help="data parallel with DistributedDataParallel")
    ap.add_argument("--global", dest="global_", action="store_true", help="data parallel with global tensors")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=64, help="the global batch (split over the ranks)")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--max-steps", type=int, default=None, help="stop each epoch after this many steps")
    ap.add_argument("--train-size", type=int, default=None, help="use the first N training images")
    ap.add_argument("--num-workers", type=int, default=0)
    args = ap.parse_args()
    if args.ddp and args.global_:
        ap.error("--ddp and --global are two ways of data parallelism: choose one")

    rank, world = flow.env.get_rank(), flow.env.get_world_size()
    if args.batch_size % world:
        ap.error("--batch-size %d is not a multiple of the %d ranks" % (args.batch_size, world))
    train_set, test_set = load_data(args.data_dir, args.synthetic, args.train_size)
    # every rank: its share of each shuffled global batch (the same order on every rank: seed and epoch)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=0)
    train_loader = DataLoader(train_set, batch_size=args.batch_size // world, sampler=sampler,
                              num_workers=args.num_workers, drop_last=True)  # one shape for nn.Graph
    test_sampler = DistributedSampler(test_set, num_replicas=world, rank=rank, shuffle=False)
    test_loader = DataLoader(test_set, batch_size=200 // world if 200 % world == 0 else 200, sampler=test_sampler)

    flow.manual_seed(0)
    model = LeNet()
    placement = flow.placement("cpu", ranks=list(range(world)))
    if args.global_:
        model = model.to_global(placement, flow.sbp.broadcast)
    elif args.ddp:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = flow.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def sum_over_ranks(t):
        """A local tensor summed over the ranks: the ranks' tensors as the partial sums of one global tensor."""
        return t.to_global(placement, flow.sbp.partial_sum).to_global(sbp=flow.sbp.broadcast).to_local().numpy()

    def as_input(t):  # global: this rank's rows become its piece of the batch split over the ranks
        return t.to_global(placement, flow.sbp.split(0)) if args.global_ else t

    train_step, eval_step = (TrainStep(model, optimizer, loss_fn), EvalStep(model)) if args.graph else (None, None)

    def evaluate():
        model.eval()
        correct = total = 0
        with flow.no_grad():
            for x, y in test_loader:
                x, y = as_input(x), as_input(y)
                pred = eval_step(x) if args.graph else model(x).argmax(1)
                hits = (pred == y).sum()
                if args.global_:
                    hits = hits.to_global(sbp=flow.sbp.broadcast).to_local()
                correct += int(hits.item())
                total += int(y.shape[0])
        model.train()
        if args.ddp and world > 1:  # each rank counted its own part of the test set: sum them
            correct, total = (int(v) for v in sum_over_ranks(flow.tensor([correct, total], dtype=flow.int64)))
        return correct / total

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        started, losses = time.perf_counter(), []
        for step, (x, y) in enumerate(train_loader):
            if args.max_steps is not None and step >= args.max_steps:
                break
            x, y = as_input(x), as_input(y)
            loss = train_step(x, y) if args.graph else eager_train_step(model, optimizer, loss_fn, x, y)
            if args.global_:
                loss = loss.to_global(sbp=flow.sbp.broadcast).to_local()
            elif args.ddp and world > 1:  # the loss of the global batch: the mean of the ranks' means
                loss = flow.tensor(sum_over_ranks(loss.detach()) / world)
            losses.append(float(loss.numpy()))
        elapsed = time.perf_counter() - started
        accuracy = evaluate()
        if rank == 0:
            print("epoch %d loss %.6f test accuracy %.4f (%.1f s)" % (epoch, float(np.mean(losses)), accuracy,
                                                                       elapsed), flush=True)


if __name__ == "__main__":
    main()
