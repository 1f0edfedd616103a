"""`flow.advanced.distribute_*`: a consistent blob taken apart into one blob per device of the current placement
and put back together (OneFlow v0.3.4 `oneflow/python/advanced/distribute_ops.py`).

Each per-device blob lives on a one-device placement (that device of the current placement); the compiler moves
pieces between those placements and the whole placement as for any change of placement (`flow.explain` shows the
bytes). distribute_split cuts along `axis` with the balanced split every S(axis) uses, so distribute_concat of its
parts gives the blob back. OneFlow v0.3.4's distribute_map called `enable_if.unqiue` (an AttributeError) and ran
every `f` under the first device's scope; here `f` runs once per device, under that device's placement.
"""
from oneflow_compat.ir import builder
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ir.sbp import balanced_ranges
from oneflow_compat.ops.registry import apply


class _OnDevice:
    """The build context's placement narrowed to device `index` of the current placement, for a `with` block."""

    def __init__(self, ctx, index):
        p = ctx.placement
        self.ctx = ctx
        self.placement = Placement(p.device_tag, [p.pairs[index]], requested_tag=p.requested_tag)

    def __enter__(self):
        self.ctx.placements.append(self.placement)

    def __exit__(self, *exc):
        self.ctx.placements.pop()
        return False


def _names(name, prefix, ctx, n):
    base = name if name is not None else ctx.job.unique_name(prefix)
    return base, ["%s_out_%d" % (base, i) for i in range(n)]


def distribute_split(x, axis=0, name=None):
    """One blob per device of the current placement: x's balanced slice along `axis` on that device."""
    ctx = builder.current("flow.advanced.distribute_split")
    n = ctx.placement.parallel_num
    axis = axis % len(x.shape)
    _, names = _names(name, "DistributeSplit_", ctx, n)
    outs = []
    for i, (start, stop) in enumerate(balanced_ranges(x.shape[axis], n)):
        tup = tuple((start, stop, 1) if a == axis else (None, None, None) for a in range(len(x.shape)))
        with _OnDevice(ctx, i):
            outs.append(apply("slice", [x], {"slice_tup": tup}, name=names[i]))
    return tuple(outs)


def distribute_clone(x, name=None):
    """One copy of x per device of the current placement, each on its device."""
    ctx = builder.current("flow.advanced.distribute_clone")
    n = ctx.placement.parallel_num
    _, names = _names(name, "DistributeClone_", ctx, n)
    outs = []
    for i in range(n):
        with _OnDevice(ctx, i):
            outs.append(apply("identity", [x], name=names[i]))
    return tuple(outs)


def _check_count(ctx, xs, what):
    assert ctx.placement.parallel_num == len(xs), "flow.advanced.%s: %d blobs for a placement of %d devices" % (
        what, len(xs), ctx.placement.parallel_num)


def distribute_concat(xs, axis=0, name=None):
    """The per-device blobs concatenated along `axis` into one blob of the current placement."""
    ctx = builder.current("flow.advanced.distribute_concat")
    xs = list(xs)
    _check_count(ctx, xs, "distribute_concat")
    base, _ = _names(name, "DistributeConcat_", ctx, 0)
    if len(xs) == 1:
        return apply("identity", xs, name=base)
    return apply("concat", xs, {"axis": axis % len(xs[0].shape)}, name=base)


def distribute_add(xs, name=None):
    """The sum of the per-device blobs, a blob of the current placement."""
    ctx = builder.current("flow.advanced.distribute_add")
    xs = list(xs)
    _check_count(ctx, xs, "distribute_add")
    base, _ = _names(name, "DistributeAdd_", ctx, 0)
    return apply("identity", xs, name=base) if len(xs) == 1 else apply("add_n", xs, name=base)


def distribute_map(xs, f, axis=0):
    """f applied on each device to that device's slices of xs (split along `axis`), the results concatenated
    back; a tuple when f returns several blobs."""
    from oneflow_compat.ir.graph import LazyBlob

    ctx = builder.current("flow.advanced.distribute_map")
    single = isinstance(xs, LazyBlob)
    assert single or (isinstance(xs, (list, tuple)) and xs and all(isinstance(x, LazyBlob) for x in xs))
    xs = [xs] if single else list(xs)
    pieces = [distribute_split(x, axis=axis) for x in xs]
    results = []
    for i, args in enumerate(zip(*pieces)):
        with _OnDevice(ctx, i):
            results.append(f(*args))
    not_container = all(isinstance(r, LazyBlob) for r in results)
    results = [(r,) if isinstance(r, LazyBlob) else tuple(r) for r in results]
    out = [distribute_concat(list(parts), axis=axis) for parts in zip(*results)]
    return out[0] if not_container else tuple(out)
