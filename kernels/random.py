"""Counter-based random numbers that do not depend on how a tensor is split.

Element e (flat C-order index) of a logical tensor drawn with seed s always gets the
same uniform: the e-th 64-bit output of numpy's Philox4x64 keyed by s, mapped to
[0, 1) as Generator.random does ((u >> 11) * 2**-53). Philox is a counter-based
generator: each counter value gives 4 outputs and `advance` jumps to any counter,
so any slice is generated without generating what precedes it. Consequently
concatenating slices gives exactly the whole, whatever the number of devices.

On the host the numbers come from numpy's own Philox; on a device (`xp` other than numpy) from
`philox4x64_10`, the same function written over uint64 arrays, or from its CUDA twin in kernels/cuda_random.py
(dropout's mask drawn and applied in one launch), so all give the same bits: no draw on the host, no copy up.
"""
import zlib

import numpy

from . import philox_source
from .cuda_source import CudaModule

_OUTPUTS_PER_COUNTER = 4  # Philox4x64 yields four 64-bit words per counter value
_SEED_MASK = (1 << 64) - 1


def derived_seed(seed, name):
    """The seed of one named consumer of `seed`: a variable without its own seed, a random op, a data reader.

    The one op-seed rule. It depends on the parent seed and the name only, never on a rank or a device count, so
    every process derives the same value; the name goes through crc32 so that similar names give distant seeds.
    """
    return (int(seed) * 1000003 + zlib.crc32(str(name).encode())) % (1 << 63)


