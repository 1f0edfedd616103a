"""Eager ops on global values: ONE op of the registry, run as a tiny job through the legacy compiler's passes.

A `Value` is what one rank knows of a tensor: its logical meta, its placement and SBP (compiler objects), and this
rank's local pieces (one array per device of the placement that lives in this process — here one rank is one
device, so [] or [array]). Local tensors are values on a placement of this rank alone.

`run_op(op_type, attrs, inputs)` builds a job of one `input` op per input, whose output SBP is pinned to the
value's SBP, and the op itself; then runs the SAME passes as legacy jobs (`passes/sbp_infer` with its cost-based
choice among the op's declared signatures, `passes/boxing` for whatever the chosen signature reads differently)
and builds the same per-device plan (`passes/plan.py`). The pieces are written straight into the plan's input
registers and read back from its outputs: no rank-0 feed, no assembly. The compiled plan is cached by (op type,
attrs, input layouts), so an eager training step is not dominated by planning.

`transfer(value, placement, sbp)` is `to_global` between global layouts: an `identity` op on the destination
placement pinned to the destination SBP, for which the boxing pass inserts the transfer (across placements too).
`run_grad` compiles an op's declared gradient rule (`defn.grad`, the rules legacy autodiff uses) the same way.

Every boxing a plan executed on this rank is counted in `boxing_log()` (what `explain` lists for eager programs).
A collective that times out (a global op that only some ranks reach) names the eager op in its message.

Every entry point runs as one turn of the process-wide lock (`agreement.in_turn`: one thread at a time, in an order
the ranks agree on), and every op on a placement of several ranks is a global operation of `agreement`: the
ranks compare what they run before an op that communicates (a boxing that moves data, `numpy()`, `to_global` of
local tensors), so ranks that run different ops fail at once naming both sides instead of pairing up.
"""
import collections
import re

import numpy as _np

from oneflow_compat.backend.balanced_split import balanced_sizes
from oneflow_compat.ir import builder
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import Job, LazyBlob, Op, TensorMeta
from oneflow_compat.ir.placement import Placement
from oneflow_compat.ops import registry, transitions
from oneflow_compat.passes import boxing, prune, sbp_infer
from oneflow_compat.passes.plan import Plan
from oneflow_compat.runtime import activity, agreement
from oneflow_compat.runtime.activity import operation

CACHE_SIZE = 4096


class Value:
    """One rank's view of a tensor: logical meta, placement, SBP, and this rank's pieces."""

    __slots__ = ("meta", "placement", "sbp", "pieces")

    def __init__(self, meta, placement, sbp, pieces):
        self.meta = meta
        self.placement = placement
        self.sbp = sbp
        self.pieces = list(pieces)

    @property
    def shape(self):
        return self.meta.shape

    @property
    def dtype(self):
        return self.meta.dtype

    def layout(self):
        return (self.meta.shape, self.meta.dtype.name, self.placement, self.sbp)

    def __repr__(self):
        return "Value(%s, %s, %s %r, %d piece(s))" % (self.meta.shape, self.meta.dtype.name, self.placement,
                                                       self.sbp, len(self.pieces))


# --- the process: comm, runtime, and what plan builders take for a session ---------------------------------------
class _Site:
    """What the ops' builders see as the session (`DeviceSlot.session`): the runtime, and no legacy root seed."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.root_seed = None


_SITE = []


def site():
    if not _SITE:
        from oneflow_compat.comm import world
        from oneflow_compat.runtime.runtime import Runtime

        comm = world.get_process_comm()
        activity.install(comm)  # a collective that times out names the eager op on every rank
        _SITE.append(_Site(Runtime(comm, comm.rank)))
    return _SITE[0]


def runtime():
    return site().runtime


def started():
    """Whether an eager global (or local tensor) op ran in this process."""
    return bool(_SITE)


def comm():
    return site().runtime.comm


def rank():
    return comm().rank


def world_size():
    return comm().size


_LOCAL_PLACEMENTS = {}


def local_placement(device_tag="cpu"):
    """The placement of a local tensor: this rank's one device."""
    pl = _LOCAL_PLACEMENTS.get(device_tag)
    if pl is None:
        pl = _LOCAL_PLACEMENTS[device_tag] = Placement(device_tag, [(rank(), 0)])
    return pl


