"""One declaration per op: shape/dtype rule, SBP signatures, gradient rule, kernel.

Adding an op touches one place: `register(OpDef(...))` in the module of its family. Passes look ops up here by type;
nothing else switches on op types.

* `infer(op) -> [TensorMeta]` — logical output metas from `op.inputs[i].meta` and `op.attrs`.
* `kernel(xp, *arrays, **kernel_attrs)` — a pure array function from `kernels/`, never one written in an op module
  (tests/test_kernel_set.py checks).
* `kernel_attrs(op) -> dict` — the keyword attributes the kernel takes (default: none).
* `local_attrs(op, dev) -> dict` — per-device attributes when they depend on the device's piece (reshape targets,
  random offsets); `dev` is a `passes.plan.DeviceSlot`.
* `build(op, dev) -> callable(*arrays)` — for ops whose kernel needs the session (learning rate, updates,
  dropout's call counter); overrides kernel/kernel_attrs, and calls `kernels/` functions for the array work.
* `collective=True` with `build_collective(op, session) -> callable(*all local input pieces) -> tuple of all
  local output pieces` — for ops that see every device at once (boxing); a collective whose function needs the
  runtime itself (watch, which calls a Python handler) gets it from the runtime instead (`runtime/executor.py`).
* Inputs of the other logical view get a view cast (`cast_to_mirrored` / `cast_from_mirrored`) from `new_op`.
* `grad(op, dys) -> [blob | None]` — input gradients built from other ops with `apply`.
* `sbp(op) -> [(in_sbps, out_sbps)]` — legal signatures on >1 devices, in order of preference.
"""
from oneflow_compat.ir.graph import LazyBlob, Op

_REGISTRY = {}
_CAST_VIEWS = {"cast_to_mirrored": "mirrored", "cast_from_mirrored": "consistent"}


class OpDef:
    def __init__(self, type, infer, kernel=None, kernel_attrs=None, local_attrs=None, build=None, grad=None,
                 sbp=None, num_outputs=1, stateful=False, mirrored_sbp=None, collective=False,
                 build_collective=None):
        self.type = type
        self.infer = infer
        self.kernel = kernel
        self.kernel_attrs = kernel_attrs
        self.local_attrs = local_attrs
        self.build = build
        self.grad = grad
        self.sbp = sbp
        self.num_outputs = num_outputs
        self.stateful = stateful  # has side effects: never pruned, never reordered across
        self.mirrored_sbp = mirrored_sbp
        self.collective = collective
        self.build_collective = build_collective

    def __repr__(self):
        return "<OpDef %s>" % self.type


def register(defn):
    if defn.type in _REGISTRY:
        raise ValueError("op type %r registered twice" % defn.type)
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
    attrs = dict(attrs or {})
    inputs = [_in_view(ctx, ctx.check_input(x, op_type), op_type) for x in inputs]
    if name is None:
        name = ctx.job.unique_name(op_type)
    # a view cast lives in the view it casts to, so that its consumers see the right view
    view = _CAST_VIEWS.get(op_type, ctx.view)
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


def _in_view(ctx, x, op_type):
    """`x` as an op in the current view reads it: a blob of the other view goes through a view cast (legacy
    inserted these casts implicitly)."""
    if op_type in _CAST_VIEWS or (x.op.view == "mirrored") == (ctx.view == "mirrored"):
        return x
    return apply("cast_to_mirrored" if ctx.view == "mirrored" else "cast_from_mirrored", [x])


def apply(op_type, inputs, attrs=None, name=None, **hints):
    """Adds an op and returns its output: one blob for a one-output op, else a list."""
    op = new_op(op_type, inputs, attrs, name, **hints)
    return op.outputs[0] if len(op.outputs) == 1 else list(op.outputs)
