"""Tracing `nn.Graph.build` into a legacy `Job`: lazy values, the ops they add, variables bound to eager tensors.

While `build` runs, every op on tensors adds an op to the graph's job (`apply`) instead of running: its placement
is the placement of its inputs (one placement per op, as eagerly), its name says which module made it. A
`LazyValue` stands where an eager `global_eager.Value` would (meta, compiler placement, and the SBP the compiler
will choose, inferred on demand); it has no pieces.

Eager tensors that reach an op inside `build` become `variable` ops of the job (`variable_for`): a module's
parameters named by their attribute path (`module_pipeline.m_stage0.linear0.weight`), any other tensor as a
captured constant. The job's variables keep no storage of their own: at every call the compiled graph binds each
variable to the eager tensor's piece of this rank (`bindings`), so updates made by the graph are the eager
parameters' updates, and eager changes are seen by the graph.

Graph inputs are `input` ops pinned to the input tensor's placement and SBP, of micro-batch shape when gradient
accumulation cuts each call into micro-batches (`micro_shape`).
"""
from oneflow_compat.ir import builder
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import Job
from oneflow_compat.ops import registry
from oneflow_compat.ops.variable_ops import VarSpec
from oneflow_compat.passes import pipeline
from oneflow_compat.runtime import global_eager
from oneflow_compat.runtime.session import Session

LAZY_VALUE_MESSAGE = ("%s of a lazy tensor is not supported within nn.Graph: inside build() a tensor has no value "
                      "yet (build is traced once into the graph); return the tensor from build() and use it on "
                      "the graph's output")


class LazyValue:
    """What `Tensor._value` holds for a tensor inside `nn.Graph.build`: a blob of the graph's job."""

    __slots__ = ("blob", "trace")

    def __init__(self, blob, trace):
        self.blob = blob
        self.trace = trace

    @property
    def meta(self):
        return self.blob.meta

    @property
    def shape(self):
        return self.blob.meta.shape

    @property
    def dtype(self):
        return self.blob.meta.dtype

    @property
    def placement(self):
        return self.blob.op.placement

    @property
    def sbp(self):
        """The SBP the compiler chooses for this blob (SBP inference of the job traced so far: the choice of an op
        never depends on the ops after it)."""
        return self.trace.sbp_of(self.blob)

    @property
    def pieces(self):
        raise RuntimeError(LAZY_VALUE_MESSAGE % "reading the value")

    def __repr__(self):
        return "LazyValue(%s, %s, %s)" % (self.blob.logical_blob_name, self.blob.meta.shape, self.placement)


