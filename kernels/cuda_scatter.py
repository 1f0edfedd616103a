"""CUDA kernels of scatter-add and scatter-multiply by rows on a device — `out[positions[i]] += values[i]` (or `*=`)
for every i, rows of `inner` elements, repeated positions accumulating in turn, in the order of i — with their
numpy twins (kernels/cuda_source.py).

numpy does these with `numpy.add.at` / `numpy.multiply.at`. CuPy has no `multiply.at` ("`cupy_multiply.at` is not
supported yet"), and its `add.at` (like `cupyx.scatter_add`) adds with atomics: a float sum's rounding depends on
the order of its terms, so a gradient made that way (padding's, upsampling's, a gather's, a segment sum's) changed
in its last bits from one run to the next — the first GPU run's train and predict jobs disagreed at 1e-16. Here the
positions are sorted first (a stable argsort: each position's items stay in the order of i) and one thread per run
of equal positions and column — the thread at the run's first item — accumulates the run's values into its
element in that order. Runs are disjoint, so the threads are independent; the result is numpy's `add.at` /
`multiply.at` bit for bit, on every run (integers wrap as numpy's do: they are computed as unsigned integers of
their width). A position repeated r times costs its threads r steps, as numpy's loop does.

`supported(dtype, op)`: float32/float64 directly; int32/uint32 and int64/uint64 as unsigned 32/64-bit bits; the
8/16-bit integers (and bool, for products: its logical and) widened to 64 bits and narrowed back (a sum or product
modulo 2^k does not depend on the width it was computed in). Other dtypes (float16, complex, bool sums) are not:
the callers fall back to the array module's own ways.
"""
import numpy

from .cuda_source import CudaModule

_HEADER = r"""
#define GRID_LOOP(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)
"""

_TEMPLATE = r"""
extern "C" __global__ void segment_{OP}_{S}({T}* out, const long long* positions, const long long* order,
                                           const {T}* values, long long n, long long inner) {
    GRID_LOOP(t, n * inner) {
        long long j = t / inner, c = t - j * inner;
        long long p = positions[j];
        if (j > 0 && positions[j - 1] == p) continue;  // not the first item of its run
        {T} acc = out[p * inner + c];
        for (long long k = j; k < n && positions[k] == p; ++k) acc = acc {SIGN} values[order[k] * inner + c];
        out[p * inner + c] = acc;
    }
}
"""

_VARIANTS = (("float", "f32"), ("double", "f64"), ("unsigned int", "u32"), ("unsigned long long", "u64"))
_OPS = (("sum", "+", numpy.add), ("product", "*", numpy.multiply))


def _twin_of(ufunc):
    def twin(out, positions, order, values, n, inner):
        ufunc.at(out.reshape(-1, inner), positions[:n], values.reshape(-1, inner)[order[:n]])
    return twin


MODULE = CudaModule("scatter", _HEADER + "".join(
    _TEMPLATE.replace("{T}", t).replace("{S}", s).replace("{OP}", op).replace("{SIGN}", sign)
    for op, sign, _ in _OPS for t, s in _VARIANTS),
    {"segment_%s_%s" % (op, s): _twin_of(ufunc) for op, _, ufunc in _OPS for _, s in _VARIANTS},
    options=("--std=c++17", "--fmad=false"))

# dtype -> (the kernel's suffix, the dtype its bits are viewed as, whether the values are widened to 64 bits first)
_KINDS = {numpy.dtype(numpy.float32): ("f32", numpy.float32, False),
          numpy.dtype(numpy.float64): ("f64", numpy.float64, False),
          numpy.dtype(numpy.int32): ("u32", numpy.uint32, False),
          numpy.dtype(numpy.uint32): ("u32", numpy.uint32, False),
          numpy.dtype(numpy.int64): ("u64", numpy.uint64, False),
          numpy.dtype(numpy.uint64): ("u64", numpy.uint64, False)}
for _narrow in (numpy.bool_, numpy.int8, numpy.uint8, numpy.int16, numpy.uint16):
    _KINDS[numpy.dtype(_narrow)] = ("u64", numpy.uint64, True)


def supported(dtype, op="product"):
    return numpy.dtype(dtype) in _KINDS and not (op == "sum" and numpy.dtype(dtype) == numpy.bool_)


def _accumulate(xp, op, out, positions, values, inner):
    suffix, bits, widen = _KINDS[numpy.dtype(out.dtype)]
    if not out.flags.c_contiguous:
        raise ValueError("scatter %s: the output must be C-contiguous (it is written through its flat view)" % op)
    n = int(positions.size)
    if n == 0 or inner == 0:
        return out
    flat = out.reshape(-1)
    positions = positions.reshape(-1).astype(numpy.int64, copy=False)
    order = xp.argsort(positions, kind="stable")  # each position's items in the order of i (CuPy's is stable)
    sorted_positions = xp.ascontiguousarray(positions[order])
    values = xp.ascontiguousarray(values.reshape(-1).astype(out.dtype, copy=False))
    name = "segment_%s_%s" % (op, suffix)
    if widen:
        acc = flat.astype(numpy.int64).view(bits)
        MODULE.launch(xp, name, n * inner, acc, sorted_positions, order, values.astype(numpy.int64).view(bits), n,
                      inner)
        flat[...] = acc.view(numpy.int64).astype(out.dtype)
    else:
        MODULE.launch(xp, name, n * inner, flat.view(bits), sorted_positions, order, values.view(bits), n, inner)
    return out


def multiply_at(xp, out, positions, values):
    """out.reshape(-1)[positions[i]] *= values[i] for every i in order, in place on a C-contiguous device array
    `out` (positions: integer indices into its flat view; values: as many, castable to out's dtype)."""
    return _accumulate(xp, "product", out, positions, values, 1)


def add_rows(xp, out, rows, values):
    """out[rows[i]] += values[i] for every i in order, in place on a C-contiguous 2-d device array `out` (N, inner)
    (rows: n integer row numbers; values: (n, inner), castable to out's dtype): numpy's `add.at(out, rows, values)`."""
    return _accumulate(xp, "sum", out, rows, values, out.shape[1])
