"""The balanced-split rule, the one place it is written: `n` items over `k` parts, the first `n % k` parts get one
item more than the others.

S(axis) pieces, boxing, the process comm's collectives, checkpoints and data readers all cut sizes with it, so a
piece computed anywhere matches the piece any other layer expects. (OneFlow's own `BalancedRanges` helper has a
`start == end` typo; this is the rule it meant.) Pure Python, so the comm can use it without loading numpy.
"""


def balanced_sizes(n, k):
    """Sizes of the `k` balanced parts of `n`."""
    n, k = int(n), int(k)
    if k <= 0:
        raise ValueError("balanced split: the number of parts must be positive, got %d" % k)
    if n < 0:
        raise ValueError("balanced split: the size must be non-negative, got %d" % n)
    base, extra = divmod(n, k)
    return [base + 1 if i < extra else base for i in range(k)]


def balanced_ranges(n, k):
    """[(start, stop)] of the `k` balanced parts of `n`, in order."""
    out, start = [], 0
    for size in balanced_sizes(n, k):
        out.append((start, start + size))
        start += size
    return out
