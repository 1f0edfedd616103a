"""LeNet convolution layers, forward + backward: oneflow_compat numpy kernels vs PyTorch CPU.

Shapes are those of the docs' LeNet (batch 100, NCHW, 5x5 kernels, SAME padding):
  conv1: 1 -> 32 channels on 28x28 (the net's input needs no gradient: fwd + d weight)
  conv2: 32 -> 64 channels on 14x14 (fwd + d input + d weight)
Both sides use float32 and the same number of threads. Prints median times and the
ratio ours / torch (lower is better; 1.0 = as fast as torch).

Run: python benchmarks/bench_kernels_conv.py [--repeat N]
"""
import argparse
import ctypes
import os
import statistics
import time

import numpy as np

from oneflow_compat.kernels import nn as K

LAYERS = (
    # name, input shape, weight shape, input needs grad
    ("conv1", (100, 1, 28, 28), (32, 1, 5, 5), False),
    ("conv2", (100, 32, 14, 14), (64, 32, 5, 5), True),
)


def numpy_blas_threads():
    """Threads of the BLAS numpy is linked to (OpenBLAS queried directly when loaded)."""
    try:
        import threadpoolctl
        infos = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
        if infos:
            return infos[0]["num_threads"]
    except ImportError:
        pass
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        paths = set()
    for path in paths:
        lib = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                       "openblas_get_num_threads64_", "openblas_get_num_threads"):
            if hasattr(lib, symbol):
                return int(getattr(lib, symbol)())
    return os.cpu_count()


def interleaved_medians(fn_a, fn_b, repeat):
    """Median times of two functions run alternately, so that load from other
    processes on a shared machine hits both sides alike."""
    fn_a(), fn_b()  # warm-up: allocations, BLAS threads, torch kernel selection
    times_a, times_b = [], []
    for _ in range(repeat):
        for fn, times in ((fn_a, times_a), (fn_b, times_b)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(times_a), statistics.median(times_b)


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to compare with")
        return
    threads = numpy_blas_threads()
    torch.set_num_threads(threads)
    print("numpy %s BLAS threads: %d | torch %s threads: %d | float32, median of %d"
          % (np.__version__, threads, torch.__version__, torch.get_num_threads(), args.repeat))
    rng = np.random.default_rng(0)
    total_ours = total_torch = 0.0
    for name, x_shape, w_shape, needs_dx in LAYERS:
        x = rng.standard_normal(x_shape, dtype=np.float32)
        w = rng.standard_normal(w_shape, dtype=np.float32)
        pads = K.same_pads(x_shape[2:], w_shape[2:], 1, 1, lower=True)
        out_hw = K.conv_out_hw(x_shape[2:], w_shape[2:], 1, pads, 1)
        dy = rng.standard_normal((x_shape[0], w_shape[0]) + out_hw, dtype=np.float32)
        assert pads[0][0] == pads[0][1] and pads[1][0] == pads[1][1]  # torch takes symmetric pads
        ours, ref = interleaved_medians(ours_step(x, w, dy, pads, needs_dx),
                                        torch_step(torch, x, w, dy, (pads[0][0], pads[1][0]), needs_dx),
                                        args.repeat)
        total_ours += ours
        total_torch += ref
        print("%s fwd+bwd: ours %7.2f ms  torch %7.2f ms  ratio %.2f"
              % (name, ours * 1e3, ref * 1e3, ours / ref))
    print("LeNet convs fwd+bwd total: ours %7.2f ms  torch %7.2f ms  ratio %.2f"
          % (total_ours * 1e3, total_torch * 1e3, total_ours / total_torch))
    print("load average during the run: %.2f (%d cores; > cores means shared-machine noise)"
          % (os.getloadavg()[0], os.cpu_count()))


if __name__ == "__main__":
    main()
