"""`rows_of_one(pieces)`: the one array of which numpy arrays `pieces` are consecutive row blocks, as a view — as
the in-process devices' pieces of an S(0) blob often are (a fed batch cut into rows, a batched step's output cut
back into pieces) — or None. The plan's batched steps run a kernel once on that whole instead of once per device.

Only numpy's public interface is used. The structure of each piece (type, base, strides, dtype, shape) rules out
almost every non-match for free. In the common case — the pieces cover a C-contiguous base array whole — no
address is read: the base's row ranges are disjoint byte intervals, so a piece of that many rows and those strides
whose bounds overlap neither the rows before its range nor the rows after it (`np.may_share_memory`, a bounds
test, exact for contiguous intervals) is exactly its range. Otherwise the data addresses are compared through
`__array_interface__` (one read per non-empty piece and one for the base).
"""
import numpy as np


def _address(a):
    return a.__array_interface__["data"][0]


def rows_of_one(pieces):
    first = pieces[0]
    if type(first) is not np.ndarray or first.ndim == 0 or first.dtype.hasobject:
        return None
    base = first.base
    if type(base) is not np.ndarray:
        return None
    strides, tail, dtype = first.strides, first.shape[1:], first.dtype
    rows = 0
    for p in pieces:
        if type(p) is not np.ndarray or p.base is not base or p.strides != strides or p.shape[1:] != tail \
                or p.dtype != dtype:
            return None
        rows += p.shape[0]
    shape = (rows,) + tail
    if base.shape == shape and base.strides == strides and base.flags.c_contiguous:
        return base if _tile(pieces, base) else None
    return _by_address(pieces, base, shape, strides, dtype)


def _tile(pieces, whole):
    """Whether `pieces` (views of the C-contiguous `whole` with its strides) are its row blocks in order."""
    start, last = 0, len(whole)
    for p in pieces:
        stop = start + p.shape[0]
        if stop > start and (start and np.may_share_memory(p, whole[:start]) or
                             stop < last and np.may_share_memory(p, whole[stop:])):
            return False
        start = stop
    return True


def _by_address(pieces, base, shape, strides, dtype):
    start = None
    for p in pieces:
        n = p.shape[0]
        if n:
            if start is None:
                start = at = _address(p)
            elif _address(p) != at:
                return None
            at += n * strides[0]
    if start is None:
        return None
    offset = start - _address(base)
    for whole in (base, base.T):  # the common cases, found without making a view
        if whole.shape == shape and whole.strides == strides and offset == 0:
            return whole
    try:
        return np.ndarray(shape, dtype, buffer=base, offset=offset, strides=strides)
    except (TypeError, ValueError):  # a base that is no buffer, or not a contiguous one
        return None
