"""Philox4x64-10 over arrays (kernels/random.py) gives numpy.random.Philox's bits: the block function for any
256-bit counter and 128-bit key, the uniform stream for any seed, offset and size, the dropout mask on a device
module equal to the host's (the CUDA kernels' bits: tests/test_cuda_kernels.py)."""
import numpy as np
import pytest

import strict_device
from oneflow_compat.kernels import random as rnd

MASK64 = (1 << 64) - 1


def _words(value):
    return [np.uint64((value >> (64 * i)) & MASK64) for i in range(4)]


@pytest.mark.parametrize("key", [0, 1, 0x0123456789ABCDEF, MASK64, (1 << 64) + 5, (1 << 128) - 1])
@pytest.mark.parametrize("counter", [0, 1, 41, MASK64 - 1, MASK64, (1 << 64) + 3, (1 << 192) - 1, (1 << 256) - 2])
def test_block_function_equals_numpy_philox(key, counter):
    # numpy's Philox increments its counter, then emits the four words of that counter's block
    reference = np.random.Philox(key=key, counter=counter).random_raw(4)
    block = rnd.philox4x64_10(np, [np.asarray(w) for w in _words(counter + 1)], (key & MASK64, key >> 64))
    np.testing.assert_array_equal(np.stack(block), reference)


def test_block_function_over_many_counters_at_once():
    key = 0xDEADBEEF12345678
    counters = np.arange(1, 301, dtype=np.uint64)
    zero = np.zeros((), np.uint64)
    block = np.stack(rnd.philox4x64_10(np, (counters, zero, zero, zero), (key, 0)), axis=1).ravel()
    np.testing.assert_array_equal(block, np.random.Philox(key=key).random_raw(1200))


@pytest.mark.parametrize("seed", [0, 7, 1234, 2 ** 31 - 1, 2 ** 63 + 11, MASK64])
@pytest.mark.parametrize("start, stop", [(0, 0), (0, 1), (0, 4), (3, 5), (5, 6), (7, 300), (1001, 1403)])
def test_uniform_stream_equals_numpy_generator(seed, start, stop):
    generator = np.random.Generator(np.random.Philox(key=seed))
    reference = generator.random(stop)[start:]  # (u >> 11) * 2**-53, the same mapping
    got = rnd.philox_uniform(np, seed, np.arange(start, stop, dtype=np.uint64))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, reference)


def test_uniform_at_scattered_elements_equals_the_host_draw():
    rng = np.random.default_rng(3)
    for seed in rng.integers(0, 2 ** 63, size=20):
        elements = rng.integers(0, 10_000, size=50).astype(np.uint64)
        whole = rnd.uniform_slice(np, int(seed), (10_000,), 0, 10_000)
        np.testing.assert_array_equal(rnd.philox_uniform(np, int(seed), elements), whole[elements.astype(np.int64)])


@pytest.mark.parametrize("shape, piece", [((40, 30), (slice(7, 19), slice(None))),
                                          ((40, 30), (slice(None), slice(11, 30))),
                                          ((6, 5, 4), (slice(2, 5), slice(1, 4), slice(0, 3))),
                                          ((17,), (slice(3, 12),)), ((0, 3), ()), ((), ())])
def test_device_dropout_mask_equals_the_host_mask(shape, piece):
    xp = strict_device.module()
    for seed in (1, 99, rnd.call_key(1234, 5)):
        on_device = rnd.dropout_mask(xp, seed, shape, 0.4, piece)
        assert isinstance(on_device, strict_device.StrictArray)  # drawn where it is used: no host draw, no copy up
        host = rnd.dropout_mask(np, seed, shape, 0.4, piece)
        assert on_device.dtype == host.dtype == np.int8
        np.testing.assert_array_equal(on_device.get(), host)


def test_device_uniform_slice_equals_the_host_slice():
    xp = strict_device.module()
    for start, stop in [(0, 63), (13, 13), (5, 41)]:
        np.testing.assert_array_equal(rnd.uniform_slice(xp, 1234, (7, 9), start, stop).get(),
                                      rnd.uniform_slice(np, 1234, (7, 9), start, stop))