def to_device(array, placement):
    return runtime().to_device(array, placement)


def xp(placement):
    return runtime().xp(placement)


# --- compiled one-op plans --------------------------------------------------------------------------------------
_CACHE = collections.OrderedDict()
_BOXING_LOG = collections.OrderedDict()  # BoxingRecord -> calls


class BoxingRecord(collections.namedtuple("BoxingRecord", "op shape dtype src_placement src_sbp dst_placement "
                                                           "dst_sbp collective bytes")):
    """One boxing an eager op performed (per call: `bytes`)."""


def boxing_log():
    """[(BoxingRecord, calls)] of every boxing the eager ops of this process took part in, in first-seen order."""
    return [(rec, calls) for rec, calls in _BOXING_LOG.items()]


def clear_boxing_log():
    _BOXING_LOG.clear()


class _Compiled:
    """The plan of one tiny job, fed with pieces and read back as pieces."""

    def __init__(self, job, outputs, what, short, identity_text):
        rt = runtime()
        self.job, self.what = job, what
        self.plan = Plan(job, rt, site(), self._collective, lambda blob, sbp: list)
        self.in_regs = [[reg for _, reg in slots] for _, slots in self.plan.input_slots]
        self.outputs = []
        for y in outputs:
            if y is None:
                self.outputs.append(None)
                continue
            op = y.op
            sbp = op.sbp_out[y.index]
            if op.placement.parallel_num == 1 and sbp != S.M:
                sbp = S.B
            self.outputs.append((y.meta, op.placement, sbp))
        self.boxings = []
        for op in job.ops:
            if op.defn.boxing:
                a, x = op.attrs, op.inputs[0]
                ranks = set(transitions.owners(a["src_placement"])) | set(transitions.owners(a["dst_placement"]))
                if rt.machine_id in ranks:
                    self.boxings.append(BoxingRecord(short, tuple(x.shape), x.dtype.name, a["src_placement"],
                                                     a["src_sbp"], a["dst_placement"], a["dst_sbp"],
                                                     a["collective"], float(a["bytes"])))
        self.identity, self.members = _global_identity(job, identity_text, rt.machine_id)

    def _collective(self, op):
        return op.defn.build_collective(op, site())

    def run(self, inputs):
        plan = self.plan
        regs = plan.regs
        for slot_regs, value in zip(self.in_regs, inputs):
            for r, piece in zip(slot_regs, value.pieces):
                regs[r] = piece
        try:
            with operation(self.what):
                if self.identity is not None:
                    agreement.global_op(self.identity, self.members)
                for step in plan.steps:
                    step()
            results = list(plan.results)
        finally:
            for i in range(len(regs)):
                regs[i] = None
            plan.results[:] = [None] * len(plan.results)
        for rec in self.boxings:
            entry = _BOXING_LOG.get(rec)
            if entry is None:
                _BOXING_LOG[rec] = 1
            else:
                _BOXING_LOG[rec] = entry + 1
        out, it = [], iter(results)
        for o in self.outputs:
            if o is None:
                out.append(None)
                continue
            pieces = next(it)
            for i, p in enumerate(pieces):
                if isinstance(p, _np.generic):  # numpy turns 0-d results into scalars: keep arrays
                    pieces[i] = _np.asarray(p)
            out.append(Value(o[0], o[1], o[2], pieces))
        return out


def _global_identity(job, text, me):
    """((digest, text), members) of a one-op job that spans several ranks, else (None, None): `members` are the
    ranks of its boxings that move data, when this rank is one of several, else None (nothing to compare now)."""
    ranks, moving = set(), set()
    for op in job.ops:
        ranks.update(transitions.owners(op.placement))
        if op.defn.boxing:
            a = op.attrs
            ends = set(transitions.owners(a["src_placement"])) | set(transitions.owners(a["dst_placement"]))
            if len(ends) > 1 and transitions.cost(a["src_placement"], a["src_sbp"], a["dst_placement"],
                                                  a["dst_sbp"], 1) > 0:
                moving |= ends
    if len(ranks) < 2:  # a local op (or one on one rank): ranks may run different ones
        return None, None
    members = tuple(sorted(moving)) if me in moving else None
    return (agreement.digest(text), text), members


