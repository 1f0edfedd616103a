"""Compiled (numba) single-pass loops for the dense network's small kernels: the softmax cross-entropy with its
gradient, and the relu mask applied in place. Each is the computation of the numpy path beside it (`loss.py`,
`linalg.py`) — which stays the reference and the fallback — as one loop over arrays of a few hundred KB at most,
where numpy makes several calls, each with its own dispatch and temporary: on those sizes the calls, not the
arithmetic, are the cost.
tests/test_kernels_dense_jit.py checks them against the numpy paths.

`AVAILABLE` is False when numba is not installed (a dependency where its wheels exist; the extra
`oneflow_compat[fast]` asks for it anywhere) or when the environment sets ONEFLOW_COMPAT_JIT=0.
"""
import math

from .jit import AVAILABLE  # noqa: F401 (read by the kernels that choose a path)
from .jit import compiled as _jit


@_jit
def _block_sum(row, start, n):
    """Σ row[start:start + n], n <= 128, in the row's dtype and in numpy's order (its pairwise summation: eight
    running sums, then the rest one by one), so that the sums equal numpy's."""
    if n < 8:
        total = row.dtype.type(-0.0)
        for i in range(start, start + n):
            total += row[i]
        return total
    r0, r1, r2, r3 = row[start], row[start + 1], row[start + 2], row[start + 3]
    r4, r5, r6, r7 = row[start + 4], row[start + 5], row[start + 6], row[start + 7]
    i = 8
    while i < n - n % 8:
        r0 += row[start + i]
        r1 += row[start + i + 1]
        r2 += row[start + i + 2]
        r3 += row[start + i + 3]
        r4 += row[start + i + 4]
        r5 += row[start + i + 5]
        r6 += row[start + i + 6]
        r7 += row[start + i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += row[start + i]
        i += 1
    return total


@_jit
def _row_sum(row, n):
    """Σ row[:n] in the row's dtype: numpy's order up to 128 elements, its blocks of 128 added in turn beyond
    (numpy halves recursively there: a rounding apart)."""
    if n <= 128:
        return _block_sum(row, 0, n)
    total = row.dtype.type(-0.0)
    for start in range(0, n, 128):
        total += _block_sum(row, start, min(128, n - start))
    return total


@_jit
def softmax_xent_rows(labels, seed, floor, loss, grad):
    """On entry grad[i] = exp(logits[i] - max(logits[i])) for each row i (numpy's exp: its SIMD results are not
    libm's); on return grad[i] = (softmax(logits[i]) - onehot(labels[i])) · seed and loss[i] =
    -log(max(softmax(logits[i])[labels[i]], floor)), in the arrays' dtype and the order of the numpy path's
    operations, sums included (`floor`: 1e-20 in that dtype). Returns the first row whose label is outside
    [0, depth) before writing anything, or -1."""
    rows, depth = grad.shape
    for i in range(rows):
        if labels[i] < 0 or labels[i] >= depth:
            return i
    for i in range(rows):
        row = grad[i]
        total = _row_sum(row, depth)
        for j in range(depth):
            row[j] /= total
        label = labels[i]
        picked = row[label]
        loss[i] = -math.log(picked if picked > floor else floor)
        row[label] -= 1
        if seed != 1:
            for j in range(depth):
                row[j] *= seed
    return -1


@_jit
def keep_where_positive(out, y):
    """out[i, j] = 0 where y[i, j] <= 0 (relu_grad in place, y the relu's output); both laid out alike, rows
    contiguous (the caller passes transposes of column-major arrays)."""
    rows, cols = out.shape
    for i in range(rows):
        for j in range(cols):
            if not y[i, j] > 0:
                out[i, j] = 0
