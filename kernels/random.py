"""Counter-based random numbers that do not depend on how a tensor is split.

Element e (flat C-order index) of a logical tensor drawn with seed s always gets the
same uniform: the e-th 64-bit output of numpy's Philox4x64 keyed by s, mapped to
[0, 1) as Generator.random does ((u >> 11) * 2**-53). Philox is a counter-based
generator: each counter value gives 4 outputs and `advance` jumps to any counter,
so any slice is generated without generating what precedes it. Consequently
concatenating slices gives exactly the whole, whatever the number of devices.

Numbers are generated on the host with numpy and moved to `xp` (cupy) afterwards.
"""
import zlib

import numpy

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
    return xp.asarray(_uniform_host(seed, start, stop))


def _local_flat_indices(logical_shape, index_slices):
    """Flat logical indices of the piece x[index_slices], shaped like the piece."""
    index_slices = tuple(index_slices) + (slice(None),) * (len(logical_shape) - len(index_slices))
    if len(index_slices) != len(logical_shape):
        raise ValueError("dropout_mask: %d slices for a %d-d tensor" % (len(index_slices), len(logical_shape)))
    ranges = [numpy.arange(*s.indices(int(n))) for s, n in zip(index_slices, logical_shape)]
    if any(r.size == 0 for r in ranges):
        return numpy.zeros([r.size for r in ranges], dtype=numpy.int64)
    if not ranges:
        return numpy.zeros((), dtype=numpy.int64)
    return numpy.ravel_multi_index(numpy.ix_(*ranges), tuple(int(n) for n in logical_shape))


def dropout_mask(xp, seed, logical_shape, rate, index_slices=()):
    """int8 keep-mask (1 = keep iff U(0,1) > rate) of the local piece
    logical[index_slices] of a tensor of shape `logical_shape`.

    The flat range covering the piece is generated, then the piece is gathered
    from it, so the mask of a piece equals the same slice of the whole mask.
    """
    flat = _local_flat_indices(logical_shape, index_slices)
    if flat.size == 0:
        return xp.zeros(flat.shape, dtype=xp.int8)
    low, high = int(flat.min()), int(flat.max()) + 1
    uniforms = uniform_slice(numpy, seed, logical_shape, low, high)
    mask = (uniforms[flat - low] > rate).astype(numpy.int8)
    return xp.asarray(mask)


def dropout(xp, x, mask, *, rate):
    """y = x * mask / (1 - rate)."""
    scale = 1.0 / (1.0 - rate)
    return (x * mask * scale).astype(x.dtype, copy=False)


def dropout_grad(xp, dy, mask, *, rate):
    scale = 1.0 / (1.0 - rate)
    return (dy * mask * scale).astype(dy.dtype, copy=False)


def coin_flips(xp, seed, call, device, batch_size, probability, start, stop):
    """int8 flags, 1 with `probability`, of rows [start, stop) of a batch of `batch_size` (the coin_flip op).

    The whole logical batch is drawn from one stream of (seed, call, device) and each piece keeps its rows, so any
    split of the batch gives the same flips.
    """
    draws = numpy.random.default_rng([int(seed), int(call), int(device)]).random(batch_size)
    return xp.asarray((draws[start:stop] < probability).astype(numpy.int8))