def _world_identity(text):
    """The identity of an operation every rank of the world communicates in, and its members."""
    c = comm()
    if c.size == 1:
        return None, None
    return (agreement.digest(text), text), tuple(range(c.size))


def _stable_text(x):
    """`x` (an op attribute) as text that is the same on every rank: no addresses, arrays by shape and dtype (an
    array attribute may differ per rank on purpose)."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return repr(x)
    if isinstance(x, (list, tuple)):
        return "(%s)" % ", ".join(_stable_text(v) for v in x)
    if isinstance(x, dict):
        return "{%s}" % ", ".join("%s: %s" % (_stable_text(k), _stable_text(v))
                                  for k, v in sorted(x.items(), key=lambda kv: repr(kv[0])))
    if isinstance(x, _np.ndarray):
        return "array%s %s" % (x.shape, x.dtype)
    if type(x).__repr__ is object.__repr__:
        return type(x).__name__
    return _ADDRESS.sub("", repr(x))


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _op_identity(what, attrs, values):
    return "%s attrs %s dtypes %s" % (what, _stable_text(attrs),
                                      [None if v is None else v.meta.dtype.name for v in values])


def _freeze(x):
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    hash(x)
    return x


def _cached(key, build):
    if key is not None:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    compiled = build()
    if key is not None:
        _CACHE[key] = compiled
        if len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


def _attrs_key(attrs):
    """A hashable key of an op's attrs (lists become tuples), or None when some value cannot be hashed."""
    if not attrs:
        return ()
    items = tuple(sorted(attrs.items()))
    try:
        hash(items)
        return items
    except TypeError:
        try:
            return _freeze(items)
        except TypeError:  # an attribute that cannot be hashed: compile every time
            return None


def _layouts(values):
    return tuple(None if v is None else (v.meta.shape, v.meta.dtype.name, v.placement, v.sbp) for v in values)


def cache_info():
    return {"entries": len(_CACHE)}


def _new_job(name, placement):
    job = Job(name, "predict", None)
    job.default_placement = placement
    ctx = builder.BuildContext(job, site(), placement, "consistent")
    return job, ctx


def _input(ctx, name, layout):
    """An input op producing a value with `layout` = (meta, placement, sbp) as it lies."""
    meta, placement, sbp = layout
    ctx.placements.append(placement)
    try:
        op = registry.new_op("input", [], {"shape": meta.shape, "dtype": meta.dtype, "kind": "numpy",
                                           "batch_axis": None, "sbp": sbp}, name=name, out_hints={0: sbp})
    finally:
        ctx.placements.pop()
    return op.outputs[0]


def _layout(v):
    return (v.meta, v.placement, v.sbp)


def _compile(job, outputs, what, short, identity_text):
    sbp_infer.infer(job, exact_first=True)
    boxing.insert(job)
    return _Compiled(job, outputs, what, short, identity_text)


def placement_text(pl):
    return "%s ranks %s" % (pl.device_tag, [m for m, _ in pl.pairs])


def _describe(op_type, inputs):
    if not inputs:
        return "eager op '%s'" % op_type
    return "eager op '%s' (inputs %s on %s)" % (
        op_type, ", ".join("%s %r" % (tuple(v.meta.shape), v.sbp) for v in inputs), placement_text(inputs[0].placement))


def check_same_placement(op_type, inputs):
    first = inputs[0].placement
    for i, v in enumerate(inputs[1:], 1):
        if v.placement != first:
            raise ValueError("op '%s': all inputs must be on one placement, got %s (input 0) and %s (input %d)"
                             % (op_type, first, v.placement, i))
    return first


def run_op(op_type, attrs, inputs, placement=None):
    """Runs one registered op on values that share one placement (or, for ops without inputs, on `placement`);
    returns its output values."""
    attrs = dict(attrs or {})
    if inputs:
        placement = check_same_placement(op_type, inputs)
    elif placement is None:
        raise ValueError("op '%s' has no inputs: give the placement it runs on" % op_type)
    ak = _attrs_key(attrs)
    key = None if ak is None else ("op", op_type, ak, _layouts(inputs), placement)

    def build():
        job, ctx = _new_job("eager-" + op_type, placement)
        with builder.Scoped(ctx):
            blobs = [_input(ctx, "in%d" % i, _layout(v)) for i, v in enumerate(inputs)]
            op = registry.new_op(op_type, blobs, attrs, name=op_type)
        job.output_blobs = [(y, "numpy") for y in op.outputs]
        what = _describe(op_type, inputs)
        identity = _op_identity(what if inputs else "%s on %s" % (what, placement_text(placement)), attrs, inputs)
        return _compile(job, list(op.outputs), what, op_type, identity)

    return agreement.in_turn(_run_cached, key, build, inputs)


