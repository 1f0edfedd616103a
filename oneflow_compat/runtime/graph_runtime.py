"""A compiled `nn.Graph`: its traced job through the legacy passes, its plan, and one call of it.

Compiling runs the SAME passes as a legacy job (`passes/optimizer_pass` for training graphs: backward, scaling by
1/(loss elements × micro-batches), the optimizer's update ops; `prune`; `sbp_infer`; `boxing`) and builds the
same per-device plan (`passes/plan.py`). Every rank compiles the same job; the ranks check that their plans agree
before the first call.

A call feeds each input's register from THIS rank's own pieces (no rank-0 feed), binds every variable to the eager
tensor holding its storage (parameters and optimizer state: updates are in place, shared with eager code), runs
the steps, and hands back each output as this rank's pieces (none on ranks outside its placement), never
assembled.

Gradient accumulation (`micro_batches` = n > 1, OneFlow's meaning): one call is one mini-batch. Every input piece
is cut into n micro-batches along dim 0 (OneFlow's `unpack`, per local piece); the forward and backward steps
run once per micro-batch, the raw gradients are summed, then the optimizer steps run once (the 1/n is folded into
the update by the optimizer pass, so a mean loss gives the full-batch update). Outputs are packed along dim 0
(`pack`): a scalar output becomes shape (n,).

Pipelined schedule (a graph with pipeline stages and n > 1 micro-batches, as OneFlow pipelines only then): GPipe.
Each micro-batch gets its own copy of the plan (its own registers: the activations of every micro-batch stay alive
until its backward), and every rank runs its steps in the order (phase, micro-batch, plan order): the forward
steps of micro-batches 0…n-1, then their backward steps 0…n-1, then the optimizer once. While a later stage works
on micro-batch m, an earlier one already runs m+1, so stages overlap. The order is one total order that every
rank follows on its own steps, so the collectives and transfers between stages meet in the same order on every
rank (no deadlock, whatever the MPI buffering), and the gradients are summed in micro-batch order: the numbers
are those of the sequential schedule, bit for bit.
"""
import numpy as np

from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.passes import boxing, optimizer_pass, prune, sbp_infer
from oneflow_compat.passes.pipeline import fingerprint
from oneflow_compat.passes.plan import Plan
from oneflow_compat.runtime import activity, global_eager, graph_report, hooks


class GraphInputError(ValueError):
    pass


