"""SBP: how a logical tensor lives on the devices of a placement.

`S(axis)` balanced slices along `axis`, `B` a full copy on each device, `P` an addend on each device (the logical
value is the sum), and `M` for mirrored blobs (each device holds an independent local tensor). One balanced-split
rule serves inputs, variables, kernels, boxing and checkpoints: size n over k parts, the first n % k parts get one
more element (`backend/balanced_split.py`).
"""
from dataclasses import dataclass

from oneflow_compat.backend.balanced_split import balanced_ranges


@dataclass(frozen=True)
class Split:
    axis: int

    def __repr__(self):
        return "S(%d)" % self.axis


@dataclass(frozen=True)
class Broadcast:
    def __repr__(self):
        return "B"


@dataclass(frozen=True)
class PartialSum:
    def __repr__(self):
        return "P"


@dataclass(frozen=True)
class Mirrored:
    def __repr__(self):
        return "M"


B = Broadcast()
P = PartialSum()
M = Mirrored()
_SPLITS = {}


def S(axis):
    s = _SPLITS.get(axis)
    if s is None:
        s = _SPLITS[axis] = Split(axis)
    return s


def is_split(sbp):
    return type(sbp) is Split


def local_shape(shape, sbp, index, parallel_num):
    """The shape device `index` of `parallel_num` holds for a logical `shape` with `sbp`."""
    if type(sbp) is Split and parallel_num > 1:
        start, stop = balanced_ranges(shape[sbp.axis], parallel_num)[index]
        return shape[: sbp.axis] + (stop - start,) + shape[sbp.axis + 1:]
    return tuple(shape)


def local_slices(shape, sbp, index, parallel_num):
    """Tuple of slices selecting device `index`'s piece of the logical tensor (full for B/P)."""
    sl = [slice(None)] * len(shape)
    if type(sbp) is Split and parallel_num > 1:
        start, stop = balanced_ranges(shape[sbp.axis], parallel_num)[index]
        sl[sbp.axis] = slice(start, stop)
    return tuple(sl)


def parse(text):
    """'S(0)' / 'B' / 'P' -> SBP (the v0.4.0 parallel_distribution spelling)."""
    t = text.strip()
    if t == "B":
        return B
    if t == "P":
        return P
    if t.startswith("S(") and t.endswith(")"):
        return S(int(t[2:-1]))
    raise ValueError("invalid sbp string %r: expected 'S(axis)', 'B' or 'P'" % text)
