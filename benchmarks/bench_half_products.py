"""float16 products on the CPU: the float32-BLAS path (kernels/half_products.py) vs numpy's float16 loop it replaced,
and vs PyTorch's CPU float16 matmul.

Shapes from OneFlow 0.9's own float16 tests (python/oneflow/test/modules/test_grouped_matmul_bias.py @ v0.9.0:
problems (2*77, 768, k) — x (m, k) @ w (n, k)^T + b, k 320 here to keep the old side's loop to about a second) and
a small float16 conv2d forward + both gradients (new vs torch; vs old where the old path runs: with numba
installed it raised, its compiled patch loops having no float16). Sides run in turn in one process
(benchmarks/harness.py); ratios new / old and new / torch (lower is better).

Run: python benchmarks/bench_half_products.py [--rounds 7] [--threads 1 2] [--quick]
"""
import os
import sys

import numpy as np

from oneflow_compat.kernels import blas, linalg
from oneflow_compat.kernels import nn as K

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

OLD, NEW, TORCH = "numpy float16 loop (old)", "float32 BLAS (new)", "torch float16"


def _linear_sides(x, w, b):
    def old():
        # what linalg.matmul did with float16 operands: blas.gemm into a float16 output, which (no float16 BLAS)
        # hands it to numpy.matmul's float16 loop
        y = blas.gemm(x, w, np.empty((x.shape[0], w.shape[0]), dtype=np.float16), trans_b=True)
        y += b

    def new():
        y = linalg.matmul(np, x, w, transpose_b=True)
        y += b
    return old, new


def _conv_sides(x, w, dy, pads):
    kernels = [(K.conv2d, K.conv2d.through_float32), (K.conv2d_grad_input, K.conv2d_grad_input.through_float32),
               (K.conv2d_grad_weight, K.conv2d_grad_weight.through_float32)]

    def step(which):
        fwd, dx, dw = (k[which] for k in kernels)

        def run():
            fwd(np, x, w, strides=1, pads=pads)
            dx(np, dy, w, input_shape=x.shape, strides=1, pads=pads)
            dw(np, dy, x, weight_shape=w.shape, strides=1, pads=pads)
        return run
    return step(1), step(0)


def cases(quick=False):
    rng = np.random.default_rng(0)
    m, n, k = 2 * 77, 768, 320
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((n, k)).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    old, new = _linear_sides(x, w, b)
    sides = [(OLD, old), (NEW, new)]
    pairs = [(NEW, OLD)]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        xt, wt, bt = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        sides.append((TORCH, lambda: torch.nn.functional.linear(xt, wt, bt)))
        pairs.append((NEW, TORCH))
    out = [harness.Case("half", "float16 x @ w^T + b, (%d, %d) @ (%d, %d)^T" % (m, k, n, k), sides, 1,
                        pairs=pairs)]
    xc = rng.standard_normal((8, 16, 16, 16)).astype(np.float16)
    wc = rng.standard_normal((32, 16, 3, 3)).astype(np.float16)
    dy = rng.standard_normal((8, 32, 16, 16)).astype(np.float16)
    old_c, new_c = _conv_sides(xc, wc, dy, ((1, 1), (1, 1)))
    sides, pairs = [(NEW, new_c)], []
    try:
        old_c()  # the old float16 conv2d: numba's compiled patch loops have no float16 (NotImplementedError)
        sides.append((OLD, old_c))
        pairs.append((NEW, OLD))
    except NotImplementedError:
        print("(conv2d: the old float16 path fails where numba is installed; new vs torch only)")
    if torch is not None:
        xct, wct, dyt = torch.from_numpy(xc), torch.from_numpy(wc).requires_grad_(True), torch.from_numpy(dy)
        xct.requires_grad_(True)

        def torch_conv():
            xct.grad = wct.grad = None
            torch.nn.functional.conv2d(xct, wct, padding=1).backward(dyt)
        sides.append((TORCH, torch_conv))
        pairs.append((NEW, TORCH))
    if pairs:
        out.append(harness.Case("half", "float16 conv2d fwd+bwd (8, 16, 16, 16) * (32, 16, 3, 3)", sides, 1,
                                pairs=pairs))
    return out


if __name__ == "__main__":
    harness.main_for(cases, __doc__.splitlines()[0])
