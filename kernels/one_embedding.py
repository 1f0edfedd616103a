"""Array functions of `flow.one_embedding` (OneFlow 0.9's sharded key-value embedding): the sharding hash, the
unique ids of a batch with their inverse, the per-key initial values and the gradient sum of repeated ids.

Facts from OneFlow v0.9.0: `oneflow/user/kernels/one_embedding_kernels.cu` (InitValueKernel: element col of key
id's line is the first draw of curand_init(seed, id, col)), `oneflow/core/embedding/hash_functions.cuh` (xxh64 of one 64-bit word, the sharding
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


# --- cuRAND's Philox4x32-10 stream (OneFlow's initial values) -------------------------------------------------------
# OneFlow 0.9 draws element `col` of the line of key `id` as the first number of curand_init(seed, id, col)
# (InitValueKernel, user/kernels/one_embedding_kernels.cu): a pure function of (module seed, key, column), computed
# here with cuRAND's generator and conversions, so a key's initial line is OneFlow's (uniform: to the float; normal:
# to an ulp or so, cuRAND's __sincosf being an approximation).
_PM0, _PM1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_PW0, _PW1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_LO32 = np.uint64(0xFFFFFFFF)
_INV32 = np.float32(2.3283064e-10)  # CURAND_2POW32_INV
_INV32_2PI = np.float32(np.float32(2.3283064e-10) * np.float32(6.2831855))  # CURAND_2POW32_INV_2PI


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 (Salmon et al., SC'11; cuRAND's curand_Philox4x32_10) over uint32 arrays."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint32) for c in (c0, c1, c2, c3))
    k0, k1 = np.asarray(k0, np.uint32), np.asarray(k1, np.uint32)
    with np.errstate(over="ignore"):
        for r in range(10):
            p0 = c0.astype(np.uint64) * _PM0
            p1 = c2.astype(np.uint64) * _PM1
            hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), (p0 & _LO32).astype(np.uint32)
            hi1, lo1 = (p1 >> np.uint64(32)).astype(np.uint32), (p1 & _LO32).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
            if r < 9:
                k0, k1 = k0 + _PW0, k1 + _PW1
    return c0, c1, c2, c3


def curand_words(subsequence, offset, seed, count):
    """The first `count` 32-bit outputs of curand_init(seed, subsequence, offset) (curandStatePhilox4_32_10_t):
    the counter's high half is the subsequence, its low half offset // 4, the stream starts at word offset % 4."""
    sub = np.asarray(subsequence, np.uint64)
    offset = np.asarray(offset, np.uint64)
    seed = int(seed) % (1 << 64)
    k0, k1 = np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)
    z, w = (sub & _LO32).astype(np.uint32), (sub >> np.uint64(32)).astype(np.uint32)
    out = []
    for j in range(count):
        pos = offset + np.uint64(j)
        block = pos >> np.uint64(2)
        words = philox4x32_10((block & _LO32).astype(np.uint32), (block >> np.uint64(32)).astype(np.uint32), z, w,
                              k0, k1)
        word = (pos & np.uint64(3)).astype(np.int64)
        out.append(np.choose(word, words))
    return out


def _fmaf(a, b, c):
    """fmaf(a, b, c) in float32 (nvcc contracts `a * b + c` into one)."""
    return (np.asarray(a, np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)


def curand_uniform_from(x):
    """curand_uniform's float in (0, 1] from a 32-bit output."""
    return _fmaf(x.astype(np.float32), _INV32, _INV32 / np.float32(2))


def curand_normal_from(x, y):
    """curand_normal's first value (Box-Muller, _curand_box_muller) from two consecutive 32-bit outputs."""
    u = curand_uniform_from(x)
    v = _fmaf(y.astype(np.float32), _INV32_2PI, _INV32_2PI / np.float32(2))
    s = np.sqrt(np.float32(-2.0) * np.log(u.astype(np.float64)).astype(np.float32)).astype(np.float32)
    return (np.sin(v.astype(np.float64)).astype(np.float32) * s).astype(np.float32)


def _curand_subsequence(keys):
    """The key as curand_init's unsigned long long subsequence: signed keys sign-extended, unsigned zero-extended."""
    keys = np.asarray(keys)
    if keys.dtype.kind == "u":
        return keys.astype(np.uint64)
    return keys.astype(np.int64).view(np.uint64)


def initial_lines(xp, keys, table_ids, columns_per_table, column_dims, states, storage_dim, seed, dtype):
    """The initial line of each key: its embedding columns drawn by its table's column initializers (element `col`
    of a line: the first draw of curand_init(seed, key, col), as OneFlow draws it), then the optimizer states (`states`: constant values, each a block of sum(column_dims)), zeros to `storage_dim`.

    `columns_per_table[t][c]`: the initializer dict of table t's column c ({"type": "uniform", "low", "high"} |
    {"type": "normal", "mean", "std"} | {"type": "constant", "value"})."""
    n = len(keys)
    dim = int(sum(column_dims))
    out = xp.zeros((n, storage_dim), dtype=dtype)
    table_ids = xp.asarray(table_ids, dtype=np.int64)
    offset = 0
    sub = _curand_subsequence(keys)
    for c, width in enumerate(column_dims):
        block = np.zeros((n, width), np.float32)
        for t, columns in enumerate(columns_per_table):
            rows = np.nonzero(table_ids == t)[0]
            if rows.size == 0:
                continue
            init = columns[c]["initializer"]
            if init["type"] == "constant":
                block[rows] = np.float32(init["value"])
                continue
            k = np.repeat(sub[rows], width)
            col = np.tile(np.arange(offset, offset + width, dtype=np.uint64), rows.size)
            if init["type"] == "uniform":
                low, high = np.float32(init["low"]), np.float32(init["high"])
                vals = _fmaf(curand_uniform_from(curand_words(k, col, seed, 1)[0]), high - low, low)
            else:
                x, y = curand_words(k, col, seed, 2)
                vals = _fmaf(curand_normal_from(x, y), np.float32(init["std"]), np.float32(init["mean"]))
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