def _run_cached(key, build, inputs):
    return _cached(key, build).run(inputs)


def transfer(value, placement, sbp, label="to_global"):
    """The value on (placement, sbp): any SBP transition and any change of placement, through the boxing.
    `label` names the transfer in `explain` ("gradient" for a gradient boxed to its parameter's layout)."""
    key = (label, value.meta.shape, value.meta.dtype.name, value.placement, value.sbp, placement, sbp)

    def build():
        job, ctx = _new_job("eager-to_global", placement)
        with builder.Scoped(ctx):
            x = _input(ctx, "in0", _layout(value))
            op = registry.new_op("identity", [x], {}, name="to_global", in_hints={0: sbp}, out_hints={0: sbp})
        job.output_blobs = [(op.outputs[0], "numpy")]
        what = "eager op 'to_global' (%s %r on %s -> %r on %s)" % (
            tuple(value.meta.shape), value.sbp, placement_text(value.placement), sbp, placement_text(placement))
        return _compile(job, [op.outputs[0]], what, label, _op_identity(what, {}, [value]))

    out = agreement.in_turn(_run_cached, key, build, [value])[0]
    # a tensor made by to_global owns its storage (B -> S slices and B -> P keep views of the source pieces):
    # an in-place update of one (an optimizer step) must not change the other
    for i, p in enumerate(out.pieces):
        if any(_np.may_share_memory(p, q) for q in value.pieces if isinstance(q, _np.ndarray)) \
                and isinstance(p, _np.ndarray):
            out.pieces[i] = p.copy()
    return out


def run_grad(op_type, attrs, inputs, outputs, dys, needed):
    """The gradients of a forward op's inputs (None where not needed or not defined), from its declared grad
    rule: `inputs`/`outputs` are the forward values, `dys` the output gradients (None where there is none)."""
    attrs = dict(attrs or {})
    placement = inputs[0].placement if inputs else outputs[0].placement
    ak = _attrs_key(attrs)
    key = None if ak is None else ("grad", op_type, ak, _layouts(inputs), _layouts(outputs), _layouts(dys),
                                   tuple(needed))

    def build():
        defn = registry.get(op_type)
        job, ctx = _new_job("eager-grad-" + op_type, placement)
        with builder.Scoped(ctx):
            xs = [_input(ctx, "x%d" % i, _layout(v)) for i, v in enumerate(inputs)]
            ys = [_input(ctx, "y%d" % i, _layout(v)) for i, v in enumerate(outputs)]
            dy_blobs = [None if d is None else _input(ctx, "dy%d" % i, _layout(d)) for i, d in enumerate(dys)]
            # the forward op stands detached: its inputs and outputs are the blobs above, it is not in job.ops
            fwd = Op(job, op_type, op_type, defn, xs, attrs, placement, "consistent")
            fwd.outputs = ys
            dxs = list(defn.grad(fwd, dy_blobs))
        wanted = [dx if (want and isinstance(dx, LazyBlob)) else None for dx, want in zip(dxs, needed)]
        job.output_blobs = [(dx, "numpy") for dx in wanted if dx is not None]
        prune.prune(job)
        what = "eager op '%s' (backward)" % op_type
        identity = "%s of %s %s %s needing %s" % (_op_identity(what, attrs, feed), _layouts(inputs), _layouts(outputs),
                                                   _layouts(dys), tuple(needed))
        return _compile(job, wanted, what, op_type + " (backward)", identity)

    feed = list(inputs) + list(outputs) + [d for d in dys if d is not None]
    return agreement.in_turn(_run_cached, key, build, feed)


# --- values that cross ranks outside an op --------------------------------------------------------------------
def full_value(value):
    """The whole logical value as a fresh host array on every rank of the world (a world collective)."""
    return agreement.in_turn(_full_value, value)


