"""SBP: how a logical tensor lives on the devices of a placement.

`S(axis)` balanced slices along `axis`, `B` a full copy on each device, `P` an addend on each device (the logical
value is the sum), and `M` for mirrored blobs (each device holds an independent local tensor). One balanced-split
rule serves inputs, variables, kernels, boxing and checkpoints: size n over k parts, the first n % k parts get one
more element (`backend/balanced_split.py`).

On an n-D placement (a mesh of devices, `ir/placement.py`'s `hierarchy`) a layout is an `NdSbp`: one of these
symbols per mesh axis, applied in mesh-axis order — axis 0 lays the logical tensor out over its groups, axis 1 lays
each group's part out over the devices along it, and so on (OneFlow's `GetTensorSliceView4ParallelRank`,
oneflow/core/job/nd_sbp_util.cpp at v0.9.0: two mesh axes splitting one tensor axis cut it nested, each a balanced
split of what the axes before it left). An `NdSbp` carries its mesh shape, so that a device's piece is known from the
layout and the device's index in the parallel order alone, as for a 1-D SBP (`local_shape`, `local_slices`,
`region`).
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


class NdSbp:
    """An n-D SBP: one 1-D symbol per axis of a device mesh of shape `mesh` (see the module docstring). Interned:
    make one with `nd(sbps, mesh)`, which also writes B on mesh axes of size 1 (one device holds the whole of
    what the axes before it left, whatever the symbol)."""

    __slots__ = ("sbps", "mesh", "_hash")

    def __init__(self, sbps, mesh):
        self.sbps, self.mesh = tuple(sbps), tuple(mesh)
        self._hash = hash((self.sbps, self.mesh))

    def __eq__(self, other):
        return self is other or (type(other) is NdSbp and self.sbps == other.sbps and self.mesh == other.mesh)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return "(%s)" % ", ".join(repr(s) for s in self.sbps)

    def __iter__(self):
        return iter(self.sbps)

    def __len__(self):
        return len(self.sbps)

    def __getitem__(self, k):
        return self.sbps[k]

    def __reduce__(self):
        return (nd, (self.sbps, self.mesh))

    def replace(self, axis, sbp):
        """This layout with mesh axis `axis` laid out as `sbp`."""
        sbps = list(self.sbps)
        sbps[axis] = sbp
        return nd(sbps, self.mesh)

    @property
    def has_partial(self):
        return P in self.sbps


_ND = {}


def nd(sbps, mesh):
    """The interned `NdSbp` of `sbps` (1-D symbols, one per mesh axis) on a mesh of shape `mesh`."""
    sbps, mesh = tuple(sbps), tuple(int(m) for m in mesh)
    if len(sbps) != len(mesh):
        raise ValueError("an n-D SBP needs one symbol per mesh axis: %d symbols %r for a mesh of shape %s"
                         % (len(sbps), sbps, mesh))
    for s in sbps:
        if type(s) not in (Split, Broadcast, PartialSum):
            raise ValueError("an n-D SBP is made of S(axis), B and P, got %r" % (s,))
    sbps = tuple(B if m == 1 else s for s, m in zip(sbps, mesh))
    key = (sbps, mesh)
    got = _ND.get(key)
    if got is None:
        got = _ND[key] = NdSbp(sbps, mesh)
    return got


def is_nd(sbp):
    return type(sbp) is NdSbp


def mesh_coords(index, mesh):
    """The coordinates on a mesh of shape `mesh` of the device at `index` in the parallel order (row-major)."""
    coords = []
    for m in reversed(mesh):
        index, c = divmod(index, m)
        coords.append(c)
    return tuple(reversed(coords))


def mesh_index(coords, mesh):
    index = 0
    for c, m in zip(coords, mesh):
        index = index * m + c
    return index


def region(shape, sbp, index, parallel_num):
    """Device `index`'s part of the logical index space: ((start, stop) per tensor axis), for a 1-D SBP on
    `parallel_num` devices or an `NdSbp` (nested along the mesh axes, as the module docstring says)."""
    ranges = [(0, d) for d in shape]
    if type(sbp) is NdSbp:
        for s, m, c in zip(sbp.sbps, sbp.mesh, mesh_coords(index, sbp.mesh)):
            if type(s) is Split and m > 1:
                lo, hi = ranges[s.axis]
                a, b = balanced_ranges(hi - lo, m)[c]
                ranges[s.axis] = (lo + a, lo + b)
    elif type(sbp) is Split and parallel_num > 1:
        ranges[sbp.axis] = balanced_ranges(shape[sbp.axis], parallel_num)[index]
    return tuple(ranges)


def piece_range(shape, sbp, index, parallel_num, axis):
    """(start, stop) along tensor axis `axis` of device `index`'s piece (the whole axis where nothing splits it)."""
    return region(shape, sbp, index, parallel_num)[axis]


