"""The raw-file format of OneFlow 0.9's `nn.RawReader` (`raw_reader` op, oneflow/user/kernels/raw_reader_kernel.cpp
v0.9.0): files of fixed-size instances (`prod(shape)` elements of `dtype`, native byte order, no header) read as
one stream — the files in the order given, empty ones skipped, the stream wrapping from the end of the last file to
the start of the first.

The stream is cut into blocks of `block_size` instances: the local batch (batch_size / shards) when not shuffling,
else `shuffle_block_size` (0: the local batch; at most the local batch); there are ceil(instances / batch_size)
batches of batch_size / block_size blocks each, block i starting at instance i · block_size of the wrapped stream.
Sequentially, call k reads batch k mod batches; a shard reads its blocks of that batch (shard · local blocks
onwards). Shuffled, the blocks are permuted once, then batches are drawn one at a time without replacement until
all were read (then again: an epoch), and each shard moves on to the next shard's blocks every epoch — OneFlow's
scheme, drawn from numpy's PCG64 seeded with the seed, where OneFlow's kernel draws from std::mt19937_64 (so the
shuffled order is not OneFlow's draw for draw; sequential reading is the same instances as OneFlow's).

Pure functions over files; the op (ops/raw_reader_ops.py) keeps one `RawStream` per reader and device.
"""
import os

import numpy as np


def instance_counts(files, instance_bytes):
    """[(path, instances)] of the non-empty files; a size that is not a whole number of instances is refused."""
    out = []
    for path in files:
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise FileNotFoundError("RawReader: cannot read file %r: %s" % (path, e.strerror or e)) from None
        if size == 0:
            continue
        if size % instance_bytes:
            raise ValueError("RawReader: file %r holds %d bytes, not a multiple of the instance size (%d bytes): "
                             "file_size must be a multiple of instance_size" % (path, size, instance_bytes))
        out.append((path, size // instance_bytes))
    if not out:
        raise ValueError("RawReader: the files %r hold no instance" % (list(files),))
    return out


class RawStream:
    """One device's reader: `next_batch()` gives its (local_batch,) + shape array of each call in turn."""

    def __init__(self, files, shape, np_dtype, batch_size, random_shuffle, shuffle_block_size, seed,
                 shard_index, num_shards):
        self.shape, self.np_dtype = tuple(int(d) for d in shape), np.dtype(np_dtype)
        per_instance = int(np.prod(self.shape, dtype=np.int64))
        if per_instance <= 0:
            raise ValueError("RawReader: instance size must be greater than 0, got shape %s" % (self.shape,))
        if batch_size <= 0:
            raise ValueError("RawReader: batch size must be greater than 0, got %d" % batch_size)
        if batch_size % num_shards:
            raise ValueError("RawReader: batch_size (%d) must be a multiple of num_shards (%d)"
                             % (batch_size, num_shards))
        self.local = batch_size // num_shards
        block = int(shuffle_block_size)
        if block <= 0 or not random_shuffle:
            block = self.local
        if batch_size % block:
            raise ValueError("RawReader: batch_size (%d) must be a multiple of block_size (%d)" % (batch_size, block))
        self.block = min(block, self.local)
        self.instance_bytes = per_instance * self.np_dtype.itemsize
        self.files = instance_counts(files, self.instance_bytes)
        self.total = sum(n for _, n in self.files)
        self.num_batches = -(-self.total // batch_size)
        self.blocks_per_batch = batch_size // self.block
        self.blocks_per_local = self.local // self.block
        blocks = np.arange(self.num_batches * self.blocks_per_batch, dtype=np.int64)
        self.shard, self.num_shards = shard_index, num_shards
        self.random = bool(random_shuffle)
        if self.random:
            self.rng = np.random.Generator(np.random.PCG64(int(seed) & (2 ** 63 - 1)))
            blocks = self.rng.permutation(blocks)
            self.batches = list(range(self.num_batches))
        self.blocks = blocks
        self.position = 0  # sequential: the next batch; shuffled: the position in the batch draw
        self._data = None

    def _stream(self):
        if self._data is None:  # the files' instances, in order (read once, then sliced)
            parts = [np.fromfile(path, dtype=self.np_dtype).reshape((n,) + self.shape) for path, n in self.files]
            self._data = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return self._data

    def _next_batch_index(self):
        if not self.random:
            b = self.position
            self.position = (b + 1) % self.num_batches
            return b, self.shard
        pos = self.position
        target = int(self.rng.integers(pos, self.num_batches))
        self.batches[pos], self.batches[target] = self.batches[target], self.batches[pos]
        b, shard = self.batches[pos], self.shard
        self.position = (pos + 1) % self.num_batches
        if self.position == 0:  # a new epoch: each shard reads the next shard's blocks
            self.shard = (self.shard + 1) % self.num_shards
        return b, shard

    def next_batch(self):
        b, shard = self._next_batch_index()
        first = b * self.blocks_per_batch + shard * self.blocks_per_local
        data = self._stream()
        rows = []
        for i in range(self.blocks_per_local):
            start = int(self.blocks[first + i]) * self.block
            rows.append((start + np.arange(self.block)) % self.total)
        return data[np.concatenate(rows)]
