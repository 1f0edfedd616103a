"""ZeRO (`nn.Graph.config.enable_zero(stage=..., shard_min_size=..., shard_restore_level=...)`): the optimizer
states, the gradients' reduction and (stage 3) the parameters of a data-parallel variable sharded over its ranks.

Only SBPs change here; the boxing pass (`passes/boxing.py`, `ops/transitions.py`) inserts the collectives those
SBPs imply and `explain` shows them with their bytes, like any other boxing. For a trainable variable that is
broadcast (B) on a 1-D placement of n > 1 ranks (OneFlow's `GetDataParallelVariableAndNaiveSuccNode`) and whose
smallest S(0) piece holds at least `shard_min_size` elements (OneFlow's `IsSplitValid`: the unbalanced split's
smallest piece, so axis 0 need not be divisible by n, only at least n rows; a 0-d variable stays whole):

* stage 1: its optimizer states are variables of SBP S(0) (each rank holds 1/n); the gradient is all-reduced as
  without ZeRO (P -> B), the update reads its S(0) slice (B -> S(0), no communication), updates this rank's
  shard of the parameter (`System-ZeRO-Shard-<var>`, the parameter's rows of this rank), and an `assign` reading
  that shard as B writes the whole parameter back (S(0) -> B, an all-gather);
* stage 2: as stage 1, but the update reads the gradient's partial sums as S(0) directly: a reduce-scatter
  (P -> S(0)) instead of the all-reduce, half its bytes;
* stage 3: the parameter itself is stored S(0) (OneFlow's pass changes the variable op's SBP; the graph then
  converts the eager parameter to it, as OneFlow's `NNGraph::InitRuntime` does with `set_data`), the update runs
  on it in place, and its forward consumers read it restored to B as `shard_restore_level` says
  (OneFlow's `SetNdSbp4Consumers`): 1 (soft) one `System-ZeRO-ParallelCast-<var>` identity pinned to B that every
  consumer reads (one all-gather per step; its gradient passes through unchanged, OneFlow's grad_mode "identity"),
  2 (hard) every consumer's input pinned to B, 0 no restore (the consumers' SBPs are chosen freely).

Numbers: the update is elementwise, so each shard is updated exactly as the rows of the whole parameter would be;
stage 2 and 3 sum the gradients' partial sums by reduce-scatter, which adds the same addends in the same rank
order as the all-reduce, so the values are the same.

Source: OneFlow v0.9.0 `oneflow/core/job_rewriter/optimizer_placement_optimization_pass.cpp` (mode
"distributed_split") and `python/oneflow/nn/graph/graph_config.py` (`enable_zero`). OneFlow 0.9's pass itself
stores the variable S(0) at every stage (its stage 2 and 3 only change NCCL stream settings); stages 1 and 2
here keep the parameter whole, as the ZeRO paper's stages (arXiv:1910.02054) describe.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import registry


def settings(job):
    """The job's ZeRO settings ({stage, shard_min_size, shard_restore_level}) or None."""
    return getattr(job, "zero", None)


def shard_sbp(job, spec):
    """S(0) when the ZeRO of `job` shards variable `spec` over its ranks, else None."""
    conf = settings(job)
    if not conf or not spec.trainable or spec.sbp != S.B:
        return None
    pl = spec.placement
    n = pl.parallel_num
    if n <= 1 or getattr(pl, "hierarchy", None) not in (None, (n,)) or not spec.shape:
        return None
    rest = 1
    for d in spec.shape[1:]:
        rest *= d
    if (spec.shape[0] // n) * rest < int(conf["shard_min_size"]):  # the smallest piece (OneFlow's IsSplitValid)
        return None
    return S.S(0)


def shard_parameters(job, ctx, owners):
    """Stage 3, before backward: every sharded trainable variable is stored S(0) and its forward consumers read it
    restored as `shard_restore_level` says (see the module docstring)."""
    conf = settings(job)
    if not conf or int(conf["stage"]) < 3:
        return
    level = int(conf["shard_restore_level"])
    for name, vop in list(job.variable_ops.items()):
        spec = vop.attrs["spec"]
        if name not in owners:
            continue
        s0 = shard_sbp(job, spec)
        if s0 is None:
            continue
        blob = vop.outputs[0]
        consumers = [(op, i) for op in job.ops for i, x in enumerate(op.inputs) if x.key() == blob.key()]
        spec.sbp = s0
        vop.out_hints[0] = s0
        if level == 1:
            ctx.placements.append(spec.placement)
            try:
                cast = registry.new_op("identity", [blob], {}, name=job.unique_name("System-ZeRO-ParallelCast-"
                                                                                    + name),
                                       in_hints={0: S.B}, out_hints={0: S.B})
            finally:
                ctx.placements.pop()
            cast.section = "forward"
            job.ops.remove(cast)
            job.ops.insert(job.ops.index(vop) + 1, cast)
            for op, i in consumers:
                op.inputs[i] = cast.outputs[0]
        elif level == 2:
            for op, i in consumers:
                op.in_hints[i] = S.B


def parameter_shard(job, ctx, name, vop, s0):
    """Stages 1 and 2: the blob the update modifies in place, this rank's S(0) rows of the whole parameter `vop`
    (B -> S(0): a slice, no communication)."""
    return registry.apply("identity", [vop.outputs[0]], {}, name=job.unique_name("System-ZeRO-Shard-" + name),
                          in_hints={0: s0}, out_hints={0: s0})


def reduced_gradient(job, name, g):
    """Stage 1: the gradient all-reduced to B as without ZeRO (the update then reads its S(0) slice)."""
    return registry.apply("identity", [g], {}, name=job.unique_name("System-ZeRO-GradAllReduce-" + name),
                          in_hints={0: S.B}, out_hints={0: S.B})


def gather_into(job, name, vop, shard):
    """Stages 1 and 2: the updated shards gathered (S(0) -> B, an all-gather) into the whole parameter."""
    registry.new_op("assign", [vop.outputs[0], shard], {}, name=job.unique_name("System-ZeRO-Gather-" + name),
                    in_hints={0: S.B, 1: S.B})
