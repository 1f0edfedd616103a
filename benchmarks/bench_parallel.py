"""Data-parallel MLP and LeNet train steps on N in-process CPU devices vs 1 device: the cost of splitting and
boxing inside one process (target: <= 1.15x the 1-device step).

    python benchmarks/bench_parallel.py [--devices 2] [--steps 20]"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    for name, model, steps in (("MLP 784-512-10", models.mlp, a.steps * 5), ("LeNet", models.lenet, a.steps)):
        t1 = models.best_time(models.make_train_step(model, 1), steps)
        tn = models.best_time(models.make_train_step(model, a.devices), steps)
        print("%-15s 1 device %8.2f ms   %d devices %8.2f ms   ratio %.3f (target <= 1.15)" % (
            name, t1 * 1e3, a.devices, tn * 1e3, tn / t1))


if __name__ == "__main__":
    main()
