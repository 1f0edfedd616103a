"""`flow.placement`: the ranks a global tensor lives on, and their device type.

Three spellings (global-api.md §2.2): `placement(type="cuda", ranks=[0, 1])` (0.7+), `placement("cuda", [0, 1])`
(0.6+), and OneFlow 0.5's `placement("cuda", {0: [0, 1]})` whose keys are node ids and values local device ids
(rank = node · processes per node + device). Nested `ranks` give a hierarchy: an n-D placement, a mesh of ranks
on which a global tensor's SBP has one symbol per mesh axis (`flow.sbp` tuples, `ir/sbp.NdSbp`).

In the runtime one rank is one process with one device: rank r is the compiler's (machine r, device 0), and the
parallel order of a placement is its ranks ascending. `"cuda"` runs where the legacy `"gpu"` runs: on CPU, with
one notice, when no CUDA device is usable; `.type` still says "cuda".
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.comm import environment
from oneflow_compat.framework import client_mode
from oneflow_compat.ir.placement import Placement as _IrPlacement
from oneflow_compat._global.size import Size

_TYPES = ("cpu", "cuda")


def _flatten(nested):
    if isinstance(nested, list):
        out = []
        for x in nested:
            out.extend(_flatten(x))
        return out
    return [nested]


# OneFlow 0.9's message for ranks that are not an integer array (placement_symbol.cpp @ v0.9.0, its spelling)
_NOT_LONG_INTS = "placement ranks shoule be an array of long int"


class PlacementRanksError(RuntimeError, ValueError):
    """Bad `ranks` for flow.placement: OneFlow 0.9 raises RuntimeError; a ValueError too, as 0.5-0.8 scripts expect."""


def _as_nested_list(ranks, what):
    """`ranks` (int, range, list/tuple, nested lists, numpy array) as nested Python lists of ints, and its shape.

    OneFlow 0.9 reads `ranks` as a numpy array (its shape is the hierarchy) whose dtype must be int64; any integer
    array is taken here (an int32 array from another platform's default), floats, bools, strings and ragged nests
    are refused with OneFlow's message plus what was wrong."""
    if isinstance(ranks, (bool, np.bool_)):
        raise PlacementRanksError("%s: %s, got %r" % (what, _NOT_LONG_INTS, ranks))
    if isinstance(ranks, range):
        ranks = list(ranks)
    try:
        array = np.asarray(ranks)
    except ValueError:  # numpy >= 1.24 refuses ragged nests
        raise PlacementRanksError("%s: %s, got %r (nested ranks are not rectangular)"
                                  % (what, _NOT_LONG_INTS, ranks)) from None
    if array.dtype == object:
        raise PlacementRanksError("%s: %s, got %r (nested ranks are not rectangular or not ints)"
                                  % (what, _NOT_LONG_INTS, ranks))
    if array.dtype.kind not in "iu":
        raise PlacementRanksError("%s: %s, got %r (an array of %s)" % (what, _NOT_LONG_INTS, ranks, array.dtype))
    if array.size == 0:
        raise PlacementRanksError("%s: %s, got %r (no ranks)" % (what, _NOT_LONG_INTS, ranks))
    if array.ndim == 0:  # one rank: OneFlow's hierarchy is then [1]
        array = array.reshape(1)
    return array.astype(np.int64).tolist(), tuple(int(n) for n in array.shape)


def processes_per_node():
    """Processes (= ranks) per node, for the 0.5 dict spelling: world size over node count as `flow.env` knows
    them (the launcher), else the ranks MPI started on this host."""
    from oneflow_compat import env

    node_size, world_size = getattr(env, "get_node_size", None), getattr(env, "get_world_size", None)
    if node_size is not None and world_size is not None:
        return max(1, world_size() // max(1, node_size()))
    return environment.detect_local_size()


def _ranks_of_dict(machine_device_ids, what):
    per_node = processes_per_node()
    ranks = []
    for node, devs in sorted(machine_device_ids.items()):
        if isinstance(devs, int):
            devs = [devs]
        for d in devs:
            ranks.append(int(node) * per_node + int(d))
    if not ranks:
        raise ValueError("%s: an empty device dict" % what)
    return ranks


class placement:  # noqa: N801 - OneFlow's name
    """`flow.placement(type, ranks)`; see the module docstring for the accepted spellings."""

    __slots__ = ("_type", "_ranks", "_hierarchy", "_shape", "_flat", "_ir", "_key")

    def __init__(self, type=None, ranks=None, hierarchy=None, *, device_type=None,  # noqa: A002
                 machine_device_ids=None, device_ids=None, device_tag=None):
        what = "flow.placement"
        client_mode.use(client_mode.GLOBAL, what)
        kind = next((t for t in (type, device_type, device_tag) if t is not None), None)
        if kind not in _TYPES:
            raise ValueError('%s: type must be "cpu" or "cuda", got %r' % (what, kind))
        spec = next((r for r in (ranks, machine_device_ids, device_ids) if r is not None), None)
        if spec is None:
            raise TypeError("%s() missing required argument 'ranks'" % what)
        if isinstance(spec, dict):
            flat = _ranks_of_dict(spec, what)
            nested, shape = list(flat), (len(flat),)
        else:
            nested, shape = _as_nested_list(spec, what)
            flat = _flatten(nested)
        if hierarchy is not None:
            hierarchy = tuple(int(h) for h in hierarchy)
            n = 1
            for h in hierarchy:
                n *= h
            if n != len(flat):
                raise ValueError("%s: hierarchy %s does not fit %d ranks" % (what, hierarchy, len(flat)))
            shape = hierarchy
            nested = _reshape(flat, hierarchy)
        if len(set(flat)) != len(flat):
            raise ValueError("%s: ranks %r repeat a rank" % (what, nested))
        if any(r < 0 for r in flat):
            raise ValueError("%s: ranks must be non-negative, got %r" % (what, nested))
        # OneFlow keeps the set of ranks: its ParallelDesc sorts them, and `.ranks` / the text are the sorted ranks
        # laid out in the hierarchy (placement_symbol.cpp GetPlacementRanks, parallel_desc.cpp RawPlacementToString
        # @ v0.9.0): ranks=[[0, 2], [1, 3]] is the mesh [[0, 1], [2, 3]]
        flat = sorted(flat)
        self._type = kind
        self._ranks = _reshape(flat, tuple(shape))
        self._hierarchy = Size(shape)
        self._shape = tuple(shape)
        self._flat = tuple(flat)
        self._key = (kind, tuple(sorted(flat)), tuple(shape))
        self._ir = None

    @classmethod
    def all(cls, type):  # noqa: A002
        """Every rank of the world (`flow.placement.all("cuda")`, = `flow.env.all_device_placement`)."""
        from oneflow_compat.runtime import global_eager

        return cls(type, list(range(global_eager.world_size())))

    # --- what OneFlow shows --------------------------------------------------------------------------------
    @property
    def type(self):
        return self._type

    @property
    def device_type(self):
        return self._type

    @property
    def ranks(self):
        """OneFlow 0.9: a fresh int64 ndarray shaped like the hierarchy (placement_symbol.cpp GetPlacementRanks
        @ v0.9.0). Built per call, so the package itself reads `rank_list` (a tuple, no array)."""
        return np.array(self._flat, dtype=np.int64).reshape(self._shape)

    @property
    def hierarchy(self):
        return self._hierarchy

    def __repr__(self):
        return 'oneflow.placement(type="%s", ranks=%s)' % (self._type, self._ranks)

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, placement) and self._key == other._key

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._key)

    def __reduce__(self):
        return (placement, (self._type, self._ranks))

    # --- what the runtime uses -------------------------------------------------------------------------------
    @property
    def rank_list(self):
        """The ranks in parallel order (ascending), a tuple: what the package reads (`.ranks` is the user's ndarray,
        built per access)."""
        return self._key[1]

    @property
    def is_nd(self):
        return len(self._hierarchy) > 1

    def ir(self):
        """The compiler's placement: (machine r, device 0) for each rank r, on the device tag that runs it."""
        if self._ir is None:
            tag = devices.resolve_tag("gpu" if self._type == "cuda" else "cpu", spelled=self._type)
            self._ir = _IrPlacement(tag, [(r, 0) for r in self._flat], hierarchy=tuple(self._hierarchy))
        return self._ir

    def check_valid(self, world_size, what):
        """OneFlow's check when a tensor is created or converted onto this placement."""
        bad = [r for r in self._flat if r >= world_size]
        if bad:
            raise RuntimeError("Placement is invalid because rank must be less than world size! (%s: %r names "
                               "rank%s %s but the world has %d rank%s; start the program with "
                               "`python3 -m oneflow.distributed.launch --nproc_per_node %d` or mpiexec -n %d)"
                               % (what, self, "s" if len(bad) > 1 else "", ", ".join(map(str, bad)), world_size,
                                  "" if world_size == 1 else "s", max(self._flat) + 1, max(self._flat) + 1))


def _reshape(flat, shape):
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0]
    return [_reshape(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def from_ir(ir_placement, type_name=None):
    """The flow.placement of a compiler placement whose pairs are (rank, 0)."""
    kind = type_name or ("cuda" if ir_placement.device_tag == "gpu" else "cpu")
    ranks = [m for m, _ in ir_placement.pairs]
    if ir_placement.is_nd:
        return placement(kind, _reshape(ranks, ir_placement.hierarchy))
    return placement(kind, ranks)
