"""CUDA kernels of dropout on a device: the keep-mask drawn by Philox4x64-10 and applied, in one launch, with the
same bits as the host's numpy Philox (kernels/random.py), and their numpy twins (kernels/cuda_source.py).

Element i of a device's piece is element e of the logical tensor; its uniform is word e % 4 of the Philox block at
counter e // 4 + 1 under the call's key, mapped as numpy's Generator.random maps it, and it is kept iff the uniform
exceeds the rate — exactly `random.dropout_mask`. The piece's geometry (up to 4 axes after merging whole ones)
maps i to e: e = base + Σ index_a · stride_a. The key is read from device memory (a step scalar: the runtime
uploads each call's key with the learning rate, runtime/step_scalars.py), so a captured CUDA graph draws a fresh
mask on every replay.
"""
import numpy

from . import random as rnd
from . import philox_source
from .cuda_source import CudaModule

_PHILOX = philox_source.PHILOX_UNIFORM + r"""
// the logical flat index of element i of a piece: local axes (i0, i1, i2, i3) of dims (., d1, d2, d3)
__device__ __forceinline__ unsigned long long logical_index(long long i, long long d1, long long d2, long long d3,
                                                            long long s0, long long s1, long long s2, long long s3,
                                                            long long base) {
    long long i3 = i % d3; i /= d3;
    long long i2 = i % d2; i /= d2;
    long long i1 = i % d1;
    long long i0 = i / d1;
    return (unsigned long long)(base + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3);
}

extern "C" __global__ void philox_uniform_at(const unsigned long long* elements, double* out,
                                             const unsigned long long* key, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        out[i] = philox_uniform(elements[i], key[0], key[1]);
}

extern "C" __global__ void dropout_mask(signed char* mask, const unsigned long long* key, long long n, long long d1,
                                        long long d2, long long d3, long long s0, long long s1, long long s2,
                                        long long s3, long long base, double rate) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        unsigned long long e = logical_index(i, d1, d2, d3, s0, s1, s2, s3, base);
        mask[i] = philox_uniform(e, key[0], 0ULL) > rate ? 1 : 0;
    }
}
"""

_DROPOUT = r"""
extern "C" __global__ void dropout_{S}(const {T}* x, {T}* y, signed char* mask, const unsigned long long* key,
                                       long long n, long long d1, long long d2, long long d3, long long s0,
                                       long long s1, long long s2, long long s3, long long base, double rate,
                                       {T} scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        unsigned long long e = logical_index(i, d1, d2, d3, s0, s1, s2, s3, base);
        signed char keep = philox_uniform(e, key[0], 0ULL) > rate ? 1 : 0;
        mask[i] = keep;
        y[i] = (x[i] * ({T})keep) * scale;
    }
}

// dropout's gradient, dx = (dy * mask) * scale, in one launch (the host formula's two products in its order)
extern "C" __global__ void dropout_grad_{S}(const {T}* dy, const signed char* mask, {T}* dx, long long n,
                                            {T} scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        dx[i] = (dy[i] * ({T})mask[i]) * scale;
}
"""

_SUFFIX = {numpy.dtype(numpy.float32): "f32", numpy.dtype(numpy.float64): "f64"}


def _source():
    return _PHILOX + "".join(_DROPOUT.replace("{T}", t).replace("{S}", s)
                             for t, s in (("float", "f32"), ("double", "f64")))


def _logical(n, d1, d2, d3, s0, s1, s2, s3, base):
    i = numpy.arange(n, dtype=numpy.int64)
    i3, i = i % d3, i // d3
    i2, i = i % d2, i // d2
    i1, i0 = i % d1, i // d1
    return (base + i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3).astype(numpy.uint64)


def _uniform_at_twin(elements, out, key, n):
    seed = int(key.reshape(-1)[0]) | (int(key.reshape(-1)[1]) << 64)
    out.reshape(-1)[...] = rnd.philox_uniform(numpy, seed, elements.reshape(-1))


