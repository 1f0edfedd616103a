"""unique_with_counts and indexed_slices_reduce_sum as OneFlow v0.3.4's CPU kernels compute them
(`oneflow/core/kernel/unique_kernel_util.cpp`, `indexed_slices_reduce_sum_kernel_util.cpp`): unique values in the
order of their first occurrence; the outputs keep the input's length, valid up to num_unique (the rest is 0 here,
unspecified in OneFlow).
"""
import numpy

from . import indexing


def _first_occurrence(xp, flat):
    """(unique values in first-occurrence order, index of each entry's value among them, counts)."""
    host = numpy.asarray(flat.get() if hasattr(flat, "get") else flat)
    values, first, inverse, counts = numpy.unique(host, return_index=True, return_inverse=True, return_counts=True)
    order = numpy.argsort(first, kind="stable")
    rank = numpy.empty_like(order)
    rank[order] = numpy.arange(order.size)
    return values[order], rank[inverse.reshape(-1)], counts[order]


def _first_occurrence_padded(xp, flat):
    """`_first_occurrence` on a device without reading anything back: (unique values padded with zeros to the input's
    length n, index of each entry's value among them, counts padded to n, k as a (1,) int64 array). Equal values
    are grouped by a stable sort, each group's first position is its first sorted entry, and a group's rank is the
    number of first positions before its own; the scatters write every entry (the ones that have nothing to write
    go to a spare slot n, dropped), so no array's size depends on the data."""
    n = flat.shape[0]
    positions = xp.arange(n, dtype=numpy.int64)
    order = xp.argsort(flat, kind="stable")
    ordered = flat[order]
    new = xp.ones((n,), dtype=bool)
    if n > 1:
        differs = ordered[1:] != ordered[:-1]
        if numpy.dtype(flat.dtype).kind in "fc":  # NaNs are one value, as numpy.unique counts them
            differs = differs & ~(xp.isnan(ordered[1:]) & xp.isnan(ordered[:-1]))
        new[1:] = differs
    group = xp.cumsum(new) - 1  # the group of each sorted entry
    group_first = xp.zeros((n + 1,), dtype=numpy.int64)
    group_first[xp.where(new, group, n)] = order
    first = xp.zeros((n,), dtype=numpy.int64)
    first[order] = group_first[group]  # each entry's first occurrence
    is_first = first == positions
    rank = xp.cumsum(is_first) - 1
    idx = rank[first]
    values = xp.zeros((n + 1,), dtype=flat.dtype)
    values[xp.where(is_first, rank, n)] = flat
    counts = xp.bincount(idx, minlength=n)[:n]
    return values[:n], idx, counts, xp.sum(is_first).astype(numpy.int64).reshape(1)


def unique_with_counts(xp, x, *, out_idx):
    """(y, idx, count, num_unique): y[:k] the k unique values of the 1-d x in order of first occurrence, idx[i] the
    position of x[i] in y, count[j] how often y[j] occurs, num_unique = [k]."""
    if xp is not numpy:
        y, idx, counts, k = _first_occurrence_padded(xp, x)
        return y, idx.astype(out_idx), counts.astype(out_idx), k.astype(out_idx)
    values, idx, counts = _first_occurrence(xp, x)
    n, k = x.shape[0], values.size
    y = numpy.zeros(n, dtype=x.dtype)
    y[:k] = values
    count = numpy.zeros(n, dtype=out_idx)
    count[:k] = counts
    return (xp.asarray(y), xp.asarray(idx.astype(out_idx)), xp.asarray(count),
            xp.asarray(numpy.array([k], dtype=out_idx)))


def indexed_slices_reduce_sum(xp, indices, values):
    """(unique indices (n,), their summed value rows (n, m), num_unique int64 [k]): the rows of `values` that share
    an index added together, indices in first-occurrence order."""
    n = indices.size
    m = values.size // n if n else 0
    if xp is not numpy:  # on a device: nothing read back (`_first_occurrence_padded`)
        y_indices, idx, _, k = _first_occurrence_padded(xp, indices.reshape(-1))
        y_values = xp.zeros((n, m), dtype=values.dtype)
        if n:  # the sums in numpy's order (indexing.add_at_rows: no atomics, the same bits run after run)
            indexing.add_at_rows(xp, y_values, idx, values.reshape(n, m))
        return y_indices, y_values, k
    uniq, idx, _ = _first_occurrence(xp, indices.reshape(-1))
    k = uniq.size
    y_indices = numpy.zeros(n, dtype=indices.dtype)
    y_indices[:k] = uniq
    y_values = xp.zeros((n, m), dtype=values.dtype)
    if n:
        if hasattr(xp.add, "at"):
            xp.add.at(y_values, xp.asarray(idx), values.reshape(n, m))
        else:  # pragma: no cover
            import cupyx

            cupyx.scatter_add(y_values, xp.asarray(idx), values.reshape(n, m))
    return xp.asarray(y_indices), y_values, xp.asarray(numpy.array([k], dtype=numpy.int64))


def square_sum(xp, x):
    """(1,): the sum of x's squares, in x's dtype."""
    return xp.reshape(xp.sum(x * x), (1,)).astype(x.dtype, copy=False)


def multi_square_sum(xp, *xs):
    """(1,): the sum of the squares of every x."""
    return xp.reshape(sum(xp.sum(x * x) for x in xs), (1,)).astype(xs[0].dtype, copy=False)


def categorical_ordinal_encode(xp, x, table, size):
    """Each hash value of x replaced by its ordinal (1, 2, … in order of first appearance over every call),
    kept in the open-addressing `table` (pairs key, value; key 0 = empty slot) and the counter `size`, both
    updated in place (OneFlow's CategoricalOrdinalEncodeKernelUtil). A host loop: on a device the table, the
    counter and x come down (explicit copies, a wait for the device) and the table and counter go back up."""
    on_device = xp is not numpy
    host_table, host_size = (table.get(), size.get()) if on_device else (table, size)
    capacity = table.shape[0] // 2
    out = numpy.empty(x.shape, dtype=x.dtype)
    flat_in, flat_out = (x.get() if on_device else numpy.asarray(x)).reshape(-1), out.reshape(-1)
    for i, h in enumerate(flat_in):
        for count in range(capacity):
            idx = (int(h) + count) % capacity
            key = host_table[2 * idx]
            if key == h:
                flat_out[i] = host_table[2 * idx + 1]
                break
            if key == 0:
                host_size[0] += 1
                host_table[2 * idx], host_table[2 * idx + 1] = h, host_size[0]
                flat_out[i] = host_size[0]
                break
        else:
            raise RuntimeError("categorical_ordinal_encode: the table of capacity %d is full" % capacity)
    if on_device:
        table[...] = xp.asarray(host_table)
        size[...] = xp.asarray(host_size)
    return xp.asarray(out)
