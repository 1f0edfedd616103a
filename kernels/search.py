"""searchsorted: for each value, the insertion index into the innermost dim of a sorted sequence (OneFlow 0.9's
`searchsorted` user op, attrs `out_int32` and `right`; oneflow/user/kernels/searchsorted_kernel.cpp at v0.9.0).

Sides as numpy's: right=False gives the first index i with value <= seq[i] (seq[i-1] < value), right=True the first
with value < seq[i]. NaN sorts last, so a NaN value gets the length of its row (OneFlow's documented "size of the
innermost dimension" for a non-numerical value)."""
import numpy


def searchsorted(xp, sorted_sequence, values, *, out_int32=False, right=False):
    side = "right" if right else "left"
    dtype = numpy.int32 if out_int32 else numpy.int64
    if sorted_sequence.ndim == 1:
        return xp.searchsorted(sorted_sequence, values, side=side).astype(dtype, copy=False)
    rows = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
    vals = values.reshape(-1, values.shape[-1])
    out = xp.empty(vals.shape, dtype=dtype)
    for i in range(rows.shape[0]):  # one sorted row per leading index (numpy's searchsorted takes 1-D sequences)
        out[i] = xp.searchsorted(rows[i], vals[i], side=side)
    return out.reshape(values.shape)
