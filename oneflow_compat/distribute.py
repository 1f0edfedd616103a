"""`flow.distribute`: SBP hints. `split(axis)` returns a per-axis singleton (legacy code compares with `is`)."""
from oneflow_compat.ir import sbp as S


class Distribute:
    pass


class SplitDistribute(Distribute):
    def __init__(self, axis):
        self.axis = axis

    def __repr__(self):
        return "split(%d)" % self.axis


class BroadcastDistribute(Distribute):
    def __repr__(self):
        return "broadcast()"


class AutoDistribute(Distribute):
    def __repr__(self):
        return "auto()"


_SPLITS = {}
_BROADCAST = BroadcastDistribute()
_AUTO = AutoDistribute()


def split(axis):
    if not (type(axis) is int):
        raise AssertionError()
    d = _SPLITS.get(axis)
    if d is None:
        d = _SPLITS[axis] = SplitDistribute(axis)
    return d


def broadcast():
    return _BROADCAST


def auto():
    return _AUTO


def to_sbp(distribute):
    """Hint object (or 'S(0)'/'B' string, or an SBP) -> SBP; auto()/None -> None."""
    if distribute is None or distribute is _AUTO:
        return None
    if isinstance(distribute, SplitDistribute):
        return S.S(distribute.axis)
    if distribute is _BROADCAST:
        return S.B
    if isinstance(distribute, str):
        return S.parse(distribute)
    if isinstance(distribute, (S.Split, S.Broadcast, S.PartialSum)):
        return distribute
    raise TypeError("invalid distribute %r: use flow.distribute.split(axis), broadcast() or auto()" % (distribute,))


def to_parallel_distribution(entries, placement, what):
    """The SBP a v0.4.0 `parallel_distribution` names on `placement`: one entry per dimension of its hierarchy
    ("S(k)", "B", "P" or distribute objects), a 1-D SBP on a 1-D placement, an n-D one on a mesh; none (an empty
    list) means no hint: None. OneFlow checks the count the same way (`hierarchical_parallel_cast_op.cpp`:
    `CHECK_EQ(conf.size(), parallel_hierarchy.NumAxes())`)."""
    if isinstance(entries, str):  # "S(0),B" (v0.4.0 get_variable splits a string at its commas)
        entries = [e.strip() for e in entries.split(",") if e.strip()]
    elif isinstance(entries, Distribute):
        entries = [entries]
    entries = list(entries or [])
    if not entries:
        return None
    sbps = []
    for e in entries:
        s = to_sbp(e)
        if s is None:
            raise ValueError("%s: parallel_distribution %s: auto() names no layout" % (what, entries))
        sbps.append(s)
    mesh = tuple(placement.hierarchy)
    if len(sbps) != len(mesh):
        raise ValueError("%s: parallel_distribution %s has %d entr%s, but the placement %s has %d dimension%s "
                         "(hierarchy %s): one entry per dimension" % (
                             what, [repr(s) for s in sbps], len(sbps), "y" if len(sbps) == 1 else "ies", placement,
                             len(mesh), "" if len(mesh) == 1 else "s", mesh))
    return sbps[0] if len(sbps) == 1 else S.nd(sbps, mesh)


def to_distribute(sbp):
    if sbp is None:
        return _AUTO
    if S.is_split(sbp):
        return split(sbp.axis)
    if sbp == S.B:
        return _BROADCAST
    return _AUTO


def mirrored_strategy():
    from oneflow_compat import scope

    return scope.mirrored_view()


def consistent_strategy():
    from oneflow_compat import scope

    return scope.consistent_view()


def deprecated_consistent_strategy():
    return consistent_strategy()


# --- OneFlow v0.3.4 distribute.py's remaining names (the whole legacy API, issue 20) ---------------------------------
def assert_is_valid_distribute(distribute):
    assert isinstance(distribute, Distribute), """not a valid distribute policy.
           expected: 1) oneflow.distribute.split(axis); 2) oneflow.distribute.broadcast(); 3) oneflow.distribute.auto()"""


def mirrored_strategy_enabled():
    from oneflow_compat import scope

    return scope.mirrored_view_enabled()


def consistent_strategy_enabled():
    from oneflow_compat import scope

    return scope.consistent_view_enabled()
