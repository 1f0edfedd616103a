"""Placements: a device tag and an ordered list of (machine, device) pairs (the parallel order).

The parallel order is machines ascending, then devices ascending, duplicates removed; device index i of a placement
is the i-th pair. Global device ids number every (machine, device) of the cluster as machine * devices_per_machine
+ device, so that MPI rank r (= machine r) owns a contiguous block.

A placement may be an n-D mesh (OneFlow's `hierarchy`, v0.4.0 `flow.scope.placement(tag, "0:0-3", (2, 2))`, 0.7+
`flow.placement("cuda", ranks=[[0, 1], [2, 3]])`): the parallel order read row-major as an array of shape
`hierarchy`. It takes part in equality: the same devices as a 2 x 2 mesh and as a line are two placements (the
layouts on them differ). A 1-D placement's hierarchy is `(parallel_num,)`. Like OneFlow, the parallel order is the
devices sorted, whatever order the mesh was written in (OneFlow issue #9727).
"""
import re

_RANGE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


class Placement:
    __slots__ = ("device_tag", "pairs", "_hash", "requested_tag", "hierarchy")

    def __init__(self, device_tag, pairs, requested_tag=None, hierarchy=None):
        self.device_tag = device_tag
        self.pairs = tuple(sorted(set(pairs)))
        self.hierarchy = _hierarchy(hierarchy, len(self.pairs))
        self._hash = hash((self.device_tag, self.pairs, self.hierarchy))
        # The tag the script asked for: "gpu" even where those devices fall back to CPU. Not part of equality; read
        # only by rules where OneFlow's GPU kernels computed differently (batch norm's moving variance).
        self.requested_tag = requested_tag or device_tag

    @classmethod
    def parse(cls, device_tag, machine_device_ids, hierarchy=None):
        if device_tag not in ("gpu", "cpu"):
            raise ValueError("device_tag must be 'gpu' or 'cpu', got %r" % (device_tag,))
        if isinstance(machine_device_ids, str):
            machine_device_ids = [machine_device_ids]
        if not isinstance(machine_device_ids, (list, tuple)) or not machine_device_ids:
            raise TypeError("machine_device_ids must be a string like '0:0-1' or a list of them, got %r"
                            % (machine_device_ids,))
        pairs = []
        for item in machine_device_ids:
            m = _RANGE.match(item) if isinstance(item, str) else None
            if m is None:
                raise ValueError("invalid machine_device_ids %r: expected '<machine>:<device>' or "
                                 "'<machine>:<first>-<last>'" % (item,))
            machine, first = int(m.group(1)), int(m.group(2))
            last = int(m.group(3)) if m.group(3) is not None else first
            if first > last:
                raise ValueError("invalid device range %r: first %d > last %d" % (item, first, last))
            pairs.extend((machine, d) for d in range(first, last + 1))
        return cls(device_tag, pairs, hierarchy=hierarchy)

    @property
    def parallel_num(self):
        return len(self.pairs)

    @property
    def machines(self):
        return sorted({m for m, _ in self.pairs})

    @property
    def is_nd(self):
        """Whether this is a mesh of more than one axis."""
        return len(self.hierarchy) > 1

    def flat(self):
        """The same devices as a line (hierarchy `(parallel_num,)`)."""
        if not self.is_nd:
            return self
        return Placement(self.device_tag, self.pairs, self.requested_tag)

    def with_hierarchy(self, hierarchy):
        return Placement(self.device_tag, self.pairs, self.requested_tag, hierarchy)

    def __eq__(self, other):
        return isinstance(other, Placement) and self.device_tag == other.device_tag and self.pairs == other.pairs \
            and self.hierarchy == other.hierarchy

    def __hash__(self):
        return self._hash

    def same_devices(self, other):
        return self.pairs == other.pairs

    def __repr__(self):
        text = "%s %s" % (self.device_tag, format_pairs(self.pairs))
        return text + " mesh %s" % "x".join(map(str, self.hierarchy)) if self.is_nd else text


def _hierarchy(hierarchy, n):
    """The mesh shape of `n` devices: `hierarchy` checked (its product must be n), or `(n,)`."""
    if hierarchy is None:
        return (n,)
    shape = tuple(int(h) for h in hierarchy)
    if not shape:
        return (n,)
    size = 1
    for h in shape:
        if h <= 0:
            raise ValueError("a placement hierarchy is made of positive sizes, got %s" % (shape,))
        size *= h
    if size != n:
        raise ValueError("a placement hierarchy %s (%d devices) does not fit the placement's %d devices"
                         % (shape, size, n))
    return shape


def format_pairs(pairs):
    by_machine = {}
    for m, d in pairs:
        by_machine.setdefault(m, []).append(d)
    parts = []
    for m, ds in sorted(by_machine.items()):
        if ds == list(range(ds[0], ds[-1] + 1)) and len(ds) > 1:
            parts.append("%d:%d-%d" % (m, ds[0], ds[-1]))
        else:
            parts.extend("%d:%d" % (m, d) for d in ds)
    return ",".join(parts)
