"""Random draws of the legacy `flow.random` ops, from the counter-based streams of random.py so that no value
depends on how a tensor is split: bernoulli (each element's uniform is its flat logical index's), and the random
batch permutation.
"""
import numpy

from . import random as random_k
from .random import _local_flat_indices


def uniform_piece(xp, key, logical_shape, index_slices=()):
    """float64 uniforms in [0, 1) of the piece logical[index_slices] of a tensor of `logical_shape`: the same
    numbers as that slice of the whole tensor's draw."""
    flat = _local_flat_indices(numpy if xp is numpy else xp, logical_shape, index_slices)
    if xp is not numpy:
        return random_k.philox_uniform(xp, key, flat.astype(xp.uint64))
    if flat.size == 0:
        return numpy.zeros(flat.shape)
    low, high = int(flat.min()), int(flat.max()) + 1
    return random_k.uniform_slice(numpy, key, logical_shape, low, high)[flat - low]


def bernoulli(xp, p, key, logical_shape, index_slices, dtype):
    """1 with probability p (each element of p its own probability), else 0, in `dtype`."""
    u = uniform_piece(xp, key, logical_shape, index_slices)
    return (u < p).astype(dtype)


def batch_permutation(xp, seed, call, n):
    """int32 permutation of range(n): a fresh one per call of the op."""
    return xp.asarray(numpy.random.default_rng([int(seed) & (2 ** 63 - 1), int(call)]).permutation(n)
                      .astype(numpy.int32))
