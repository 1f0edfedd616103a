"""The docs' LeNet train step (batch 100, SGD 0.1, dropout 0.5) vs PyTorch eager on CPU, measured in one run
(target <= 1.5x; 1.0x is where we are going).

    python benchmarks/bench_lenet.py [--steps 10]"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def torch_step():
    import torch
    import torch.nn.functional as F

    r = np.random.default_rng(0)
    x = torch.from_numpy(r.random((models.B, 1, 28, 28), dtype=np.float32))
    y = torch.from_numpy(r.integers(0, 10, models.B).astype(np.int64))
    params = [torch.randn(32, 1, 5, 5) * 0.1, torch.zeros(32), torch.randn(64, 32, 5, 5) * 0.1, torch.zeros(64),
              torch.randn(512, 3136) * 0.1, torch.zeros(512), torch.randn(10, 512) * 0.1, torch.zeros(10)]
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.SGD(params, lr=0.1)

    def step():
        c1, b1, c2, b2, w1, d1, w2, d2 = params
        opt.zero_grad()
        h = F.max_pool2d(F.relu(F.conv2d(x, c1, b1, padding=2)), 2, 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, c2, b2, padding=2)), 2, 2)
        h = F.dropout(F.relu(F.linear(h.reshape(models.B, -1), w1, d1)), 0.5, training=True)
        loss = F.cross_entropy(F.linear(h, w2, d2), y, reduction="none")
        loss.mean().backward()
        opt.step()
        return loss.detach().numpy()

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    ours = models.best_time(models.make_train_step(models.lenet, 1), a.steps)
    print("LeNet train step, batch %d, 1 CPU device" % models.B)
    print("  oneflow_compat : %8.2f ms" % (ours * 1e3))
    try:
        import torch
    except ImportError:
        print("  torch not installed: no PyTorch comparison")
        return
    import numpy  # noqa: F401

    threads = torch.get_num_threads()
    theirs = models.best_time(torch_step(), a.steps)
    print("  torch eager    : %8.2f ms  (%d threads)   ratio oneflow_compat/torch = %.3f (target <= 1.5)" % (
        theirs * 1e3, threads, ours / theirs))


if __name__ == "__main__":
    main()
