"""Matrix multiplication (2-D and batched); its gradient is built from matmul itself."""


def matmul(xp, a, b, *, transpose_a=False, transpose_b=False, alpha=1.0):
    """alpha * op(a) @ op(b), op = transpose of the last two axes when requested.

    Inputs are 2-D, or batched with equal leading dimensions (no broadcasting of
    batch dims, as in the legacy batch_matmul).
    """
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError("matmul: inputs must be at least 2-D, got shapes %s and %s"
                         % (tuple(a.shape), tuple(b.shape)))
    if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
        raise ValueError("matmul: batch dimensions differ: %s vs %s"
                         % (tuple(a.shape), tuple(b.shape)))
    if transpose_a:
        a = xp.swapaxes(a, -1, -2)
    if transpose_b:
        b = xp.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError("matmul: inner dimensions differ: %s @ %s (after transposes)"
                         % (tuple(a.shape), tuple(b.shape)))
    out = xp.matmul(a, b)
    if alpha != 1.0:
        # `out` is freshly allocated, so scaling it in place is safe and saves a copy
        out *= xp.asarray(alpha, dtype=out.dtype)
    return out
