"""A compiled `nn.Graph`: its traced job through the compile pipeline, its executable, and one call of it.

Compiling runs the SAME pipeline as a legacy job (`passes/pipeline.py`, options `GRAPH`: for training graphs
backward, scaling by 1/(loss elements × micro-batches) and the optimizer's update ops; prune; SBP choice; fusion;
boxing) and builds the same executable (`runtime/executable.py`). Every rank compiles the same job; the ranks
check that their plans agree before the first call.

A call feeds each input's register from THIS rank's own pieces (no rank-0 feed), binds every variable to the eager
tensor holding its storage (parameters and optimizer state: updates are in place, shared with eager code), runs
the steps, and hands back each output as this rank's pieces (none on ranks outside its placement), never
assembled.

Gradient accumulation (`micro_batches` = n > 1, OneFlow's meaning): one call is one mini-batch. Every input piece
is cut into n micro-batches along dim 0 (OneFlow's `unpack`, per local piece); the executable runs forward and
backward once per micro-batch, sums the raw gradients, then runs the optimizer steps once (the 1/n is folded into
the update by the optimizer pass, so a mean loss gives the full-batch update). Outputs are packed along dim 0
(`pack`): a scalar output becomes shape (n,).

Pipelined schedule (a graph with pipeline stages and n > 1 micro-batches, as OneFlow pipelines only then): the
executable's GPipe schedule, with one plan copy per micro-batch (its own registers: the activations of every
micro-batch stay alive until its backward): the forward steps of micro-batches 0…n-1, then their backward steps
0…n-1, then the optimizer once. While a later stage works on micro-batch m, an earlier one already runs m+1, so
stages overlap; the numbers are those of the sequential schedule, bit for bit.
"""
import numpy as np

