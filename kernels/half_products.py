"""float16 products on the CPU through float32 BLAS: the operands widened to float32 (exact), the product made by the
float32 GEMM, the result rounded to float16 once.

numpy has no float16 BLAS: `numpy.matmul` on float16 runs its own C loop, a float32 sum over k in order rounded once
(bit for bit: tests/test_half_products.py), ~50x slower than sgemm at one thread (benchmarks/bench_half_products.py;
OneFlow 0.9's test_grouped_matmul_bias took 91 s against 8 s with this path on a loaded 2-core machine). OneFlow 0.9
computes half products in float32: its CUDA BroadcastMatmul
asks cuBLAS for CUDA_R_32F compute on kFloat16 operands unless ONEFLOW_MATMUL_ALLOW_HALF_PRECISION_ACCUMULATION is
set (oneflow/core/ep/cuda/primitive/broadcast_matmul.cpp:77-95 @ v0.9.0); its CPU primitive has float and double
only (oneflow/core/ep/cpu/primitive/broadcast_matmul.cpp:94-103, 117 @ v0.9.0: other dtypes UNIMPLEMENTED / no
primitive), so a half product off the GPU has no OneFlow value to copy; float32 accumulation, rounded once, is the
GPU's numbers and torch's CPU float16 matmul's (tests/test_half_products.py compares).

bfloat16 needs nothing here: it is stored in float32 (kernels/bfloat16.py), so its products already run on the float32
BLAS, and the plan rounds a bfloat16 output once after the kernel (runtime/plan.py `_bfloat16_outputs`).

Operands of mixed dtypes (float16 with float32) keep numpy's promotion and its kernel: only products whose floating
operands are all float16 are widened, as only they used numpy's float16 loop.
"""
import functools

import numpy

_HALF = numpy.dtype(numpy.float16)
_SINGLE = numpy.dtype(numpy.float32)


def all_half(xp, arrays):
    """Whether `arrays` (None entries skipped) are numpy arrays whose floating ones are all float16, one at least."""
    if xp is not numpy:
        return False
    seen = False
    for a in arrays:
        dtype = getattr(a, "dtype", None)
        if dtype is None or dtype.kind != "f":
            continue
        if dtype != _HALF:
            return False
        seen = True
    return seen


def widen(a):
    """float32 copy of a float16 array (exact); anything else as it is."""
    dtype = getattr(a, "dtype", None)
    return a.astype(_SINGLE) if dtype is not None and dtype == _HALF else a


def narrow(result):
    """float32 results (an array or a tuple / list of them) rounded to float16, once."""
    if isinstance(result, (tuple, list)):
        return type(result)(narrow(r) for r in result)
    if getattr(result, "dtype", None) == _SINGLE:
        return result.astype(_HALF)
    return result


def through_float32(kernel):
    """`kernel(xp, *arrays, **attrs)` computing on float32 copies of its float16 numpy operands, its float results
    rounded to float16 once. Other dtypes and devices reach `kernel` itself. Attributes of `kernel` (`specialize`)
    are kept (functools.wraps copies them)."""

    @functools.wraps(kernel)
    def run(xp, *arrays, **attrs):
        if xp is numpy:
            # numpy's native-order float16 dtype is one object: identity first, so other dtypes pay ~0.1 µs, not the
            # ~1.5 µs of comparing dtypes (eager ops on small tensors); a float16 operand then needs all of them so
            for a in arrays:
                if getattr(a, "dtype", None) is _HALF:
                    if all_half(xp, arrays):
                        return narrow(kernel(xp, *[widen(x) for x in arrays], **attrs))
                    break
        return kernel(xp, *arrays, **attrs)

    run.through_float32 = kernel  # the float16 path's inner kernel, for tests and benchmarks
    return run
