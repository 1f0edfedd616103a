"""searchsorted: for each value, the insertion index into the innermost dim of a sorted sequence (OneFlow 0.9's
`searchsorted` user op, attrs `out_int32` and `right`; oneflow/user/kernels/searchsorted_kernel.cpp at v0.9.0).

On a sorted sequence, numpy's sides: right=False gives the first index i with value <= seq[i], right=True the
first with value < seq[i]; a NaN value gets the length of its row (OneFlow's documented "size of the innermost
dimension" for a non-numerical value). On any sequence, the indices OneFlow's own bisection gives."""
import numpy


def searchsorted(xp, sorted_sequence, values, *, out_int32=False, right=False):
    """OneFlow's binary search itself (search_sorted_kernel_util.h @ v0.9.0: cus_lower_bound / cus_upper_bound, the
    midpoint start + (end - start) / 2), run for every value at once, so that a sequence that is not sorted gives
    OneFlow's (and torch's) indices too, not those of another search."""
    dtype = numpy.int32 if out_int32 else numpy.int64
    n = sorted_sequence.shape[-1]
    if sorted_sequence.ndim == 1:
        rows = sorted_sequence.reshape(1, n)
        vals = values.reshape(1, -1)
    else:
        rows = sorted_sequence.reshape(-1, n)
        vals = values.reshape(rows.shape[0], values.shape[-1])
    start = xp.zeros(vals.shape, dtype=numpy.int64)
    end = xp.full(vals.shape, n, dtype=numpy.int64)
    # each step at least halves every range (size s -> at most s // 2), so n.bit_length() steps finish them all:
    # a fixed count, no device -> host read of "any range left?" per step
    for _ in range(int(n).bit_length()):
        active = start < end
        mid = start + ((end - start) >> 1)
        at = xp.minimum(mid, n - 1)  # (a finished value's index may be n: read anything, it stays put)
        mid_val = rows[0][at] if rows.shape[0] == 1 else xp.take_along_axis(rows, at, axis=1)
        # lower bound: go right unless mid_val >= value; upper bound: unless mid_val > value (NaN goes right)
        go_right = ~(mid_val > vals) if right else ~(mid_val >= vals)
        start = xp.where(active & go_right, mid + 1, start)
        end = xp.where(active & ~go_right, mid, end)
    return start.astype(dtype).reshape(values.shape)
