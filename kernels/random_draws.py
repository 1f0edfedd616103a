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


def partial_fc_sample(xp, weight, label, *, num_sample_per_rank, num_classes_per_rank, shard, seed, call):
    """OneFlow's distributed_partial_fc_sample on one shard of the class weights (v0.3.4
    `oneflow/user/kernels/partial_fc_sample_kernel.cu`): the shard's positive classes (those among the labels), in
    ascending order, then random other classes of the shard until num_sample_per_rank; -> (every label mapped to
    its position in the concatenated samples of all shards, this shard's sampled class ids, their weight rows)."""
    labels = numpy.asarray(label.get() if hasattr(label, "get") else label).astype(numpy.int64)
    lo = shard * num_classes_per_rank
    local = numpy.unique(labels[(labels >= lo) & (labels < lo + num_classes_per_rank)]) - lo
    if local.size > num_sample_per_rank:
        raise ValueError("distributed_partial_fc_sample: shard %d has %d positive classes, more than the %d samples "
                         "per shard" % (shard, local.size, num_sample_per_rank))
    rng = numpy.random.default_rng([int(seed) & (2 ** 63 - 1), int(call), int(shard)])
    others = numpy.setdiff1d(numpy.arange(num_classes_per_rank), local)
    negatives = rng.permutation(others)[:num_sample_per_rank - local.size]
    picked = numpy.concatenate([local, negatives])
    # every label's position: its shard's block, then its rank among that shard's (sorted) positives
    shards = labels // num_classes_per_rank
    mapped = numpy.empty_like(labels)
    for s in numpy.unique(shards):
        mine = shards == s
        positives = numpy.unique(labels[mine])
        mapped[mine] = s * num_sample_per_rank + numpy.searchsorted(positives, labels[mine])
    sampled_weight = weight[xp.asarray(picked)]
    return (xp.asarray(mapped.astype(label.dtype)), xp.asarray((picked + lo).astype(label.dtype)), sampled_weight)
