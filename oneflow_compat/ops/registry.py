"""One declaration per op: shape/dtype rule, SBP signatures, gradient rule, kernel, and the properties the passes
and the runtime act on.

Adding an op: its kernel in `kernels/`, `register(OpDef(...))` in the module of its family, its example rows in
`ops/examples.py`, and its surface function. Passes and the runtime read an op's declaration (`op.defn`), never
its type name (tests/test_op_properties.py checks).

What an op computes:

* `infer(op) -> [TensorMeta]` — logical output metas from `op.inputs[i].meta` and `op.attrs`.
* `kernel(xp, *arrays, **kernel_attrs)` — a pure array function from `kernels/`, never one written in an op module
  (tests/test_kernel_set.py checks).
* `kernel_attrs(op) -> dict` — the keyword attributes the kernel takes (default: none).
* `local_attrs(op, dev) -> dict` — per-device attributes when they depend on the device's piece (reshape targets,
  random offsets); `dev` is a `runtime.plan.DeviceSlot`.
* `build(op, dev) -> callable(*arrays)` — for ops whose kernel needs the session (learning rate, updates,
  dropout's call counter); overrides kernel/kernel_attrs, and calls `kernels/` functions for the array work.
* `build_collective(op, session) -> callable(*all local input pieces) -> tuple of all local output pieces` — for
  ops that see every device at once (`collective=True`).
* `grad(op, dys) -> [blob | None]` — input gradients built from other ops with `apply`.
* `sbp(op) -> [(in_sbps, out_sbps)]` — legal signatures on >1 devices, in order of preference; `mirrored_sbp(op,
  ins)` the one signature of a view cast.

Properties (what the passes and the runtime need to know about an op, declared instead of looked up by name):

* `role` — "compute" (default); "input": fed by the job call (the plan gives it input registers, the executor
  writes them, eager mode binds the argument); "variable": reads a session variable (registers bound to the
  variable's storage, fetched before the call's updates, where gradients end in autodiff, read as it lies when
  the user distributed it). Inputs and variables are never pruned.
* `view_cast` — None, or the logical view ("mirrored" | "consistent") a cast between views produces: the op
  factory inserts it where a blob of the other view is read (`new_op`), it lives in that view, and SBP inference
  takes its `mirrored_sbp`.
* `stateful` — has side effects: never pruned, never reordered across.
* `in_place` — updates the storage of its inputs (variables, optimizer state) instead of producing outputs;
  implies `stateful`. Where the replicas of a broadcast input are one array (in-process CPU devices) it runs once.
* `fresh_output` — its output is a newly allocated array that no other register aliases: a consumer that is its
  only reader may overwrite it (the optimizer's in-place gradient scaling, `system_ops.input_owned`).
* `collective` — one step over every local device at once (`build_collective`, or the runtime's hook).
* `boxing` — a transition inserted by the boxing pass (its attrs name the transition of `ops/transitions.py`, its
  collective and bytes): `explain` lists these.
* `runtime_hook` — None, or the name under which the runtime supplies the op's function because it needs the
  runtime itself (a watch hands the full logical value to a Python handler): `runtime/executor.py` and eager mode
  keep the table of hooks.
* `indexed_rows` — None, or `fn(op) -> blob | None`: the indices whose rows (axis 0) are the only non-zero rows
  of the op's output (a gather's gradient), for the indexed-slices optimizer (passes/optimizer_pass.py).
* `rowwise` — each row of the output (axis 0) depends on the same row of input 0 alone (identities, scalings): the
  indexed rows of a gradient survive it.
* `recomputable` — (default True) nn.Graph's activation checkpointing may run it again in the backward
  (passes/checkpointing.py); False for batch normalization, as OneFlow 0.9's CheckpointingPass leaves it alone.
* `amp_color`, `amp_black_listed`, `amp_no_cast`, `amp_shape_only` — the op's colour on OneFlow 0.9's
  auto-mixed-precision lists (white / gray / clear / black), whether it is on the black list itself (not merely on
  no list), the inputs the AMP casts leave alone, and the inputs read for their shape alone: read from
  `ops/amp_lists.py` by the op's OneFlow type (nn.Graph's AMP pass, passes/amp.py); `amp_rules(rules)` answers all
  four under one release's rules (`amp_lists.V04`: the legacy `enable_auto_mixed_precision`).
"""
from oneflow_compat.ir import time_shape
from oneflow_compat.ops import amp_lists
from oneflow_compat.ir.graph import LazyBlob, Op

_REGISTRY = {}
_VIEW_CASTS = {}  # view -> the type of the cast op producing it
ROLES = ("compute", "input", "variable")
VIEWS = ("mirrored", "consistent")