def _mask_twin(mask, key, n, d1, d2, d3, s0, s1, s2, s3, base, rate):
    u = rnd.philox_uniform(numpy, int(key.reshape(-1)[0]), _logical(n, d1, d2, d3, s0, s1, s2, s3, base))
    mask.reshape(-1)[...] = u > rate


def _dropout_twin(x, y, mask, key, n, d1, d2, d3, s0, s1, s2, s3, base, rate, scale):
    _mask_twin(mask, key, n, d1, d2, d3, s0, s1, s2, s3, base, rate)
    y.reshape(-1)[...] = (x.reshape(-1) * mask.reshape(-1)) * scale


def _dropout_grad_twin(dy, mask, dx, n, scale):
    numpy.multiply(dy * mask, scale, out=dx)


MODULE = CudaModule("random", _source(), {"philox_uniform_at": _uniform_at_twin, "dropout_mask": _mask_twin,
                                           "dropout_f32": _dropout_twin, "dropout_f64": _dropout_twin,
                                           "dropout_grad_f32": _dropout_grad_twin,
                                           "dropout_grad_f64": _dropout_grad_twin},
                    options=("--std=c++17", "--fmad=false"))


def piece_geometry(logical_shape, index_slices=()):
    """(d1, d2, d3, s0, s1, s2, s3, base) mapping a piece's flat index to the logical flat index (see the module
    docstring), or None when the piece needs more than 4 axes after merging."""
    dims = [int(n) for n in logical_shape]
    index_slices = tuple(index_slices) + (slice(None),) * (len(dims) - len(index_slices))
    merged, stride, base = [], 1, 0  # [local size, logical stride of one local step], innermost first
    for axis in reversed(range(len(dims))):
        start, stop, step = index_slices[axis].indices(dims[axis])
        size = len(range(start, stop, step))
        base += start * stride
        if size != 1:
            if merged and merged[-1][0] * merged[-1][1] == stride * step:  # continues the axis inside it
                merged[-1][0] *= size
            else:
                merged.append([size, stride * step])
        stride *= dims[axis]
    if len(merged) > 4:
        return None
    merged += [[1, 0]] * (4 - len(merged))
    (d3, s3), (d2, s2), (d1, s1), (_, s0) = merged
    return d1, d2, d3, s0, s1, s2, s3, base


def dropout(xp, x, key, rate, geometry):
    """(y, mask) of dropout on the C-contiguous piece x; `key` a uint64 device array holding the call's key."""
    y = xp.empty(x.shape, dtype=x.dtype)
    mask = xp.empty(x.shape, dtype=numpy.int8)
    scale = 1.0 / (1.0 - rate)
    MODULE.launch(xp, "dropout_%s" % _SUFFIX[numpy.dtype(x.dtype)], x.size, x, y, mask, key, x.size, *geometry,
                  rate, scale)
    return y, mask


def dropout_grad(xp, dy, mask, *, rate):
    """The dropout_grad op's kernel: dy * mask * 1 / (1 - rate) in one launch on a device (dy C-contiguous
    float32/64, mask its int8 keep-mask of the same shape), random.dropout_grad's two products elsewhere."""
    if xp is numpy or not hasattr(xp, "RawModule") or not supported(dy.dtype) or mask.dtype != numpy.int8 or \
            dy.shape != mask.shape or not (dy.flags.c_contiguous and mask.flags.c_contiguous):
        return rnd.dropout_grad(xp, dy, mask, rate=rate)
    dx = xp.empty(dy.shape, dtype=dy.dtype)
    MODULE.launch(xp, "dropout_grad_%s" % _SUFFIX[numpy.dtype(dy.dtype)], dx.size, dy, mask, dx, dx.size,
                  1.0 / (1.0 - rate))
    return dx


def mask(xp, key, rate, shape, geometry):
    """The int8 keep-mask of a piece of `shape`."""
    out = xp.empty(shape, dtype=numpy.int8)
    MODULE.launch(xp, "dropout_mask", out.size, out, key, out.size, *geometry, rate)
    return out


def supported(dtype):
    return numpy.dtype(dtype) in _SUFFIX
