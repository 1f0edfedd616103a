"""CUDA kernel of a scatter-multiply on a device — `out.flat[positions[i]] *= values[i]` for every i, repeated
positions multiplying in turn, in the order of i — with its numpy twin (kernels/cuda_source.py).

numpy does this with `numpy.multiply.at`; CuPy has no `multiply.at` ("`cupy_multiply.at` is not supported yet":
its ufunc `at` covers add, subtract, maximum, minimum and the bitwise ones, through atomics). A float product's
rounding depends on the order of its factors, so atomics (an atomicCAS loop) would give a different number from
run to run; instead the positions are sorted first (a stable argsort: each position's items stay in the order of
i) and one thread per run of equal positions — the thread at the run's first item — multiplies the run's values
into its element in that order. Runs are disjoint, so the threads are independent; the result is numpy's
`multiply.at` bit for bit (integers wrap as numpy's do: they are multiplied as unsigned integers of their width).
A position repeated r times costs its thread r multiplications, as numpy's loop does.

`supported(dtype)`: float32/float64 directly; int32/uint32 and int64/uint64 as unsigned 32/64-bit bits; bool and
the 8/16-bit integers widened to 64 bits and narrowed back (a product modulo 2^k does not depend on the width it
was computed in). Other dtypes (float16, complex) are not: the caller multiplies repeat level by repeat level.
"""
import numpy

from .cuda_source import CudaModule

_HEADER = r"""
#define GRID_LOOP(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)
"""

_TEMPLATE = r"""
extern "C" __global__ void segment_product_{S}({T}* out, const long long* positions, const long long* order,
                                               const {T}* values, long long n) {
    GRID_LOOP(j, n) {
        long long p = positions[j];
        if (j > 0 && positions[j - 1] == p) continue;  // not the first item of its run
        {T} acc = out[p];
        for (long long k = j; k < n && positions[k] == p; ++k) acc = acc * values[order[k]];
        out[p] = acc;
    }
}
"""

_VARIANTS = (("float", "f32"), ("double", "f64"), ("unsigned int", "u32"), ("unsigned long long", "u64"))


def _twin(out, positions, order, values, n):
    numpy.multiply.at(out, positions[:n], values[order[:n]])


MODULE = CudaModule("scatter", _HEADER + "".join(_TEMPLATE.replace("{T}", t).replace("{S}", s)
                                                  for t, s in _VARIANTS),
                    {"segment_product_" + s: _twin for _, s in _VARIANTS}, options=("--std=c++17", "--fmad=false"))

# dtype -> (the kernel's suffix, the dtype its bits are viewed as, whether the values are widened to 64 bits first)
_KINDS = {numpy.dtype(numpy.float32): ("f32", numpy.float32, False),
          numpy.dtype(numpy.float64): ("f64", numpy.float64, False),
          numpy.dtype(numpy.int32): ("u32", numpy.uint32, False), numpy.dtype(numpy.uint32): ("u32", numpy.uint32, False),
          numpy.dtype(numpy.int64): ("u64", numpy.uint64, False), numpy.dtype(numpy.uint64): ("u64", numpy.uint64, False)}
for _narrow in (numpy.bool_, numpy.int8, numpy.uint8, numpy.int16, numpy.uint16):
    _KINDS[numpy.dtype(_narrow)] = ("u64", numpy.uint64, True)


def supported(dtype):
    return numpy.dtype(dtype) in _KINDS


def multiply_at(xp, out, positions, values):
    """out.reshape(-1)[positions[i]] *= values[i] for every i in order, in place on a C-contiguous device array
    `out` (positions: integer indices into its flat view; values: as many, of out's dtype or castable to it)."""
    suffix, bits, widen = _KINDS[numpy.dtype(out.dtype)]
    if not out.flags.c_contiguous:
        raise ValueError("multiply_at: the output must be C-contiguous (it is written through its flat view)")
    n = int(positions.size)
    if n == 0:
        return out
    flat = out.reshape(-1)
    positions = positions.reshape(-1).astype(numpy.int64, copy=False)
    order = xp.argsort(positions, kind="stable")  # each position's items in the order of i (CuPy's is stable)
    sorted_positions = xp.ascontiguousarray(positions[order])
    values = xp.ascontiguousarray(values.reshape(-1).astype(out.dtype, copy=False))
    if widen:
        acc = flat.astype(numpy.int64).view(bits)
        MODULE.launch(xp, "segment_product_" + suffix, n, acc, sorted_positions, order,
                      values.astype(numpy.int64).view(bits), n)
        flat[...] = acc.view(numpy.int64).astype(out.dtype)
    else:
        MODULE.launch(xp, "segment_product_" + suffix, n, flat.view(bits), sorted_positions, order,
                      values.view(bits), n)
    return out