class OpDef:
    def __init__(self, type, infer, kernel=None, kernel_attrs=None, local_attrs=None, build=None, grad=None,
                 sbp=None, num_outputs=1, stateful=False, mirrored_sbp=None, collective=False,
                 build_collective=None, role="compute", view_cast=None, in_place=False, fresh_output=False,
                 boxing=False, runtime_hook=None, indexed_rows=None, rowwise=False, recomputable=True):
        if role not in ROLES:
            raise ValueError("op %r: role must be one of %s, got %r" % (type, ROLES, role))
        if view_cast is not None and view_cast not in VIEWS:
            raise ValueError("op %r: view_cast must be one of %s, got %r" % (type, VIEWS, view_cast))
        self.type = type
        self.infer = infer
        self.kernel = kernel
        self.kernel_attrs = kernel_attrs
        self.local_attrs = local_attrs
        self.build = build
        self.grad = grad
        self.sbp = sbp
        self.num_outputs = num_outputs
        self.mirrored_sbp = mirrored_sbp
        self.build_collective = build_collective
        # properties (see the module docstring)
        self.role = role
        self.view_cast = view_cast
        self.in_place = in_place
        self.stateful = stateful or in_place
        self.fresh_output = fresh_output
        self.collective = collective
        self.boxing = boxing
        self.runtime_hook = runtime_hook
        self.indexed_rows = indexed_rows
        self.rowwise = rowwise
        self.recomputable = recomputable

    def amp_rules(self, rules):
        """The op's colour, black listing, no-cast and shape-only inputs under one release's AMP rules
        (`amp_lists.V09`, `amp_lists.V04`)."""
        return rules.info(self.type)

    @property
    def amp_color(self):
        return amp_lists.color(self.type)

    @property
    def amp_black_listed(self):
        return amp_lists.listed_black(self.type)

    @property
    def amp_no_cast(self):
        return amp_lists.no_cast_inputs(self.type)

    @property
    def amp_shape_only(self):
        return amp_lists.shape_only_inputs(self.type)

    def __repr__(self):
        return "<OpDef %s>" % self.type


def register(defn):
    if defn.type in _REGISTRY:
        raise ValueError("op type %r registered twice" % defn.type)
    if defn.view_cast is not None:
        if defn.view_cast in _VIEW_CASTS:
            raise ValueError("op types %r and %r both cast to the %s view" % (
                _VIEW_CASTS[defn.view_cast], defn.type, defn.view_cast))
        _VIEW_CASTS[defn.view_cast] = defn.type
    _REGISTRY[defn.type] = defn
    return defn


def get(op_type):
    try:
        return _REGISTRY[op_type]
    except KeyError:
        raise KeyError("no op type %r is registered" % (op_type,)) from None


def all_types():
    return sorted(_REGISTRY)


def new_op(op_type, inputs, attrs=None, name=None, in_hints=None, out_hints=None):
    """Adds an op to the job being built (in eager mode: also runs it) and returns the Op."""
    from oneflow_compat.ir import builder

    ctx = builder.current("op '%s'" % op_type)
    defn = get(op_type)
    if any(time_shape.is_timed(x) for x in inputs):
        raise ValueError("op '%s' cannot be built on blobs with a time shape (after flow.unpack / flow.repeat): "
                         "pack or acc them first" % op_type)
    attrs = dict(attrs or {})
    inputs = [_in_view(ctx, ctx.check_input(x, op_type), defn) for x in inputs]
    # OneFlow (v0.3.4/v0.4.0 `ops/user_op_builder.py`) prefixes every op name, given or generated, with the
    # namespaces open around it joined by '-': the same name may be used in two `flow.scope.namespace`s. A
    # variable op is named by its variable's full name, which holds the namespaces already (OneFlow's
    # PrependOpNamePrefixIfNeed skips variable_conf).
    prefix = "" if op_type == "variable" else "".join(ns + "-" for ns in ctx.namespaces)
    name = ctx.job.unique_name(prefix + op_type) if name is None else prefix + name
    # a view cast lives in the view it casts to, so that its consumers see the right view
    view = defn.view_cast or ctx.view
    op = Op(ctx.job, name, op_type, defn, inputs, attrs, ctx.placement, view)
    op.section = ctx.section
    for i, x in enumerate(inputs):
        if x.hint is not None:
            op.in_hints[i] = x.hint
    op.in_hints.update(in_hints or {})
    op.out_hints.update(out_hints or {})
    metas = defn.infer(op)
    op.outputs = [LazyBlob(op, i, m) for i, m in enumerate(metas)]
    ctx.add_op(op)
    return op


def _in_view(ctx, x, defn):
    """`x` as an op of the current view reads it: a blob of the other view goes through the view cast to this
    view (legacy inserted these casts implicitly)."""
    if defn.view_cast is not None or (x.op.view == "mirrored") == (ctx.view == "mirrored"):
        return x
    return apply(_VIEW_CASTS["mirrored" if ctx.view == "mirrored" else "consistent"], [x])


def apply(op_type, inputs, attrs=None, name=None, **hints):
    """Adds an op and returns its output: one blob for a one-output op, else a list. On blobs with a time shape
    (`ir/time_shape.py`) the op is built once per tick and its outputs are timed blobs."""
    if any(time_shape.is_timed(x) for x in inputs):
        n = time_shape.tick_count(inputs, "op '%s'" % op_type)
        per_tick = [apply(op_type, [x.ticks[t] if time_shape.is_timed(x) else x for x in inputs], attrs,
                          None if name is None else "%s-tick%d" % (name, t), **hints) for t in range(n)]
        if isinstance(per_tick[0], list):
            return [time_shape.TimedBlob([outs[k] for outs in per_tick]) for k in range(len(per_tick[0]))]
        return time_shape.TimedBlob(per_tick)
    op = new_op(op_type, inputs, attrs, name, **hints)
    return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)