def split_axes(sbp):
    """The tensor axes `sbp` (1-D or n-D) splits."""
    if type(sbp) is NdSbp:
        return {s.axis for s, m in zip(sbp.sbps, sbp.mesh) if type(s) is Split and m > 1}
    return {sbp.axis} if type(sbp) is Split else set()


def splits_axis(sbp, axis):
    """Whether `sbp` (1-D or n-D) splits tensor axis `axis`."""
    if type(sbp) is NdSbp:
        return any(type(s) is Split and s.axis == axis for s, m in zip(sbp.sbps, sbp.mesh) if m > 1)
    return type(sbp) is Split and sbp.axis == axis


def has_partial(sbp):
    return sbp == P or (type(sbp) is NdSbp and P in sbp.sbps)


def holds_addend_value(sbp, index):
    """Whether device `index` holds the value (not zeros) where a whole value is laid out as partial sums: the
    first device of a 1-D P, the devices at coordinate 0 of every P axis of an n-D SBP (any device elsewhere)."""
    if type(sbp) is NdSbp:
        coords = mesh_coords(index, sbp.mesh)
        return all(c == 0 for c, s in zip(coords, sbp.sbps) if s == P)
    return sbp != P or index == 0


def flat(sbp):
    """The 1-D SBP that lays every device out exactly as the n-D `sbp` does, or None: B on every mesh axis is B,
    P on every axis is P (each device one addend), and one mesh axis of size > 1 is its own symbol."""
    if type(sbp) is not NdSbp:
        return sbp
    live = [s for s, m in zip(sbp.sbps, sbp.mesh) if m > 1]
    if not live or all(s == B for s in live):
        return B
    if all(s == P for s in live):
        return P
    if len(live) == 1:
        return live[0]
    return None


def local_shape(shape, sbp, index, parallel_num):
    """The shape device `index` of `parallel_num` holds for a logical `shape` with `sbp`."""
    if type(sbp) is NdSbp:
        return tuple(b - a for a, b in region(shape, sbp, index, parallel_num))
    if type(sbp) is Split and parallel_num > 1:
        start, stop = balanced_ranges(shape[sbp.axis], parallel_num)[index]
        return shape[: sbp.axis] + (stop - start,) + shape[sbp.axis + 1:]
    return tuple(shape)


def local_slices(shape, sbp, index, parallel_num):
    """Tuple of slices selecting device `index`'s piece of the logical tensor (full for B/P)."""
    if type(sbp) is NdSbp:
        return tuple(slice(a, b) for a, b in region(shape, sbp, index, parallel_num))
    sl = [slice(None)] * len(shape)
    if type(sbp) is Split and parallel_num > 1:
        start, stop = balanced_ranges(shape[sbp.axis], parallel_num)[index]
        sl[sbp.axis] = slice(start, stop)
    return tuple(sl)


def parse(text):
    """'S(0)' / 'B' / 'P' -> SBP (the v0.4.0 parallel_distribution spelling; one entry)."""
    t = text.strip()
    if t == "B":
        return B
    if t == "P":
        return P
    if t.startswith("S(") and t.endswith(")"):
        return S(int(t[2:-1]))
    raise ValueError("invalid sbp string %r: expected 'S(axis)', 'B' or 'P'" % text)
