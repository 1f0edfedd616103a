"""dynamic_binary_split / dynamic_binary_concat: a (dynamic) blob sent as int8 byte chunks of fixed capacities and
put back together (OneFlow v0.3.4 `oneflow/core/kernel/dynamic_binary_split_concat_kernel.cpp`).

The bytes are a header — the number of axes and each axis' size, int64 little-endian — followed by the body in C
order (OneFlow sends its own blob header the same way). Chunks are filled as OneFlow's ForwardShape does: from the
largest capacity down, a chunk takes its whole capacity while that many bytes remain, else nothing; whatever is
left at the end goes into the last chunk.
"""
import numpy


def chunk_sizes(base_shift, out_num):
    """The capacities of the chunks, largest first (OneFlow: base, base, 2 base, 4 base, … reversed)."""
    sizes, current = [], 1 << base_shift
    for i in range(out_num):
        sizes.append(current)
        if i > 0:
            current <<= 1
    return sizes[::-1]


def dynamic_binary_split(xp, x, *, capacities):
    data = numpy.ascontiguousarray(x.get() if hasattr(x, "get") else x)
    header = numpy.array([data.ndim] + list(data.shape), dtype="<i8").tobytes()
    raw = numpy.frombuffer(header + data.tobytes(), dtype=numpy.int8)
    if raw.size > sum(capacities):
        raise ValueError("dynamic_binary_split: the blob needs %d bytes, the chunks hold %d" % (
            raw.size, sum(capacities)))
    sizes, remain = [], raw.size
    for cap in capacities:
        take = cap if remain >= cap else 0
        sizes.append(take)
        remain -= take
    if remain:
        sizes[-1] = remain
    out, offset = [], 0
    for size in sizes:
        out.append(xp.asarray(raw[offset:offset + size].copy()))
        offset += size
    return tuple(out)


def dynamic_binary_concat(xp, *chunks, dtype):
    raw = numpy.concatenate([numpy.asarray(c.get() if hasattr(c, "get") else c) for c in chunks]).tobytes()
    ndim = int(numpy.frombuffer(raw[:8], dtype="<i8")[0])
    shape = tuple(int(d) for d in numpy.frombuffer(raw[8:8 + 8 * ndim], dtype="<i8"))
    body = numpy.frombuffer(raw[8 + 8 * ndim:], dtype=dtype)
    return xp.asarray(body.reshape(shape).copy())
