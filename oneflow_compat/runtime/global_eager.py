"""Eager ops on global values: ONE op of the registry, run as a tiny job through the legacy compiler's passes.

A `Value` is what one rank knows of a tensor: its logical meta, its placement and SBP (compiler objects), and this
rank's local pieces (one array per device of the placement that lives in this process — here one rank is one
device, so [] or [array]). Local tensors are values on a placement of this rank alone.

`run_op(op_type, attrs, inputs)` builds a job of one `input` op per input, whose output SBP is pinned to the
value's SBP, and the op itself; then runs the SAME compile pipeline as legacy jobs (`passes/pipeline.py`, options
`EAGER_OP`: the cost-based choice among the op's declared signatures, boxing for whatever the chosen signature
reads differently) and builds the same executable (`runtime/executable.py`). The pieces are written straight into the plan's input
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
import itertools
import os as _os
import re

import numpy as _np

from oneflow_compat.backend.balanced_split import balanced_sizes
from oneflow_compat.ir import builder
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import Job, LazyBlob, Op, TensorMeta
from oneflow_compat.ir.placement import Placement
from oneflow_compat.kernels import checks
from oneflow_compat.ops import registry, transitions
from oneflow_compat.passes import pipeline
from oneflow_compat.runtime import activity, agreement, buckets, context
from oneflow_compat.runtime import boxing as boxing_exec
from oneflow_compat.runtime.session import Session
from oneflow_compat.runtime.boxing_log import BoxingRecord, record_bucket_all_reduce  # noqa: F401 (their home)
from oneflow_compat.runtime.activity import operation
from oneflow_compat.runtime.executable import Executable, straight_line

CACHE_SIZE = 4096


class Value:
    """One rank's view of a tensor: logical meta, placement, SBP, and this rank's pieces; `lk` is its layout id
    (`layout_id`), computed once, what the caches of compiled ops are keyed by. `summed` (unset on most values):
    the member-wise sum of a small partial sum that a gradient bucket's check carried (`buckets.remember_sum`).
    `zeroed` (unset on most values): True on a gradient that `zero_grad()` zeroed and nothing wrote since
    (`_global/grad_zeroing.py`). `folded` (unset on most values): True on a bucket's sum of a leaf's gradient that
    also holds the leaf's old partial-sum gradient (`runtime/buckets.py`), so that it replaces that gradient with
    no communication; `bucket_slot` (with `folded`): its piece is the leaf's own slot in a persistent gradient bucket,
    which becomes the leaf's `.grad` storage (DDP's gradient-as-bucket-view)."""

    __slots__ = ("meta", "placement", "sbp", "pieces", "lk", "summed", "zeroed", "folded", "bucket_slot")

    def __init__(self, meta, placement, sbp, pieces, lk=None):
        self.meta = meta
        self.placement = placement
        self.sbp = sbp
        self.pieces = list(pieces)
        self.lk = layout_id(meta, placement, sbp) if lk is None else lk

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


# Layout ids: one small int per (shape, dtype, placement, SBP), so that a cache key of an op is a tuple of ints
# (tuples do not keep their hash: a key of nested layouts would be hashed element by element at every op). Ids
# are never reused — should the table grow large it is dropped, and a layout seen again gets a new id (a cache
# miss, never a wrong hit) — so the table is not process state to reset.
_LAYOUT_IDS = {}
_NEXT_LAYOUT_ID = itertools.count(1)
_LAYOUT_TABLE_SIZE = 1 << 16


def layout_id(meta, placement, sbp):
    key = (meta.shape, meta.dtype.name, placement, sbp)
    lk = _LAYOUT_IDS.get(key)
    return _new_id(_LAYOUT_IDS, _NEXT_LAYOUT_ID, key) if lk is None else lk


def _new_id(table, counter, key):
    """A fresh id for `key` in `table` (layout or attrs ids), the table dropped first should it have grown large."""
    if len(table) >= _LAYOUT_TABLE_SIZE:
        table.clear()
    i = table[key] = next(counter)
    return i


# --- the process: comm, runtime, and the session of the global-tensor API ---------------------------------------
_CTX = context.CURRENT  # the process state (`reset()` keeps the object)


def site():
    """The session of the global-tensor API (`runtime/session.Session`, made on first use)."""
    session = _CTX.global_session
    if session is None:
        from oneflow_compat.comm import world
        from oneflow_compat.runtime.runtime import Runtime

        comm = world.get_process_comm()
        activity.install(comm)  # a collective that times out names the eager op on every rank
        session = _CTX.global_session = Session("global", Runtime(comm, comm.rank))
    return session


def runtime():
    return site().runtime


def started():
    """Whether an eager global (or local tensor) op ran in this process."""
    return _CTX.global_session is not None


def comm():
    return site().runtime.comm


def rank():
    return comm().rank


def world_size():
    return comm().size


def local_placement(device_tag="cpu"):
    """The placement of a local tensor: this rank's one device."""
    pl = _CTX.local_placements.get(device_tag)
    if pl is None:
        pl = _CTX.local_placements[device_tag] = Placement(device_tag, [(rank(), 0)])
    return pl


