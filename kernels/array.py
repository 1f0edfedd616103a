"""Making arrays: constants, fills, the identity, and the host-side object arrays of the data pipeline."""
import numpy


def full(xp, *, shape, value, dtype):
    """A constant array (the `constant` op; each device makes its own piece's shape)."""
    return xp.full(shape, value, dtype=dtype)


def fill_like(xp, x, *, value):
    return xp.full_like(x, value)


def fill_like_tensor(xp, x, value):
    """An array shaped like x filled with the single element of `value` (e.g. the loss scale seeding backprop)."""
    return xp.full_like(x, value.reshape(()).astype(x.dtype))


def identity(xp, x):
    """x itself, not a copy: identities and view casts only relabel a blob."""
    return x


def object_array(items):
    """A 1-d numpy object array holding `items` as they are (numpy would otherwise unpack nested arrays).

    Record and tensor-buffer blobs are such arrays; they stay on the host whatever the placement.
    """
    out = numpy.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def identity_like(xp, x, like):
    """x itself: `like` only lends its layout (OneFlow's hierarchical_parallel_cast_like)."""
    return x
