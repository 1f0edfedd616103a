"""Array functions of `flow.one_embedding` (OneFlow 0.9's sharded key-value embedding): the sharding hash, the
unique ids of a batch with their inverse, the per-key initial values and the gradient sum of repeated ids.

Facts from OneFlow v0.9.0: `oneflow/core/embedding/hash_functions.cuh` (xxh64 of one 64-bit word, the sharding
hash's seed 1: a key lives on shard `xxh64(key, 1) % parallel_num`; 32-bit keys are zero-extended),
`python/oneflow/one_embedding.py` (a line is the embedding followed by the optimizer's states, initialised per
column by the table's initializer; the states by constants).
"""
import numpy as np

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
SHARDING_HASH_SEED = 1


def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def xxh64_uint64(xp, v, seed):
    """xxh64 of each 64-bit word of `v` (uint64 array) with `seed` (OneFlow's `xxh64_uint64`)."""
    v = xp.asarray(v, dtype=np.uint64)
    with np.errstate(over="ignore"):
        acc = np.uint64((int(seed) + 0x27D4EB2F165667C5 + 8) % (1 << 64))
        rnd = _rotl(v * _P2, 31) * _P1  # XXH64_round(0, v)
        acc = acc ^ rnd
        acc = _rotl(acc, 27) * _P1 + _P4
        acc = acc ^ (acc >> np.uint64(33))
        acc = acc * _P2
        acc = acc ^ (acc >> np.uint64(29))
        acc = acc * _P3
        acc = acc ^ (acc >> np.uint64(32))
    return acc


def key_words(xp, keys):
    """The 64-bit word OneFlow hashes for each key: int64/uint64 bit-cast, int32/uint32 zero-extended."""
    keys = xp.asarray(keys)
    if keys.dtype.itemsize == 4:
        return keys.astype(np.uint32).astype(np.uint64)
    return keys.astype(np.int64).view(np.uint64) if keys.dtype.kind == "i" else keys.astype(np.uint64)


def shard_of(xp, keys, parallel_num):
    """The shard (rank) holding each key: ShardingHash()(key) % parallel_num."""
    h = xxh64_uint64(xp, key_words(xp, keys), SHARDING_HASH_SEED)
    return (h % np.uint64(parallel_num)).astype(np.int64)


def unique_with_inverse(xp, ids):
    """(unique ids in first-seen order, inverse: ids == unique[inverse]) of a flat id array."""
    ids = xp.asarray(ids).reshape(-1)
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return uniq[order], rank[inverse.reshape(-1)]


def segment_sum(xp, values, segment_ids, num_segments):
    """Row sums of `values` (n, d) grouped by `segment_ids` (n,): repeated ids' gradients add up."""
    out = xp.zeros((num_segments,) + tuple(values.shape[1:]), dtype=values.dtype)
    np.add.at(out, segment_ids, values)
    return out


def _uniform01(xp, keys, table_ids, column, stream, seed):
    """A uniform draw in (0, 1) per key, a pure function of (seed, table, key, column, stream): the same key gets
    the same initial row whatever batch, order or rank first sees it."""
    words = key_words(xp, keys)
    with np.errstate(over="ignore"):
        salt = np.uint64((int(seed) * 0x100000001B3 + int(column) * 0x9E3779B1 + int(stream) * 0x85EBCA77)
                         % (1 << 64))
        h = xxh64_uint64(xp, words ^ (table_ids.astype(np.uint64) * _P3), salt)
        h = xxh64_uint64(xp, h, salt ^ np.uint64(0x5BD1E995))
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))


def initial_lines(xp, keys, table_ids, columns_per_table, column_dims, states, storage_dim, seed, dtype):
    """The initial line of each key: its embedding columns drawn by its table's column initializers, then the
    optimizer states (`states`: constant values, each a block of sum(column_dims)), zeros to `storage_dim`.

    `columns_per_table[t][c]`: the initializer dict of table t's column c ({"type": "uniform", "low", "high"} |
    {"type": "normal", "mean", "std"} | {"type": "constant", "value"})."""
    n = len(keys)
    dim = int(sum(column_dims))
    out = xp.zeros((n, storage_dim), dtype=dtype)
    table_ids = xp.asarray(table_ids, dtype=np.int64)
    offset = 0
    for c, width in enumerate(column_dims):
        block = np.zeros((n, width), dtype=np.float64)
        for t, columns in enumerate(columns_per_table):
            rows = np.nonzero(table_ids == t)[0]
            if rows.size == 0:
                continue
            init = columns[c]["initializer"]
            k = np.repeat(keys[rows], width)
            tid = np.repeat(table_ids[rows], width)
            col = np.tile(np.arange(width), rows.size) + offset
            if init["type"] == "constant":
                block[rows] = float(init["value"])
                continue
            # the element's column enters the key word, so every element of a line has its own draw
            mixed = (key_words(xp, k) ^ (col.astype(np.uint64) << np.uint64(40))).view(np.int64)
            u1 = _uniform01(xp, mixed, tid, c, 1, seed)
            if init["type"] == "uniform":
                vals = float(init["low"]) + (float(init["high"]) - float(init["low"])) * u1
            else:
                u2 = _uniform01(xp, mixed, tid, c, 2, seed)
                vals = float(init["mean"]) + float(init["std"]) * np.sqrt(-2.0 * np.log(u1)) * np.cos(
                    2.0 * np.pi * u2)
            block[rows] = vals.reshape(rows.size, width)
        out[:, offset:offset + width] = block.astype(dtype)
        offset += width
    for s, value in enumerate(states):
        start = dim * (s + 1)
        if start + dim > storage_dim:
            raise ValueError("one_embedding: a line of %d elements holds no optimizer state %d of %d elements"
                             % (storage_dim, s, dim))
        out[:, start:start + dim] = value
    return out