from oneflow_compat.backend import devices
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.passes import pipeline
from oneflow_compat.runtime import agreement, buckets, executable, global_eager, graph_report


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
        session = trace.session
        pipeline.compile_job(session, job, pipeline.GRAPH, trace.ctx)
        self.stage_of = dict(trace.stage_of)
        for clone, original in getattr(job, "recompute_of", {}).items():  # passes/checkpointing.py
            if original in self.stage_of:
                self.stage_of[clone] = self.stage_of[original]
        rt = session.runtime
        if check_across_ranks:
            executable.check_same_plans_across_ranks(rt.comm, [("plan of nn.Graph '%s'" % name, job)])
        self.pipelined = bool(self.stage_of) and self.micro_batches > 1
        self.schedule = "gpipe" if self.pipelined else "sequential"
        self.exe = executable.Executable(job, session, lambda blob, sbp: _copies,
                                         copies=self.micro_batches if self.pipelined else 1)
        self.plan = self.exe.plan
        self.outputs = []
        for blob, _ in job.output_blobs:
            op = blob.op
            sbp = op.sbp_out[blob.index]
            if op.placement.parallel_num == 1:
                sbp = S.B
            self.outputs.append((blob.meta, op.placement, sbp))
        self._getters = {}  # variable name -> () -> this rank's piece of its storage
        self.calls = 0
        self.check_rides = _effect_free_until_first_collective(self.plan)
        # (output index, shape) of a small partial-sum output (a loss) whose addends ride in the call's carried
        # check, filled in just before the bucket all-reduce that carries it (`_fill_carried`); `pending`: the
        # call's [check, addends filled] while it runs
        self.pending = None
        self.carried_output = self._carried_output(rt)
        graph_report.remember(self)

    def _carried_output(self, rt):
        """Where a call's check rides in a gradient bucket's all-reduce over the whole world, and an output is a
        small floating partial sum on the whole world on CPU devices (a data-parallel loss) fetched before that
        all-reduce, its addends ride in the check too (the check of its later `numpy()`, whose members are the
        world: it then sends nothing). Every rank compiled the same plan, so every member decides alike."""
        if not self.check_rides or self.micro_batches != 1 or self.pipelined or self.exe.captured is not None:
            return None
        world = tuple(range(rt.comm.size))
        plan = self.plan
        first = None  # the first step that communicates: the last member of a bucket, nothing else before it
        for op in plan.step_ops:
            if not (op.defn.collective or op.defn.boxing):
                continue
            member = op.attrs.get("bucket")
            if member is None:
                return None
            if member[1] == member[2] - 1:
                first = op
                break
        run = None if first is None else self.exe.bucket_runs[0].get(first.attrs["bucket"][0])
        if run is None or tuple(run.ranks) != world:
            return None
        at = plan.step_ops.index(first)
        for k, (meta, pl, sbp) in enumerate(self.outputs):
            blob = self.job.output_blobs[k][0]
            if sbp != S.P or not meta.dtype.is_floating or pl.device_tag != "cpu" or \
                    int(np.prod(meta.shape)) > agreement.PAYLOAD or \
                    tuple(sorted({m for m, _ in pl.pairs})) != world or blob.op not in plan.step_ops[:at]:
                continue
            run.before_reduce = self._fill_carried
            return k, tuple(meta.shape)
        return None

    def _fill_carried(self):
        """Before the bucket all-reduce that carries the call's check: the carried output's addends (fetched by
        now) written into the check's payload."""
        pending = self.pending
        if pending is None:
            return
        k, shape = self.carried_output
        addends = buckets.addends_of(shape, self.plan.results[k])
        if pending[0].fill_payload(addends.ravel()):
            pending[1] = addends

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
        self.exe.bind_variables(self._getters)

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
        n = self.micro_batches
        pieces = [v.pieces for v in values]
        exe = self.exe
        try:
            outs = exe.call(lambda copy, micro: exe.feed_pieces(copy, pieces, micro))
        finally:
            exe.finish()
        self.calls += 1
        out = []
        for k, (meta, pl, sbp) in enumerate(self.outputs):
            shape = meta.shape
            if n > 1:
                shape = (n,) if not shape else (shape[0] * n,) + tuple(shape[1:])
                got = pack([o[k] for o in outs])
            else:
                got = outs[0][k]
            out.append(global_eager.Value(TensorMeta(shape, meta.dtype), pl, sbp, got))
        return out


def _effect_free_until_first_collective(plan):
    """Whether a call's identity check may ride in the first collective the call makes (`agreement.global_op`'s
    `carry`: a data-parallel graph's gradient bucket, summed through shared memory, carries it): the plan makes a
    collective on CPU devices, and no step before it has an effect (a stateful op: a variable or accumulator
    updated, a running statistic, a random draw's counter), so a call that a failed check stops has changed
    nothing and may run again in its turn. Otherwise the check is made on its own before the call."""
    for op in plan.step_ops:
        d = op.defn
        if d.collective or d.boxing:
            return op.placement.device_tag == "cpu"
        if d.stateful or d.in_place:
            return False
    return False


def _copies(pieces):
    """An output's pieces as the call returns them: copies, since later steps may update the register's array in
    place (a boxing that owns a fresh partial sum reduces into it; variables are updated after being read)."""
    return [p.copy() for p in pieces]


def pack(micro_pieces):
    """[micro-batch][piece] -> [piece]: each piece's micro-batches joined along dim 0 (0-d values stacked)."""
    packed = []
    for j in range(len(micro_pieces[0])):
        parts = [ps[j] for ps in micro_pieces]
        xp = devices.module_of(parts[0])
        packed.append(xp.stack(parts) if parts[0].ndim == 0 else xp.concatenate(parts, axis=0))
    return packed


def _describe(layout):
    shape, dtype, pl, sbp, kind, shown = layout
    if kind == "local":
        return "a local tensor %s %s" % (tuple(shape), dtype)
    return "a global tensor %s %s on %s %s" % (tuple(shape), dtype, global_eager.placement_text(pl),
                                               ", ".join(map(repr, shown)) if shown else repr(sbp))