def to_device(array, placement):
    return runtime().to_device(array, placement)


def xp(placement):
    return runtime().xp(placement)


# --- compiled one-op plans --------------------------------------------------------------------------------------


def boxing_log():
    """[(BoxingRecord, calls)] of every boxing the eager ops of this process took part in, in first-seen order."""
    return [(rec, calls) for rec, calls in _CTX.boxing_log.items()]


def clear_boxing_log():
    _CTX.boxing_log.clear()


class _Compiled:
    """The executable of one tiny job, fed with pieces and read back as pieces.

    A job without collectives (no boxing moves anything) runs as a straight line of kernel calls with registers
    of its own (`executable.straight_line`; one kernel call: the kernel called directly on the pieces); where its
    placement cannot communicate either (a local tensor, a placement of one rank: nothing for ranks to agree on)
    it runs without the process-wide lock (`lock_free`, `run_lock_free`)."""

    def __init__(self, job, outputs, what, short, identity_text):
        rt = runtime()
        self.job, self.what = job, what
        self.note = "(while running %s)" % what
        self.exe = Executable(job, site(), lambda blob, sbp: list, name_ops=False)
        self.outputs = []
        for y in outputs:
            if y is None:
                self.outputs.append(None)
                continue
            op = y.op
            sbp = op.sbp_out[y.index]
            if op.placement.parallel_num == 1 and sbp != S.M:
                sbp = S.B
            self.outputs.append((y.meta, op.placement, sbp, layout_id(y.meta, op.placement, sbp)))
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
        # the identity check may ride in the op's first collective (`agreement.global_op`'s `carry`): set for a
        # to_global, whose plan is its boxing (nothing it does has an effect before its first collective)
        self.carry = False
        self.op_type, self.attrs = None, None  # of a forward op (`compiled_op`), from which its backward is built
        self.grads = {}  # (layout ids of the output gradients, inputs needed) -> compiled backward
        self.program = straight_line(self.exe.plan)
        # without collectives nothing waits on another rank: no lock, no frame (an op on several ranks only joins
        # this thread's agreement chain, compared at its next operation that communicates)
        self.lock_free = self.program is not None and self.members is None
        self.chained = self.identity if self.lock_free else None
        kernel = getattr(self.program, "kernel", None)
        if self.lock_free and kernel is not None and self.program.order is None and len(self.outputs) == 1 \
                and self.outputs[0] is not None:
            self.run_lock_free = self._one_kernel(kernel)

    def _one_kernel(self, kernel):
        """`run_lock_free` of an op that is one kernel call on this rank's pieces and one output: the kernel called
        straight on them (the fast path of eager ops)."""
        meta, pl, sbp, lk = self.outputs[0]
        note = self.note
        new = object.__new__
        chained = self.chained
        chain = agreement.chain_only

        arity = len(self.exe.plan.input_slots)

        def run(inputs):
            if chained is not None:
                chain(chained)
            try:
                if arity == 2:  # (no list made for the commonest arities)
                    out = kernel(inputs[0].pieces[0], inputs[1].pieces[0])
                elif arity == 1:
                    out = kernel(inputs[0].pieces[0])
                else:
                    out = kernel(*[v.pieces[0] for v in inputs])
            except Exception as e:
                if hasattr(e, "add_note"):
                    e.add_note(note)
                raise
            v = new(Value)  # Value(meta, pl, sbp, [out], lk), without the call
            v.meta, v.placement, v.sbp, v.pieces, v.lk = meta, pl, sbp, [out], lk
            return [v]

        checks.note_frames(run, _note_of_frame)  # a device check made by `kernel` names this op as its errors do
        return run

    def _values(self, results):
        out, it = [], iter(results)
        for o in self.outputs:
            out.append(None if o is None else Value(o[0], o[1], o[2], next(it), o[3]))
        return out

    def run_lock_free(self, inputs):  # (a device check made here is named by `self.note`: _note_of_frame)
        if self.chained is not None:
            agreement.chain_only(self.chained)
        try:
            results = self.program([v.pieces for v in inputs])
        except Exception as e:
            if hasattr(e, "add_note"):
                e.add_note(self.note)
            raise
        return self._values(results)

    def run(self, inputs):
        pieces = [v.pieces for v in inputs]
        program = self.program
        if program is not None:
            with operation(self.what):
                if self.identity is not None:
                    agreement.global_op(self.identity, self.members, carry=self.carry)
                results = program(pieces)
        else:
            exe = self.exe
            try:
                with operation(self.what):
                    if self.identity is not None:
                        agreement.global_op(self.identity, self.members, carry=self.carry)
                    results = exe.call(lambda copy, micro: exe.feed_pieces(copy, pieces))[0]
            finally:
                exe.finish()
        if self.boxings:
            log = _CTX.boxing_log
            for rec in self.boxings:
                log[rec] = log.get(rec, 0) + 1
        return self._values(results)


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
    """The compiled object cached under `key`, else `build()` cached there (key None: never cached). The cache
    keeps the last CACHE_SIZE compiled in first-compiled order."""
    cache = _CTX.eager_plans
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    compiled = build()
    if key is not None:
        cache[key] = compiled
        if len(cache) > CACHE_SIZE:
            cache.popitem(last=False)
    return compiled


