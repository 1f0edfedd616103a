"""ResNet-50 train step (batch 8, 224 x 224, SGD with momentum, batch norm in training mode) vs PyTorch eager on
the same architecture and the same weights (benchmarks/resnet50_models.py), timed in turn in one process
(benchmarks/harness.py); target <= 1.2x at 1 thread (issue 24).

    python benchmarks/bench_resnet50.py [--rounds 7] [--threads 1 2] [--quick]

Before timing, one step of each side is compared: the two losses must agree (rtol 1e-4), so the ratio is between
two computations of the same numbers."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import resnet50_models  # noqa: E402

BATCH, SIZE = 8, 224


def sides():
    ours, x, y, variables = resnet50_models.oneflow_step(BATCH, SIZE)
    theirs, _ = resnet50_models.torch_step(variables(), x, y)
    a, b = float(np.mean(ours())), float(theirs())
    if not np.isclose(a, b, rtol=1e-4):
        raise AssertionError("ResNet-50 first-step losses differ: oneflow_compat %r, torch %r" % (a, b))
    return [("torch eager", theirs), ("oneflow_compat", ours)]


def cases(quick=False):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch is not installed: no ResNet-50 comparison")
        return []
    return [harness.Case("resnet50", "ResNet-50 train step, batch %d, %d px, 1 device" % (BATCH, SIZE), sides,
                         1, target=1.2)]


if __name__ == "__main__":
    harness.main_for(cases, __doc__.splitlines()[0])
