"""LeNet convolution layers, forward + backward: oneflow_compat numpy kernels vs PyTorch CPU.

Shapes are those of the docs' LeNet (batch 100, NCHW, 5x5 kernels, SAME padding):
  conv1: 1 -> 32 channels on 28x28 (the net's input needs no gradient: fwd + d weight)
  conv2: 32 -> 64 channels on 14x14 (fwd + d input + d weight)
Both sides use float32 and the same number of threads, timed in turn in one process (benchmarks/harness.py);
ratio ours / torch (lower is better; 1.0 = as fast as torch).

Where numba's llvmlite and AVX-512 are there, two more: conv2 on the implicit path (kernels/vector_gemm.py) vs
the same kernels on pixel-major patches + OpenBLAS; and conv2's forward product alone (100 samples of 196 x 800
times 800 x 64, patches given) through vector_gemm vs numpy's OpenBLAS, both over ranges of samples on the
BLAS's thread count with the BLAS on one thread (as the convolution runs them).

Run: python benchmarks/bench_kernels_conv.py [--rounds 7] [--threads 1 2] [--quick]
"""
import os
import sys

import numpy as np

from oneflow_compat.kernels import nn as K
from oneflow_compat.kernels import vector_gemm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

LAYERS = (
    # name, input shape, weight shape, input needs grad
    ("conv1", (100, 1, 28, 28), (32, 1, 5, 5), False),
    ("conv2", (100, 32, 14, 14), (64, 32, 5, 5), True),
)


def ours_step(x, w, dy, pads, needs_dx):
    def run():
        K.conv2d(np, x, w, strides=1, pads=pads, dilations=1, groups=1)
        K.conv2d_grad_weight(np, dy, x, weight_shape=w.shape, strides=1, pads=pads, dilations=1, groups=1)
        if needs_dx:
            K.conv2d_grad_input(np, dy, w, input_shape=x.shape, strides=1, pads=pads, dilations=1, groups=1)
    return run


def torch_step(torch, x, w, dy, pad, needs_dx):
    xt = torch.from_numpy(x).requires_grad_(needs_dx)
    wt = torch.from_numpy(w).requires_grad_(True)
    dyt = torch.from_numpy(dy)

    def run():
        xt.grad = wt.grad = None
        torch.nn.functional.conv2d(xt, wt, padding=pad).backward(dyt)
    return run


def cases(quick=False):
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to compare with")
        return []
    rng = np.random.default_rng(0)
    out = []
    for name, x_shape, w_shape, needs_dx in LAYERS:
        x = rng.standard_normal(x_shape, dtype=np.float32)
        w = rng.standard_normal(w_shape, dtype=np.float32)
        pads = K.same_pads(x_shape[2:], w_shape[2:], 1, 1, lower=True)
        out_hw = K.conv_out_hw(x_shape[2:], w_shape[2:], 1, pads, 1)
        dy = rng.standard_normal((x_shape[0], w_shape[0]) + out_hw, dtype=np.float32)
        assert pads[0][0] == pads[0][1] and pads[1][0] == pads[1][1]  # torch takes symmetric pads
        out.append(harness.Case("conv", "%s fwd+bwd %s * %s%s" % (name, x_shape, w_shape, "" if needs_dx else
                                                                 " (no d input)"),
                                [("torch", torch_step(torch, x, w, dy, (pads[0][0], pads[1][0]), needs_dx)),
                                 ("oneflow_compat", ours_step(x, w, dy, pads, needs_dx))], 2 if quick else 5))
    if vector_gemm.AVAILABLE and vector_gemm.FAST:
        out += vector_cases(rng, 2 if quick else 5)
    return out


def _with_fast(fast, run):
    def step():
        vector_gemm.FAST = fast
        try:
            run()
        finally:
            vector_gemm.FAST = True
    return step


def vector_cases(rng, steps):
    name, x_shape, w_shape, _ = LAYERS[1]
    x = rng.standard_normal(x_shape, dtype=np.float32)
    w = rng.standard_normal(w_shape, dtype=np.float32)
    pads = K.same_pads(x_shape[2:], w_shape[2:], 1, 1, lower=True)
    dy = rng.standard_normal((x_shape[0], w_shape[0]) + x_shape[2:], dtype=np.float32)
    step = ours_step(x, w, dy, pads, True)
    n, p, k, f = x_shape[0], x_shape[2] * x_shape[3], w_shape[1] * w_shape[2] * w_shape[3], w_shape[0]
    cols = rng.standard_normal((n, p, k), dtype=np.float32)
    w_kf = rng.standard_normal((k, f), dtype=np.float32)
    prod = np.empty((n, p, f), np.float32)
    steps_of = (lambda count, by: np.arange(count, dtype=np.int64) * by)
    tables = (steps_of(p, k), steps_of(k, 1), steps_of(k, f), steps_of(f // 16, 16), steps_of(p, f),
              steps_of(f // 16, 16))

    def blas():
        def run(n0, n1):
            for s in range(n0, n1):
                np.matmul(cols[s], w_kf, out=prod[s])
        K._over_samples(np, n, run)

    def blocks():
        # ranges of samples over the BLAS's thread count, as the convolution spreads them
        a_rows, a_k, b_k, b_cols, c_rows, c_cols = tables
        K._over_samples(np, n, lambda n0, n1: vector_gemm.gemm(
            cols[n0:n1].reshape(-1), a_rows, a_k, w_kf.reshape(-1), b_k, b_cols, prod[n0:n1].reshape(-1), c_rows,
            c_cols, samples=n1 - n0, strides=(p * k, 0, p * f)))
    return [harness.Case("conv", "%s fwd+bwd: implicit vs pixel-major patches + OpenBLAS" % name,
                         [("pixel-major + OpenBLAS", _with_fast(False, step)), ("implicit", _with_fast(True, step))],
                         steps),
            harness.Case("conv", "%s forward product, %d x (%d x %d @ %d x %d)" % (name, n, p, k, k, f),
                         [("OpenBLAS", blas), ("vector_gemm", blocks)], steps)]


if __name__ == "__main__":
    harness.main_for(cases, __doc__.splitlines()[0])