# Attrs ids: one small int per op's attrs (their items, in insertion order, lists made tuples), for the same reason
# as layout ids: a cache key of ints hashes in a few ns, a tuple of attrs is hashed item by item at every op. Ids are
# never reused (a dropped table only costs compiles), so equal attrs made alike share plans and different attrs
# never do. 0 is "no attrs".
_ATTRS_IDS = {}
_NEXT_ATTRS_ID = itertools.count(1)


def attrs_id(attrs):
    """The id of `attrs` (a dict), or None when some value cannot be hashed."""
    items = _freezable(attrs)
    if items is None:
        return None
    i = _ATTRS_IDS.get(items)
    return _new_id(_ATTRS_IDS, _NEXT_ATTRS_ID, items) if i is None else i


def _note_of_frame(frame):
    """The note of a device check made in an eager op's run (kernels/checks.py): the note its errors get."""
    names = frame.f_locals
    note = names.get("note")
    if note is None and names.get("self") is not None:
        note = getattr(names["self"], "note", None)
    return note


checks.note_frames(_Compiled.run_lock_free, _note_of_frame)


class FrozenAttrs(dict):
    """The attrs of an op that a call site makes once and passes at every call (never written into, as no attrs
    are): its part of `compiled_op`'s cache key is a small int found once, instead of its items made into a tuple
    and hashed at every call (a quarter µs of an eager op on small tensors): the id a plain dict with the same
    items gets (`attrs_id`), so both find the same plans."""

    __slots__ = ("key",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.key = attrs_id(self)
        if self.key is None:
            raise TypeError("FrozenAttrs: an attribute value that cannot be hashed: %r" % (dict(self),))


def _freezable(attrs):
    """`attrs` as a hashable tuple (lists become tuples), in insertion order, or None when some value cannot be
    hashed."""
    try:
        return _freeze(tuple(attrs.items()))
    except TypeError:
        return None


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


def _lks(values):
    return tuple(0 if v is None else v.lk for v in values)


def cache_info():
    return {"entries": len(_CTX.eager_plans)}


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


def _compile(job, outputs, what, short, identity_text, options=pipeline.EAGER_OP):
    pipeline.compile_job(site(), job, options)
    return _Compiled(job, outputs, what, short, identity_text)


def placement_text(pl):
    ranks = [m for m, _ in pl.pairs]
    if pl.is_nd:  # a mesh: its ranks nested as the placement was written
        for h in reversed(pl.hierarchy[1:]):
            ranks = [ranks[i:i + h] for i in range(0, len(ranks), h)]
    return "%s ranks %s" % (pl.device_tag, ranks)


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


def compiled_op(op_type, attrs, inputs, placement=None, plans=None):
    """The compiled op `op_type` for values that share one placement (or, for ops without inputs, on
    `placement`): looked up by (op type, attrs, the inputs' layout ids) — a hit's layouts are those it was compiled
    for, on one placement, checked then — else compiled (and cached) in a turn of the process-wide lock.
    `plans`: the current context's `eager_plans`, from a caller that has it at hand (one lookup less per op)."""
    # attrs by their id (`attrs_id`: their items in insertion order): dicts made alike (every call site makes them
    # alike) share it, one made in another order only costs a compile
    if not attrs:
        ak = 0
    elif type(attrs) is FrozenAttrs:
        ak = attrs.key
    else:
        try:
            ak = _ATTRS_IDS.get(tuple(attrs.items())) or attrs_id(attrs)
        except TypeError:  # an attribute value that is a list or a dict: frozen into tuples, or nothing to key by
            ak = attrs_id(attrs)
    n = len(inputs)
    if n == 1:
        key = (op_type, ak, inputs[0].lk)
    elif n == 2:
        key = (op_type, ak, inputs[0].lk, inputs[1].lk)
    elif n:
        key = (op_type, ak) + tuple([v.lk for v in inputs])
    elif placement is None:
        raise ValueError("op '%s' has no inputs: give the placement it runs on" % op_type)
    else:
        key = (op_type, ak, placement)
    compiled = None if ak is None else (_CTX.eager_plans if plans is None else plans).get(key)
    if ak is None:  # attrs that cannot be hashed: nothing to key by
        key = None
    if compiled is not None:
        return compiled
    attrs = dict(attrs or {})
    if inputs:
        placement = check_same_placement(op_type, inputs)

    def build():
        job, ctx = _new_job("eager-" + op_type, placement)
        with builder.Scoped(ctx):
            blobs = [_input(ctx, "in%d" % i, _layout(v)) for i, v in enumerate(inputs)]
            op = registry.new_op(op_type, blobs, attrs, name=op_type)
        job.output_blobs = [(y, "numpy") for y in op.outputs]
        what = _describe(op_type, inputs)
        identity = _op_identity(what if inputs else "%s on %s" % (what, placement_text(placement)), attrs, inputs)
        compiled = _compile(job, list(op.outputs), what, op_type, identity)
        compiled.op_type, compiled.attrs = op_type, attrs
        return compiled

    return agreement.in_turn(_cached, key, build)


def run_compiled(compiled, inputs):
    """Runs a compiled op on `inputs` (laid out as it was compiled for); returns its output values."""
    if compiled.lock_free:
        return compiled.run_lock_free(inputs)
    return agreement.in_turn(compiled.run, inputs)


def run_op(op_type, attrs, inputs, placement=None):
    """Runs one registered op on values that share one placement (or, for ops without inputs, on `placement`);
    returns its output values."""
    compiled = compiled_op(op_type, attrs, inputs, placement)
    if compiled.lock_free:
        return compiled.run_lock_free(inputs)
    return agreement.in_turn(compiled.run, inputs)


def _run_cached(key, build, inputs):
    compiled = _cached(key, build)
    return compiled.run(inputs)


def transfer(value, placement, sbp, label="to_global"):
    """The value on (placement, sbp): any SBP transition and any change of placement, through the boxing.
    `label` names the transfer in `explain` ("gradient" for a gradient boxed to its parameter's layout)."""
    key = (label, value.lk, placement, sbp)

    def build():
        job, ctx = _new_job("eager-to_global", placement)
        with builder.Scoped(ctx):
            x = _input(ctx, "in0", _layout(value))
            op = registry.new_op("identity", [x], {}, name="to_global", in_hints={0: sbp}, out_hints={0: sbp})
        job.output_blobs = [(op.outputs[0], "numpy")]
        what = "eager op 'to_global' (%s %r on %s -> %r on %s)" % (
            tuple(value.meta.shape), value.sbp, placement_text(value.placement), sbp, placement_text(placement))
        compiled = _compile(job, [op.outputs[0]], what, label, _op_identity(what, {}, [value]))
        # its check rides in its first collective, on the process comm: not between GPUs (a device comm, NCCL,
        # moves the data there, and its collectives must not start before the check)
        compiled.carry = not (value.placement.device_tag == "gpu" and placement.device_tag == "gpu")
        return compiled

    out = agreement.in_turn(_run_cached, key, build, [value])[0]
    # a tensor made by to_global owns its storage (B -> S slices and B -> P keep views of the source pieces):
    # an in-place update of one (an optimizer step) must not change the other
    for i, p in enumerate(out.pieces):
        if any(_np.may_share_memory(p, q) for q in value.pieces if isinstance(q, _np.ndarray)) \
                and isinstance(p, _np.ndarray):
            out.pieces[i] = p.copy()
    return out


def run_grad(op_type, attrs, inputs, outputs, dys, needed, forward=None):
    """The gradients of a forward op's inputs (None where not needed or not defined), from its declared grad
    rule: `inputs`/`outputs` are the forward values, `dys` the output gradients (None where there is none).
    `forward`: the op's compiled forward (`compiled_op`), which keeps the compiled backward of each layout of
    the gradients (the forward's layouts are its own); without it the backward is looked up by every layout."""
    feed = list(inputs) + list(outputs) + [d for d in dys if d is not None]
    needed = tuple(needed)
    if forward is not None:
        gkey = (_lks(dys), needed)
        compiled = forward.grads.get(gkey)
        if compiled is None:
            compiled = forward.grads[gkey] = agreement.in_turn(_compile_grad, op_type, forward.attrs, inputs,
                                                               outputs, dys, needed)
    else:
        ak = _attrs_key(attrs) if attrs else ()
        key = None if ak is None else ("grad", op_type, ak, _lks(inputs), _lks(outputs), _lks(dys), needed)
        compiled = None if key is None else _CTX.eager_plans.get(key)
        if compiled is None:
            compiled = agreement.in_turn(_cached, key, lambda: _compile_grad(op_type, dict(attrs or {}), inputs,
                                                                              outputs, dys, needed))
    if compiled.lock_free:
        return compiled.run_lock_free(feed)
    return agreement.in_turn(compiled.run, feed)


def _compile_grad(op_type, attrs, inputs, outputs, dys, needed):
    """The compiled backward of one op: a job of its declared gradient rule over input ops for the forward's
    inputs, outputs and output gradients."""
    placement = inputs[0].placement if inputs else outputs[0].placement
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
    what = "eager op '%s' (backward)" % op_type
    feed = list(inputs) + list(outputs) + [d for d in dys if d is not None]
    identity = "%s of %s %s %s needing %s" % (_op_identity(what, attrs, feed), _layouts(inputs), _layouts(outputs),
                                               _layouts(dys), tuple(needed))
    return _compile(job, wanted, what, op_type + " (backward)", identity, pipeline.EAGER_GRAD)


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
        meta = value.meta
        if S.is_nd(value.sbp):  # made whole on every device of its mesh first (steps over sub-groups)
            if identity is not None:
                agreement.global_op(identity, members)
                identity = None
            pieces, pl, sbp = boxing_exec.broadcast_on_mesh(runtime(), list(value.pieces), value.placement,
                                                            value.sbp, meta.shape, meta.dtype.np)
            value = Value(meta, pl, sbp, pieces)
        if identity is not None and value.sbp == S.P and meta.dtype.is_floating and \
                _np.prod(meta.shape, dtype=_np.int64) <= agreement.PAYLOAD:
            # a small partial sum (a loss): its addends ride in the check's payload (one collective, the check)
            acc = buckets.partial_addends(value)
            sums = buckets.carried_sum(value, acc, members)
            if sums is not None:
                # the backward's gradient bucket carried these very addends to these members (`remember_sum`):
                # nothing to send; the operation joins the chain, compared at the next check
                agreement.global_op(identity, None)
            else:
                sums = agreement.global_op(identity, members, acc.ravel())
            return _np.asarray(sums.reshape(meta.shape).astype(meta.dtype.np))
        if identity is not None:
            agreement.global_op(identity, members)
        return boxing_exec.materialize(c, list(value.pieces), value.placement, value.sbp, value.meta.shape,
                                       value.meta.dtype.np, list(range(c.size)))


def _host(x):
    from oneflow_compat.backend import devices

    return devices.to_host(x)


BALANCED_MESSAGE = ("Sizes of tensors in dimension %d must be same or match balanced split distribution. See "
                    "https://github.com/Oneflow-Inc/oneflow/blob/master/oneflow/core/common/balanced_splitter.h "
                    "for details of balanced split")


def from_local(local, placement, sbp, what="to_global", check_meta=True):
    """A global value made of every rank's local value (every rank of the world calls it): split(d) concatenates
    the members' pieces along d (their sizes must follow the balanced split), broadcast takes the placement's
    first rank's value, partial_sum adds them. Ranks outside the placement hold no piece and receive the meta.

    `check_meta` (OneFlow 0.9's `to_global(..., check_meta=)`): False says every rank holds a local tensor of this
    rank's shape and dtype, so the ranks exchange no shapes (`sync_meta`). Where nothing else must cross the ranks
    (every rank of the world in the placement, no broadcast axis to synchronise) the cast then makes no collective:
    it joins this thread's agreement chain with this rank's local shape and dtype in its identity, so ranks whose
    local tensors differ after all fail at their next check, naming both sides' shapes."""
    return agreement.in_turn(_from_local_in_turn, local, placement, sbp, what, check_meta)


BALANCED_OVERRIDE_ENV = "ONEFLOW_EAGER_LOCAL_TO_GLOBAL_BALANCED_OVERRIDE"


def sync_meta(check_meta):
    """Whether a local -> global cast exchanges the ranks' shapes and dtypes: `check_meta`, unless
    ONEFLOW_EAGER_LOCAL_TO_GLOBAL_BALANCED_OVERRIDE says otherwise (true: never, false: always), as OneFlow v0.9.0
    decides (`NeedSyncAndCheckShapeAndDtype`, oneflow/core/functional/impl/global_cast.cpp)."""
    override = _os.environ.get(BALANCED_OVERRIDE_ENV)
    if override is None or not override.strip():
        return bool(check_meta)
    value = override.strip().lower()
    if value in ("1", "true", "yes", "on", "y"):
        return False
    if value in ("0", "false", "no", "off", "n"):
        return True
    raise ValueError("%s=%r: expected a boolean (1/0, true/false, yes/no, on/off)" % (BALANCED_OVERRIDE_ENV, override))


def _from_local_in_turn(local, placement, sbp, what, check_meta=True):
    text = "to_global of a local tensor onto %s %r (every rank must call it)" % (placement_text(placement), sbp)
    with operation(text):
        c = comm()
        owners = transitions.owners(placement)
        mine = (tuple(local.meta.shape), local.meta.dtype.name) if c.rank in owners else None
        identity, world = _world_identity(text)
        if identity is None:
            infos = [mine]
        elif not sync_meta(check_meta) and len(owners) == c.size and _broadcast_group(sbp, owners, c.rank) == [c.rank]:
            # every rank assumes the others hold what it holds; the assumption is in the identity the ranks compare
            assumed = "%s, check_meta=False: local tensor %s %s on every rank" % (text, mine[0], mine[1])
            agreement.global_op((agreement.digest(assumed), assumed), None)
            infos = [mine] * c.size
        else:
            infos = _exchange_layouts(identity, world, c, mine)
        return _from_local(local, placement, sbp, what, infos)


FEED_DIMS = 4  # dimensions of a local tensor whose shape rides in the check of its to_global


def _exchange_layouts(identity, world, c, mine):
    """Every rank's (shape, dtype name) of its local tensor, or None where it holds none, as one global operation:
    where the world is small enough, each rank's shape and dtype ride in its slots of the agreement check's payload
    (one collective, the check); else the check, then an exchange of the objects."""
    width = 2 + FEED_DIMS
    if c.size * width > agreement.PAYLOAD:
        agreement.global_op(identity, world)
        return c.allgather_object(mine)
    payload = _np.zeros(c.size * width)
    if mine is not None:
        shape, name = mine
        at = c.rank * width
        payload[at], payload[at + 1] = _dtype_code(name), len(shape)
        payload[at + 2:at + 2 + min(len(shape), FEED_DIMS)] = shape[:FEED_DIMS]
    sums = agreement.global_op(identity, world, payload)
    infos = []
    for r in range(c.size):
        at = r * width
        code, ndim = int(sums[at]), int(sums[at + 1])
        if ndim > FEED_DIMS:  # some rank's shape did not fit (every rank sees it): exchange them all
            return c.allgather_object(mine)
        infos.append(None if code == 0 else (tuple(int(d) for d in sums[at + 2:at + 2 + ndim]), _dtype_name(code)))
    return infos


def _dtype_names():
    from oneflow_compat.ir import dtypes

    return sorted({d.name for d in dtypes.ALL} | set(_DTYPES_BY_NAME))


def _dtype_code(name):
    """A dtype's number in the payload of a check (1, 2, …; 0: no tensor), the same on every rank."""
    return _dtype_names().index(name) + 1


def _dtype_name(code):
    return _dtype_names()[code - 1]


def _from_local(local, placement, sbp, what, infos):
    """The global value of every rank's local value, from `infos`: every rank's (shape, dtype name) or None."""
    c = comm()
    members = transitions.owners(placement)
    me = c.rank in members
    got = [infos[r] for r in members]
    names = sorted({d for _, d in got})
    if len(names) > 1:
        raise TypeError("%s: the ranks of %s hold local tensors of different dtypes (%s)"
                        % (what, placement, ", ".join("rank %d: %s" % (r, d) for r, (_, d) in zip(members, got))))
    shapes = [s for s, _ in got]
    if any(len(s) != len(shapes[0]) for s in shapes):
        raise ValueError("%s: the ranks of %s hold local tensors of different ranks (shapes %s)"
                         % (what, placement, shapes))
    if S.is_nd(sbp):
        logical = _nd_logical_shape(shapes, sbp, placement, members, what)
    elif S.is_split(sbp):
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
        group = _broadcast_group(sbp, members, c.rank)
        if len(group) > 1:  # B: the first rank's value (of each group along the B axes of a mesh)
            from oneflow_compat.backend import devices

            buf = np.array(devices.to_host(piece), copy=True, order="C")
            c.bcast_(buf, group[0], group)
            piece = to_device(buf, placement)
        pieces = [piece]
    return Value(TensorMeta(logical, dtype), placement, sbp if placement.parallel_num > 1 else S.B, pieces)


def _broadcast_group(sbp, members, me):
    """The ranks whose local tensors `me`'s piece is synchronised with in a local -> global cast: every member
    for B, none for S and P; on a mesh, the members that differ from `me` only on the B axes (OneFlow's
    `GetBroadcastSubParallelDesc`, consistent_cast.cpp at v0.9.0), the first of them the root."""
    if S.is_nd(sbp):
        mesh, mine = sbp.mesh, S.mesh_coords(members.index(me), sbp.mesh)
        keep = [k for k, s in enumerate(sbp.sbps) if s != S.B]
        return [r for i, r in enumerate(members)
                if all(S.mesh_coords(i, mesh)[k] == mine[k] for k in keep)]
    return list(members) if sbp == S.B else [me]


def _nd_logical_shape(shapes, sbp, placement, members, what):
    """The logical shape of the members' local shapes laid out as the n-D `sbp` (nested balanced splits), checked:
    along each tensor axis the pieces at coordinate 0 of every mesh axis that does not split it add up."""
    n, mesh, nd = len(members), sbp.mesh, len(shapes[0])
    logical = list(shapes[0])
    for a in range(nd):
        axes = [k for k, s in enumerate(sbp.sbps) if S.is_split(s) and s.axis == a]
        if axes:
            logical[a] = sum(shapes[i][a] for i in range(n)
                             if all(c == 0 for k, c in enumerate(S.mesh_coords(i, mesh)) if k not in axes))
    logical = tuple(logical)
    for i, s in enumerate(shapes):
        want = S.local_shape(logical, sbp, i, n)
        if s != want:
            off = [a for a in range(nd) if s[a] != want[a]]
            if any(not S.splits_axis(sbp, a) for a in off):
                raise ValueError("%s: with %r the ranks of %s must hold local tensors of one shape outside the "
                                 "split dimensions, got %s" % (what, sbp, placement, ", ".join(
                                     "rank %d: %s" % (r, t) for r, t in zip(members, shapes))))
            raise ValueError(BALANCED_MESSAGE % off[0])
    return logical


_DTYPES_BY_NAME = {}


def register_dtype(dtype):
    _DTYPES_BY_NAME[dtype.name] = dtype


def _dtype_named(name, fallback):
    from oneflow_compat.ir import dtypes

    for d in dtypes.ALL:
        if d.name == name:
            return d
    return _DTYPES_BY_NAME.get(name, fallback)