class CompiledGraph:
    def __init__(self, trace, input_layouts, outputs, name, check_across_ranks=True):
        """`trace`: the GraphTrace after build; `input_layouts`: `graph_trace.layout_of` the eager inputs of the
        first call (the graph's inputs keep them); `outputs`: the LazyValues build returned, flat."""
        self.name = name
        self.trace = trace
        job = self.job = trace.job
        self.micro_batches = job.micro_batches
        self.input_layouts = list(input_layouts)
        job.output_blobs = [(v.blob, "numpy") for v in outputs]
        if job.is_train:
            optimizer_pass.build(trace.session, job, trace.ctx)
        prune.prune(job)
        sbp_infer.infer(job, exact_first=True)
        boxing.insert(job)
        self.stage_of = dict(trace.stage_of)
        rt = global_eager.runtime()
        if check_across_ranks and rt.comm.size > 1:
            rt.comm.check_same(fingerprint(job), "plan of nn.Graph '%s'" % name, "op")
        session = trace.session
        self.pipelined = bool(self.stage_of) and self.micro_batches > 1
        self.schedule = "gpipe" if self.pipelined else "sequential"
        copies = self.micro_batches if self.pipelined else 1
        def collective(op):  # names its op in what this rank runs (timeout and departure reports)
            return activity.issued_by(op.name, hooks.build_collective(op, session))

        self.plans = [Plan(job, rt, session, collective, lambda blob, sbp: _copies) for _ in range(copies)]
        self.plan = self.plans[0]
        self.in_regs = [[[reg for _, reg in slots] for _, slots in plan.input_slots] for plan in self.plans]
        self.outputs = []
        for blob, _ in job.output_blobs:
            op = blob.op
            sbp = op.sbp_out[blob.index]
            if op.placement.parallel_num == 1:
                sbp = S.B
            self.outputs.append((blob.meta, op.placement, sbp))
        self.grad_regs = [self.plan.slot[(g.key(), i)] for g in job.raw_grads
                          for i in rt.local_indices(g.op.placement)]
        ops = self.plan.step_ops
        self.backward_start = next((k for k, op in enumerate(ops) if op.section != "forward"), len(ops))
        if any(op.section == "forward" for op in ops[self.backward_start:self.plan.optimizer_start]):
            raise AssertionError("nn.Graph '%s': a forward step follows a backward step in the plan" % name)
        self._getters = {}  # variable name -> () -> this rank's piece of its storage
        self._var_regs = None
        self.calls = 0
        graph_report.remember(self)

    # --- variables ------------------------------------------------------------------------------------------------
    def variable_specs(self):
        return [op.attrs["spec"] for op in self.job.variable_ops.values()]

    def bind(self, name, getter):
        """Variable `name` reads and updates `getter()` (this rank's piece of an eager tensor) at every call."""
        self._getters[name] = getter

    def finish_binding(self):
        """Variables nobody bound (the train step counter) get storage of their own, with their initial value."""
        store = self.trace.session.vars
        for spec in self.variable_specs():
            if spec.name in self._getters:
                continue
            if spec.init_value is None:
                raise RuntimeError("nn.Graph '%s': variable '%s' has no storage" % (self.name, spec.name))
            store.initialize(spec)
        self._var_regs = []
        for plan in self.plans:
            regs = []
            for reg, spec, i in plan.var_slots:
                getter = self._getters.get(spec.name)
                if getter is None:
                    plan.regs[reg] = spec.shards[i]
                else:
                    regs.append((plan.regs, reg, getter))
            self._var_regs.extend(regs)

    # --- a call -----------------------------------------------------------------------------------------------------
    def check_inputs(self, values, layouts):
        """`values` (eager Values), whose `layouts` are `graph_trace.layout_of` them, must be laid out as the first
        call's inputs."""
        if len(values) != len(self.input_layouts):
            raise GraphInputError("nn.Graph '%s' was compiled for %d input tensor(s), got %d"
                                  % (self.name, len(self.input_layouts), len(values)))
        for i, (got, want) in enumerate(zip(layouts, self.input_layouts)):
            if got != want:
                raise GraphInputError(
                    "nn.Graph '%s': input %d is %s but the graph was compiled for %s; a graph's inputs keep the "
                    "shape, dtype, placement and SBP of its first call (build another graph for other inputs)"
                    % (self.name, i, _describe(got), _describe(want)))

    def run(self, values):
        """Runs one call on the eager input values; returns one Value per output (this rank's pieces). The caller
        holds the process-wide lock (`agreement.in_turn`) and names the call (`activity.operation`)."""
        for regs, reg, getter in self._var_regs:
            regs[reg] = getter()
        n = self.micro_batches
        try:
            if n == 1:
                self._feed(self.plan, self.in_regs[0], values, None)
                _run(self.plan, 0, len(self.plan.steps))
                per_output = [list(r) for r in self.plan.results]
            elif self.pipelined:
                per_output = self._run_pipelined(values, n)
            else:
                per_output = self._run_accumulating(values, n)
        finally:
            for plan, in_regs in zip(self.plans, self.in_regs):
                for slot_regs in in_regs:
                    for r in slot_regs:
                        plan.regs[r] = None
                plan.results[:] = [None] * len(plan.results)
        self.calls += 1
        out = []
        for (meta, pl, sbp), pieces in zip(self.outputs, per_output):
            pieces = [np.asarray(p) if isinstance(p, np.generic) else p for p in pieces]
            shape = meta.shape
            if n > 1:
                shape = (n,) if not shape else (shape[0] * n,) + tuple(shape[1:])
            out.append(global_eager.Value(TensorMeta(shape, meta.dtype), pl, sbp, pieces))
        return out

    @staticmethod
    def _feed(plan, in_regs, values, micro):
        regs = plan.regs
        for slot_regs, v in zip(in_regs, values):
            for r, piece in zip(slot_regs, v.pieces):
                if micro is not None:
                    m, n = micro
                    rows = piece.shape[0] // n
                    piece = piece[m * rows:(m + 1) * rows]
                regs[r] = piece

    def _run_accumulating(self, values, n):
        """Micro-batch after micro-batch through forward and backward, one register file."""
        plan, regs = self.plan, self.plan.regs
        split = plan.optimizer_start
        acc = {}
        outs = []
        for m in range(n):
            self._feed(plan, self.in_regs[0], values, (m, n))
            _run(plan, 0, split)
            for r in self.grad_regs:
                if m == 0:
                    acc[r] = regs[r].copy()
                else:
                    acc[r] += regs[r]
            outs.append([list(r) for r in plan.results])
        for r in self.grad_regs:
            regs[r] = acc[r]
        _run(plan, split, len(plan.steps))
        return [pack([o[k] for o in outs]) for k in range(len(self.outputs))]

    def _run_pipelined(self, values, n):
        """GPipe: every micro-batch's forward, then every micro-batch's backward, each in its own plan copy."""
        plans = self.plans
        first, split = self.backward_start, self.plan.optimizer_start
        for m, plan in enumerate(plans):
            self._feed(plan, self.in_regs[m], values, (m, n))
        for plan in plans:
            _run(plan, 0, first)
        for plan in plans:
            _run(plan, first, split)
        regs = self.plan.regs
        for r in self.grad_regs:
            acc = regs[r].copy()
            for plan in plans[1:]:
                acc += plan.regs[r]
            regs[r] = acc
        outs = [[list(r) for r in plan.results] for plan in plans]
        _run(self.plan, split, len(self.plan.steps))
        return [pack([o[k] for o in outs]) for k in range(len(self.outputs))]


def _copies(pieces):
    """An output's pieces as the call returns them: copies, since later steps may update the register's array in
    place (a boxing that owns a fresh partial sum reduces into it; variables are updated after being read)."""
    return [p.copy() for p in pieces]


def pack(micro_pieces):
    """[micro-batch][piece] -> [piece]: each piece's micro-batches joined along dim 0 (0-d values stacked)."""
    packed = []
    for j in range(len(micro_pieces[0])):
        parts = [np.asarray(ps[j]) if isinstance(ps[j], np.generic) else ps[j] for ps in micro_pieces]
        xp = _xp(parts[0])
        packed.append(xp.stack(parts) if parts[0].ndim == 0 else xp.concatenate(parts, axis=0))
    return packed


def _xp(array):
    if type(array).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def _run(plan, start, stop):
    steps, ops = plan.steps, plan.step_ops
    k = start
    try:
        for k in range(start, stop):
            steps[k]()
    except Exception as e:
        op = ops[k]
        if hasattr(e, "add_note"):
            e.add_note("(while running op '%s' of type '%s' in nn.Graph job '%s')" % (op.name, op.type,
                                                                                     plan.job.name))
        raise


def _describe(layout):
    shape, dtype, pl, sbp, kind, shown = layout
    if kind == "local":
        return "a local tensor %s %s" % (tuple(shape), dtype)
    return "a global tensor %s %s on %s %s" % (tuple(shape), dtype, global_eager.placement_text(pl),
                                               ", ".join(map(repr, shown)) if shown else repr(sbp))