def _mix64(z):
    """splitmix64's finalizer: nearby inputs give unrelated 64-bit outputs."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _SEED_MASK
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _SEED_MASK
    return z ^ (z >> 31)


def call_key(seed, call, device=0):
    """The generator key of call number `call` of a random op seeded `seed` (and, for per-device draws in mirrored
    view, of one device): a fresh, unrelated stream per call."""
    z = (int(seed) + 0x9E3779B97F4A7C15 * (call + 1) + 0xD1B54A32D192ED03 * device) & _SEED_MASK
    return _mix64(z)


# --- Philox4x64-10 over arrays (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) -------------
_PHILOX_M0, _PHILOX_M1 = numpy.uint64(0xD2E7470EE14C6C93), numpy.uint64(0xCA5A826395121157)
_PHILOX_W0, _PHILOX_W1 = numpy.uint64(0x9E3779B97F4A7C15), numpy.uint64(0xBB67AE8584CAA73B)
_LOW32 = numpy.uint64(0xFFFFFFFF)
_U32, _U11 = numpy.uint64(32), numpy.uint64(11)
_PHILOX_ROUNDS = 10


def _mulhilo64(xp, a, b):
    """(high, low) 64-bit words of the 128-bit products a·b (uint64 arrays, `b` a scalar), from 32-bit halves."""
    a_lo, a_hi = a & _LOW32, a >> _U32
    b_lo, b_hi = b & _LOW32, b >> _U32
    lo_lo, lo_hi, hi_lo = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo
    middle = (lo_lo >> _U32) + (lo_hi & _LOW32) + (hi_lo & _LOW32)
    high = a_hi * b_hi + (lo_hi >> _U32) + (hi_lo >> _U32) + (middle >> _U32)
    return high, a * b


def philox4x64_10(xp, counter, key):
    """The four output words of Philox4x64-10 for each counter.

    `counter`: four uint64 arrays (word 0 the lowest of the 256-bit counter), broadcastable together; `key`: two
    uint64 words (Python ints or 0-d arrays; word 0 the low one). Returns four uint64 arrays. The same function
    as numpy.random.Philox's block (`tests/test_philox.py` checks the bits) and as kernels/cuda_random.py's
    `philox_uniform` (tests/test_cuda_kernels.py)."""
    c0, c1, c2, c3 = (xp.asarray(c, dtype=xp.uint64) for c in counter)
    k0, k1 = numpy.uint64(int(key[0]) & _SEED_MASK), numpy.uint64(int(key[1]) & _SEED_MASK)
    with numpy.errstate(over="ignore"):  # key bumps wrap modulo 2**64 by design
        for r in range(_PHILOX_ROUNDS):
            if r:
                k0, k1 = k0 + _PHILOX_W0, k1 + _PHILOX_W1
            hi0, lo0 = _mulhilo64(xp, c0, _PHILOX_M0)
            hi1, lo1 = _mulhilo64(xp, c2, _PHILOX_M1)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def philox_uniform(xp, seed, elements):
    """float64 uniforms in [0, 1): element e (a uint64 array of flat indices) of numpy's
    `Philox(key=seed).random_raw()` stream — word e % 4 of the block at counter e // 4 + 1 (numpy increments the
    counter before each block) — mapped as Generator.random does, (u >> 11)·2⁻⁵³."""
    elements = xp.asarray(elements, dtype=xp.uint64)
    if xp is not numpy and hasattr(xp, "RawModule"):
        # on a device: one launch of the same Philox in CUDA (kernels/cuda_random.py, bit-identical) instead of
        # the ten rounds as array operations (~400 launches); the key as the launch's two scalars, as the array
        # operations took it (no upload)
        elements = xp.ascontiguousarray(elements)
        out = xp.empty(elements.shape, dtype=xp.float64)
        UNIFORM.launch(xp, "philox_uniform_keyed", elements.size, elements, out, int(seed) & _SEED_MASK,
                                  (int(seed) >> 64) & _SEED_MASK, elements.size)
        return out
    zero = xp.zeros((), dtype=xp.uint64)
    words = philox4x64_10(xp, (elements // numpy.uint64(4) + numpy.uint64(1), zero, zero, zero),
                          (int(seed) & _SEED_MASK, (int(seed) >> 64) & _SEED_MASK))
    lane = elements % numpy.uint64(4)
    word = xp.where(lane == 0, words[0], xp.where(lane == 1, words[1], xp.where(lane == 2, words[2], words[3])))
    return (word >> _U11).astype(xp.float64) * (1.0 / (1 << 53))


def _uniform_host(seed, start, stop):
    bit_generator = numpy.random.Philox(key=int(seed) & _SEED_MASK)
    first_block, skip = divmod(start, _OUTPUTS_PER_COUNTER)
    if first_block:
        bit_generator.advance(first_block)
    raw = bit_generator.random_raw(skip + (stop - start))[skip:]
    return (raw >> numpy.uint64(11)).astype(numpy.float64) * (1.0 / (1 << 53))


def _logical_size(logical_shape):
    size = 1
    for dim in logical_shape:
        size *= int(dim)
    return size


def uniform_slice(xp, seed, logical_shape, start, stop):
    """float64 uniforms in [0, 1) for flat elements [start, stop) of the logical tensor.

    `seed` is any Python int (taken modulo 2**64).
    """
    size = _logical_size(logical_shape)
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= size:
        raise ValueError("uniform_slice: range [%d, %d) outside a tensor of %d elements"
                         % (start, stop, size))
    if xp is numpy:
        return _uniform_host(seed, start, stop)
    return philox_uniform(xp, seed, xp.arange(start, stop, dtype=xp.uint64))


def _local_flat_indices(xp, logical_shape, index_slices):
    """Flat logical indices (int64) of the piece x[index_slices], shaped like the piece, built where `xp` computes."""
    index_slices = tuple(index_slices) + (slice(None),) * (len(logical_shape) - len(index_slices))
    if len(index_slices) != len(logical_shape):
        raise ValueError("dropout_mask: %d slices for a %d-d tensor" % (len(index_slices), len(logical_shape)))
    dims = [int(n) for n in logical_shape]
    flat = xp.zeros((), dtype=xp.int64)
    stride = 1
    for axis in reversed(range(len(dims))):
        start, stop, step = index_slices[axis].indices(dims[axis])
        along = xp.arange(start, stop, step, dtype=xp.int64) * stride
        flat = xp.expand_dims(along, tuple(range(1, len(dims) - axis))) + flat
        stride *= dims[axis]
    return flat


def dropout_mask(xp, seed, logical_shape, rate, index_slices=()):
    """int8 keep-mask (1 = keep iff U(0,1) > rate) of the local piece
    logical[index_slices] of a tensor of shape `logical_shape`.

    The flat range covering the piece is generated, then the piece is gathered
    from it, so the mask of a piece equals the same slice of the whole mask.
    """
    if xp is not numpy:  # on the device: each element's draw straight from its index (same bits as the host)
        flat = _local_flat_indices(xp, logical_shape, index_slices)
        return (philox_uniform(xp, seed, flat.astype(xp.uint64)) > rate).astype(xp.int8)
    flat = _local_flat_indices(numpy, logical_shape, index_slices)
    if flat.size == 0:
        return numpy.zeros(flat.shape, dtype=numpy.int8)
    low, high = int(flat.min()), int(flat.max()) + 1
    uniforms = uniform_slice(numpy, seed, logical_shape, low, high)
    return (uniforms[flat - low] > rate).astype(numpy.int8)


def dropout(xp, x, mask, *, rate):
    """y = x * mask / (1 - rate)."""
    scale = 1.0 / (1.0 - rate)
    return (x * mask * scale).astype(x.dtype, copy=False)


def dropout_grad(xp, dy, mask, *, rate):
    """The host formula (the reference); the op's kernel is cuda_random.dropout_grad, one launch on a device."""
    scale = 1.0 / (1.0 - rate)
    return (dy * mask * scale).astype(dy.dtype, copy=False)


