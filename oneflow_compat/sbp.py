"""`flow.sbp`: how a global tensor lies on the ranks of its placement (OneFlow 0.5–0.9 spellings).

`flow.sbp.split(dim)` (also `split(0)` and the older keyword `split(axis=0)`), `flow.sbp.broadcast` and
`flow.sbp.partial_sum` are interned symbols; each is also callable and returns itself (0.7+; `split(0)()` too,
as OneFlow 0.9's test_sbp_symbol.py shows). Their reprs are OneFlow 0.8's: `oneflow.sbp.split(dim=0)`, `oneflow.sbp.broadcast`,
`oneflow.sbp.partial_sum`. Each symbol stands for one SBP of the compiler (`ir/sbp.py`: `S(dim)`, `B`, `P`).
"""
from oneflow_compat.ir import sbp as _ir


class sbp:  # noqa: N801 - OneFlow's class name (`flow.sbp.sbp`)
    """One SBP symbol. Compare with `==`; symbols are interned, so `is` works too."""

    __slots__ = ("_ir", "_text")

    def __init__(self, ir_sbp, text):
        self._ir = ir_sbp
        self._text = text

    def __repr__(self):
        return self._text

    def __eq__(self, other):
        return isinstance(other, sbp) and self._ir == other._ir

    def __hash__(self):
        return hash(self._ir)

    def __reduce__(self):
        return (from_ir, (self._ir,))


class _CallableSbp(sbp):
    """Symbols that may also be called (`flow.sbp.broadcast()` is itself, and `flow.sbp.split(0)()` too)."""

    __slots__ = ()

    def __call__(self):
        return self


broadcast = _CallableSbp(_ir.B, "oneflow.sbp.broadcast")
partial_sum = _CallableSbp(_ir.P, "oneflow.sbp.partial_sum")
_SPLITS = {}
_MAX_AXES = 6


def split(dim=None, axis=None):
    """`split(dim)` (0.8+ keyword `dim=`; `axis=` is the 0.5–0.7 keyword)."""
    if dim is None:
        dim = axis
    elif axis is not None:
        raise TypeError("flow.sbp.split() takes dim or axis, not both")
    if dim is None:
        raise TypeError("flow.sbp.split() missing required argument 'dim'")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError("flow.sbp.split(): dim must be an int, got %r" % (dim,))
    # OneFlow 0.9's checks and words (api/python/symbol/sbp_symbol.cpp; SHAPE_MAX_AXIS_SIZE is 6)
    if dim < 0:
        raise RuntimeError("Split axis must not be negative, but got %d!" % dim)
    if dim >= _MAX_AXES:
        raise RuntimeError("Expected split axis to be less than the supported maximum axis (%d), but got %d!"
                           % (_MAX_AXES, dim))
    return _split_symbol(dim)


def _split_symbol(dim):
    """The interned split symbol (unchecked: the compiler's own SBPs may name any axis)."""
    s = _SPLITS.get(dim)
    if s is None:
        s = _SPLITS[dim] = _CallableSbp(_ir.S(dim), "oneflow.sbp.split(dim=%d)" % dim)
    return s


def from_ir(ir_sbp):
    """The symbol of a compiler SBP (`S(d)`, `B`, `P`)."""
    if ir_sbp == _ir.B:
        return broadcast
    if ir_sbp == _ir.P:
        return partial_sum
    if _ir.is_split(ir_sbp):
        return _split_symbol(ir_sbp.axis)
    raise ValueError("no flow.sbp symbol for %r" % (ir_sbp,))


def to_ir(value, what="sbp", placement=None):
    """The compiler SBP of an `sbp=` argument: one symbol, or a list/tuple with one symbol per placement dimension.
    On an n-D placement (`placement.hierarchy` of several axes) the tuple is an n-D SBP (`ir/sbp.NdSbp`, mesh axis
    k laid out as entry k: the "2D SBP" page of OneFlow's parallelism chapter); a single symbol is refused there,
    as OneFlow refuses an SBP whose length is not the hierarchy's (`placed_nd_sbp.cpp` at v0.9.0)."""
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not items:
        raise ValueError("%s: an empty sbp list" % what)
    for s in items:
        if not isinstance(s, sbp):
            raise TypeError("%s must be a flow.sbp symbol (flow.sbp.split(dim), flow.sbp.broadcast, "
                            "flow.sbp.partial_sum) or a tuple of them, one per placement dimension, got %r"
                            % (what, value))
    mesh = tuple(placement.hierarchy) if placement is not None else (1,) * len(items)
    if len(items) != len(mesh):
        where = "placement %r" % (placement,) if placement is not None else "a 1-D placement"
        raise ValueError("%s: %d sbp symbol%s %s for %s with %d dimension%s (hierarchy %s): give one symbol per "
                         "placement dimension" % (what, len(items), "" if len(items) == 1 else "s",
                                                  "(%s)" % ", ".join(map(repr, items)), where, len(mesh),
                                                  "" if len(mesh) == 1 else "s", tuple(mesh)))
    if len(items) == 1:
        return items[0]._ir
    return _ir.nd([s._ir for s in items], mesh)


def symbols_of(ir_sbp):
    """The tuple of flow.sbp symbols that shows a compiler SBP (one per placement dimension)."""
    if _ir.is_nd(ir_sbp):
        return tuple(from_ir(s) for s in ir_sbp.sbps)
    return (from_ir(ir_sbp),)