def _full_value(value):
    c = comm()
    what = "numpy() of a global tensor %s %s %r on %s (every rank must call it)" % (
        tuple(value.meta.shape), value.meta.dtype.name, value.sbp, placement_text(value.placement))
    with operation(what):
        identity, members = _world_identity(what)
        if identity is not None:
            agreement.global_op(identity, members)
        return transitions.materialize(c, list(value.pieces), value.placement, value.sbp, value.meta.shape,
                                       value.meta.dtype.np, list(range(c.size)))


BALANCED_MESSAGE = ("Sizes of tensors in dimension %d must be same or match balanced split distribution. See "
                    "https://github.com/Oneflow-Inc/oneflow/blob/master/oneflow/core/common/balanced_splitter.h "
                    "for details of balanced split")


def from_local(local, placement, sbp, what="to_global"):
    """A global value made of every rank's local value (every rank of the world calls it): split(d) concatenates
    the members' pieces along d (their sizes must follow the balanced split), broadcast takes the placement's
    first rank's value, partial_sum adds them. Ranks outside the placement hold no piece and receive the meta."""
    return agreement.in_turn(_from_local_in_turn, local, placement, sbp, what)


def _from_local_in_turn(local, placement, sbp, what):
    text = "to_global of a local tensor onto %s %r (every rank must call it)" % (placement_text(placement), sbp)
    with operation(text):
        identity, members = _world_identity(text)
        if identity is not None:
            agreement.global_op(identity, members)
        return _from_local(local, placement, sbp, what)


def _from_local(local, placement, sbp, what):
    c = comm()
    members = transitions.owners(placement)
    me = c.rank in members
    mine = (tuple(local.meta.shape), local.meta.dtype.name) if me else None
    infos = c.allgather_object(mine) if c.size > 1 else [mine]
    got = [infos[r] for r in members]
    names = sorted({d for _, d in got})
    if len(names) > 1:
        raise TypeError("%s: the ranks of %s hold local tensors of different dtypes (%s)"
                        % (what, placement, ", ".join("rank %d: %s" % (r, d) for r, (_, d) in zip(members, got))))
    shapes = [s for s, _ in got]
    if any(len(s) != len(shapes[0]) for s in shapes):
        raise ValueError("%s: the ranks of %s hold local tensors of different ranks (shapes %s)"
                         % (what, placement, shapes))
    if S.is_split(sbp):
        ax = sbp.axis
        for s in shapes:
            if s[:ax] + s[ax + 1:] != shapes[0][:ax] + shapes[0][ax + 1:]:
                raise ValueError("%s: local shapes %s differ outside the split dimension %d" % (what, shapes, ax))
        sizes = [s[ax] for s in shapes]
        if sizes != balanced_sizes(sum(sizes), len(sizes)):
            raise ValueError(BALANCED_MESSAGE % ax)
        logical = shapes[0][:ax] + (sum(sizes),) + shapes[0][ax + 1:]
    else:
        if any(s != shapes[0] for s in shapes):
            raise ValueError("%s: with %r every rank of %s must hold a local tensor of one shape, got %s"
                             % (what, sbp, placement, ", ".join("rank %d: %s" % (r, s)
                                                                  for r, s in zip(members, shapes))))
        logical = shapes[0]
    dtype = local.meta.dtype if me else _dtype_named(names[0], local.meta.dtype)
    pieces = []
    if me:
        import numpy as np

        piece = to_device(local.pieces[0], placement)
        if sbp == S.B and len(members) > 1:
            from oneflow_compat.backend import devices

            buf = np.array(devices.to_host(piece), copy=True, order="C")
            c.bcast_(buf, members[0], members)
            piece = to_device(buf, placement)
        pieces = [piece]
    return Value(TensorMeta(logical, dtype), placement, sbp if placement.parallel_num > 1 else S.B, pieces)


_DTYPES_BY_NAME = {}


def register_dtype(dtype):
    _DTYPES_BY_NAME[dtype.name] = dtype


def _dtype_named(name, fallback):
    from oneflow_compat.ir import dtypes

    for d in dtypes.ALL:
        if d.name == name:
            return d
    return _DTYPES_BY_NAME.get(name, fallback)