def coin_flips(xp, seed, call, device, batch_size, probability, start, stop):
    """int8 flags, 1 with `probability`, of rows [start, stop) of a batch of `batch_size` (the coin_flip op).

    The whole logical batch is drawn from one stream of (seed, call, device) and each piece keeps its rows, so any
    split of the batch gives the same flips.
    """
    draws = numpy.random.default_rng([int(seed), int(call), int(device)]).random(batch_size)
    return xp.asarray((draws[start:stop] < probability).astype(numpy.int8))


# --- the draw on a device (CUDA) ------------------------------------------------------------------------------------
# `philox_uniform` on a device: the key as the launch's two scalars (a host seed, as the array operations took it:
# no upload); its numpy twin is `philox_uniform` itself (kernels/cuda_source.py's twins: the fake device, the parity
# tests)
_UNIFORM_KEYED = philox_source.PHILOX_UNIFORM + r"""
extern "C" __global__ void philox_uniform_keyed(const unsigned long long* elements, double* out,
                                                unsigned long long key0, unsigned long long key1, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        out[i] = philox_uniform(elements[i], key0, key1);
}
"""


def _uniform_keyed_twin(elements, out, key0, key1, n):
    out.reshape(-1)[...] = philox_uniform(numpy, int(key0) | (int(key1) << 64), elements.reshape(-1))


UNIFORM = CudaModule("philox_uniform", _UNIFORM_KEYED, {"philox_uniform_keyed": _uniform_keyed_twin},
                     options=("--std=c++17", "--fmad=false"))


# --- limits team: uniform noise of a tensor's piece (gumbel_softmax in nn.Graph, ops/random_like_ops.py) ----------
def uniform_piece(xp, seed, logical_shape, index_slices, dtype):
    """U[0, 1) draws of the piece logical[index_slices] of a tensor of shape `logical_shape`, in `dtype`: element e
    of the logical tensor gets the e-th uniform of `seed` (as dropout_mask's), so the pieces of N devices are the
    slices of one device's tensor."""
    flat = _local_flat_indices(numpy if xp is numpy else xp, logical_shape, index_slices)
    if xp is not numpy:
        return philox_uniform(xp, seed, flat.astype(xp.uint64)).astype(dtype)
    if flat.size == 0:
        return numpy.zeros(flat.shape, dtype=dtype)
    low, high = int(flat.min()), int(flat.max()) + 1
    return uniform_slice(numpy, seed, logical_shape, low, high)[flat - low].astype(dtype)


# --- a generator's draws (flow.randn / normal / rand / randint / randperm eagerly, and their ops inside nn.Graph) ---
# Each is a whole logical tensor drawn from numpy's Philox keyed `key` (a host array): what an eager generator's draw
# number n gives (`key = call_key(seed, n)`, _global/generators.py), and what the job's `generator_draw_like` op
# (ops/random_like_ops.py) gives at the first call of a graph traced with the generator at that draw.
def _philox(key):
    return numpy.random.Generator(numpy.random.Philox(key=key))


def _scaled_draws(draw, logical_shape, np_dtype, scale, shift):
    """`draw(shape[, dtype])` (a Generator's standard_normal or random) in `np_dtype` (float32 drawn as float32,
    others drawn in float64 and cast), then times `scale` plus `shift` in that dtype."""
    kind = numpy.dtype(np_dtype)
    if kind == numpy.float32:
        out = draw(tuple(logical_shape), dtype=numpy.float32)
    else:
        out = draw(tuple(logical_shape)).astype(kind, copy=False)
    if scale != 1.0 or shift != 0.0:
        out = (out * kind.type(scale) + kind.type(shift)).astype(kind, copy=False)
    return out


def generator_normal(key, logical_shape, np_dtype, mean=0.0, std=1.0):
    """N(mean, std^2) draws."""
    return _scaled_draws(_philox(key).standard_normal, logical_shape, np_dtype, std, mean)


def generator_uniform(key, logical_shape, np_dtype, low=0.0, high=1.0):
    """U[low, high) draws."""
    return _scaled_draws(_philox(key).random, logical_shape, np_dtype, high - low, low)


def generator_integers(key, low, high, logical_shape, np_dtype):
    """Integers of [low, high)."""
    return _philox(key).integers(low, high, size=tuple(logical_shape), dtype=numpy.int64).astype(np_dtype,
                                                                                                 copy=False)


def generator_permutation(key, n):
    """A permutation of range(n) (int64)."""
    return _philox(key).permutation(n)