class GraphTrace:
    """The job of one `nn.Graph` while `build` is traced, and what the compiled graph binds at every call."""

    def __init__(self, name, job_type, default_placement, micro_batches):
        self.job = Job(name, job_type, None)
        self.job.default_placement = default_placement
        self.job.micro_batches = micro_batches
        # what the job's builders and passes see as the session: the process runtime and the graph's variables
        self.session = Session("graph", global_eager.runtime(), root_seed=0)
        self.ctx = builder.BuildContext(self.job, self.session, default_placement, "consistent")
        self.bindings = {}  # variable name -> the eager tensor whose piece is its storage
        self._var_of = {}  # id(tensor) -> LazyValue of its variable
        self._keep = []  # tensors bound to variables stay alive, so their ids are not reused meanwhile
        # id(eager tensor) -> (LazyValue, tensor, requires grad): what a captured eager tensor reads as after an
        # in-place op on it in build (`_global/lazy.py` rename_captured)
        self.renamed = {}
        self.inputs = []  # the input ops, in argument order
        self.stage_of = {}  # op name -> pipeline stage id
        self.scopes = []  # (module path, stage id or None) of the modules being called, innermost last
        # activation checkpointing (passes/checkpointing.py): each called module's own setting (None: inherited),
        # innermost last; the forward ops made under a True one; the identities of checkpointed modules' inputs
        self.checkpointing = []
        self.job.checkpointing_ops = set()
        self.checkpoint_inputs = {}
        self.grad_tensors = {}  # blob key -> the lazy Tensor build reads as that blob's `.grad` (_global/lazy.py)
        self._inferred = -1  # number of ops the last on-demand SBP inference covered
        self._free = 0

    # --- where ops go -----------------------------------------------------------------------------------------
    def stage(self):
        for _, stage in reversed(self.scopes):
            if stage is not None:
                return stage
        return None

    def _prefix(self, op_type):
        path = next((p for p, _ in reversed(self.scopes) if p), "")
        return "%s-%s" % (path, op_type) if path else op_type

    def _new_op(self, op_type, blobs, attrs, placement, name=None, **hints):
        ctx = self.ctx
        with builder.Scoped(ctx):
            ctx.placements.append(placement)
            try:
                op = registry.new_op(op_type, blobs, attrs, name=name or self.job.unique_name(self._prefix(op_type)),
                                     **hints)
            finally:
                ctx.placements.pop()
        stage = self.stage()
        if stage is not None:
            self.stage_of[op.name] = stage
        if self.checkpointed():
            self.job.checkpointing_ops.add(op.name)
        return op

    def checkpointed(self):
        """Whether the module being called does activation checkpointing (the innermost module that set it says;
        OneFlow's scope attribute "checkpointing", inherited by the modules inside)."""
        for on in reversed(self.checkpointing):
            if on is not None:
                return on
        return False

    def apply(self, op_type, attrs, values, placement):
        """Adds op `op_type` reading `values` (LazyValues) on `placement`; returns its outputs as LazyValues."""
        op = self._new_op(op_type, [v.blob for v in values], dict(attrs or {}), placement)
        return [LazyValue(y, self) for y in op.outputs]

    def to_global(self, value, placement, sbp, grad_sbp=None):
        """`value` on (placement, sbp): an identity op pinned to them, for which the boxing pass inserts the
        transfer (across placements too)."""
        op = self._new_op("identity", [value.blob], {}, placement, in_hints={0: sbp}, out_hints={0: sbp})
        if grad_sbp is not None:
            op.grad_hints[0] = grad_sbp
        return LazyValue(op.outputs[0], self)

    # --- inputs and variables ---------------------------------------------------------------------------------
    def add_input(self, index, value):
        """An input op for eager input `value` (a global_eager.Value), pinned to its placement and SBP, of
        micro-batch shape."""
        shape = micro_shape(value, self.job.micro_batches, "input %d" % index)
        attrs = {"shape": shape, "dtype": value.meta.dtype, "kind": "numpy", "batch_axis": None, "sbp": value.sbp,
                 "index": index}
        op = self._new_op("input", [], attrs, value.placement, name="_input.%d" % index, out_hints={0: value.sbp})
        self.inputs.append(op)
        return LazyValue(op.outputs[0], self)

    def variable_for(self, tensor, name=None, trainable=False):
        """The variable op standing for eager tensor `tensor` in the job (one per tensor)."""
        hit = self._var_of.get(id(tensor))
        if hit is not None:
            return hit
        v = tensor._value
        if name is None:
            name = "_free_tensor.%d" % self._free
            self._free += 1
        spec = VarSpec(name, v.meta.shape, v.meta.dtype, None, None, bool(trainable), 0, v.placement, v.sbp)
        self.session.vars.add(spec)
        hints = {0: v.sbp} if v.placement.parallel_num > 1 else None
        op = self._new_op("variable", [], {"name": name, "spec": spec}, v.placement, name=name, out_hints=hints)
        self.job.variable_ops[name] = op
        self.bindings[name] = tensor
        self._keep.append(tensor)
        lazy = self._var_of[id(tensor)] = LazyValue(op.outputs[0], self)
        return lazy

    def mark_loss(self, value):
        self.job.losses.append(value.blob)

    # --- gradients inside build (OneFlow 0.9: `t.grad` after `loss.backward()` is the job's gradient blob) --------
    def grad_value(self, blob):
        """LazyValue of d(Σ losses)/d `blob`, usable by the ops traced after it and as a graph output; None when no
        loss marked so far depends on `blob` (OneFlow 0.9 leaves such a `.grad` None).

        The backward is built when the job compiles (passes/autodiff.py), after build returns; until then the
        gradient is an identity op standing in for it (`job.grad_requests`), which `build_backward` rewires to
        read the gradient blob and moves, with the ops reading it, after the backward ops (before the updates)."""
        key = blob.key()
        hit = self.job.grad_requests.get(key)
        if hit is not None:
            return LazyValue(hit.outputs[0], self)
        if not self._reaches_loss(key):
            return None
        name = self.job.unique_name(blob.op.name + "-grad")
        op = self._new_op("identity", [blob], {}, blob.op.placement, name=name)
        self.job.grad_requests[key] = op
        return LazyValue(op.outputs[0], self)

    def _reaches_loss(self, key):
        """Whether a gradient flows from a marked loss back to blob `key` (through ops with a gradient rule)."""
        reached = {key}
        stand_ins = {op.name for op in self.job.grad_requests.values()}
        for op in self.job.ops:
            if op.defn.grad is None or op.name in stand_ins:
                continue
            if any(x.key() in reached for x in op.inputs):
                reached.update(y.key() for y in op.outputs)
        return any(loss.key() in reached for loss in self.job.losses)

    # --- SBP on demand ------------------------------------------------------------------------------------------
    def sbp_of(self, blob):
        if self._inferred != len(self.job.ops):
            pipeline.choose_layouts(self.job, pipeline.GRAPH)
            self._inferred = len(self.job.ops)
        op = blob.op
        s = op.sbp_out[blob.index]
        return S.B if op.placement.parallel_num == 1 else s


def micro_shape(value, n, what):
    """The shape a micro-batch of `value` has: each local piece is cut into `n` parts along dim 0 (OneFlow's
    `unpack`), so dim 0 of every piece must be divisible by `n`."""
    shape = tuple(value.meta.shape)
    if n == 1:
        return shape
    if not shape:
        raise ValueError("nn.Graph %s: a 0-d tensor cannot be cut into %d micro-batches along dim 0 "
                         "(set_gradient_accumulation_steps(%d))" % (what, n, n))
    p = value.placement.parallel_num
    sizes = [shape[0]]
    if S.splits_axis(value.sbp, 0) and p > 1:  # each rank's rows (on a mesh: its nested piece's)
        sizes = [S.local_shape(shape, value.sbp, i, p)[0] for i in range(p)]
    if any(size % n for size in sizes):
        raise ValueError("nn.Graph %s: dim 0 of shape %s%s is not divisible by the gradient accumulation steps "
                         "(%d); every rank's piece is cut into %d micro-batches along dim 0"
                         % (what, shape, "" if len(sizes) == 1 else " (pieces of %s rows)" % sizes, n, n))
    return (shape[0] // n,) + shape[1:]


def layout_of(value, is_global=True, shown_sbp=None):
    """(shape, dtype name, placement, SBP, local or global, SBP as shown) of an eager value: what a compiled
    graph's inputs must keep (on one rank every SBP holds the same piece, but the one the tensor shows counts)."""
    return (tuple(value.meta.shape), value.meta.dtype.name, value.placement, value.sbp,
            "global" if is_global else "local", shown_sbp)
