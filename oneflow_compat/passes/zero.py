"""ZeRO (`nn.Graph.config.enable_zero(stage=..., shard_min_size=..., shard_restore_level=...)`) as OneFlow 0.9 does
it: a data-parallel parameter is stored split over its ranks, with its optimizer states and its update.

Only SBPs change here; the boxing pass (`passes/boxing.py`, `ops/transitions.py`) inserts the collectives those
SBPs imply and `explain` shows them with their bytes, like any other boxing. For a trainable variable that is
broadcast (B) on a 1-D placement of n > 1 ranks (OneFlow's `GetDataParallelVariableAndNaiveSuccNode`) and whose
smallest S(0) piece holds at least `shard_min_size` elements (OneFlow's `IsSplitValid`: the unbalanced split's
smallest piece, so axis 0 need not be divisible by n, only at least n rows; a 0-d variable stays whole), EVERY
stage does what OneFlow 0.9's optimizer-placement-optimization pass (mode "distributed_split", which `enable_zero`
turns on from stage 1) does:

* the variable op's SBP becomes S(0) (the graph then converts the eager parameter to it, as OneFlow's
  `NNGraph::InitRuntime` does with `set_data`; OneFlow's user page `cookies/zero.md`: the parameters are Split
  after one training step), so its optimizer states (created like their variable) are S(0) too and the update
  runs on each rank's rows in place;
* its forward consumers read it restored to B as `shard_restore_level` says (OneFlow's `SetNdSbp4Consumers`):
  1 (soft) one `System-ZeRO-ParallelCast-<var>` identity pinned to B that every consumer reads (one all-gather
  per step; its gradient passes through unchanged, OneFlow's grad_mode "identity"), 2 (hard) every consumer's
  input pinned to B, 0 no restore (the consumers' SBPs are chosen freely);
* the gradient's partial sums are therefore read by the S(0) update as S(0): a reduce-scatter (P -> S(0)) where
  plain data parallelism all-reduces, the all-gather of the restore carrying the other half of the bytes.

What the stages add is in OneFlow's `GraphConfig.enable_zero` (v0.9.0 python/oneflow/nn/graph/graph_config.py),
which sets session flags (`flags(job)` returns them, recorded on the job):

* stage >= 2: `nccl_use_compute_stream` (resource.proto): the NCCL collectives run as logical ops on the compute
  stream (`InsertNcclLogicalOpPass`, CUDA builds only, and boxing cost estimates for CUDA placements in
  sbp_infer_util.cpp). It only places collectives on CUDA streams: it has no meaning on the CPU, so it is recorded
  and changes nothing here.
* stage 3: `disable_group_boxing_by_dst_parallel`: OneFlow's job completer then skips `GroupBoxingByDstParallel`
  (job_completer.cpp: "disable this pass for reduce boxing memory life cycle"), so consumers of one blob that need
  the same (placement, SBP) no longer share one boxing: each gets its own, and no gathered copy lives from the first
  such consumer to the last. `passes/boxing.py` shares boxings the same way and stops sharing for a job with this
  flag (with restore level 2 each forward consumer of a parameter then gathers it itself).
* `nccl_enable_mixed_fusion` (collective_boxing_conf) is not set by any stage in OneFlow 0.9 (only by
  `flow.boxing.nccl.allow_fuse_mixed_ops`); it fuses NCCL calls of mixed kinds and has no CPU meaning either.

Numbers: the update is elementwise, so each shard is updated exactly as the rows of the whole parameter would be;
the reduce-scatter adds the same addends in the same rank order as the all-reduce, so the values are the same.

Source: OneFlow v0.9.0 `oneflow/core/job_rewriter/optimizer_placement_optimization_pass.cpp`,
`python/oneflow/nn/graph/graph_config.py` (`enable_zero`), `oneflow/core/job_rewriter/job_completer.cpp`,
`oneflow/core/job/resource.proto`.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import registry


def settings(job):
    """The job's ZeRO settings ({stage, shard_min_size, shard_restore_level}) or None."""
    return getattr(job, "zero", None)


def flags(job):
    """The session flags OneFlow 0.9's `enable_zero` sets for the job's stage (see the module docstring), {} without
    ZeRO."""
    conf = settings(job)
    if not conf:
        return {}
    stage = int(conf["stage"])
    return {"optimizer_placement_optimization_mode": "distributed_split",
            "optimizer_placement_optimization_threshold": int(conf["shard_min_size"]),
            "optimizer_placement_optimization_shard_restore_level": int(conf["shard_restore_level"]),
            "nccl_use_compute_stream": stage >= 2,
            "disable_group_boxing_by_dst_parallel": stage >= 3}


def groups_boxing(job):
    """Whether consumers of one blob that need the same (placement, SBP) share one boxing (OneFlow's
    GroupBoxingByDstParallel; off at ZeRO stage 3)."""
    return not flags(job).get("disable_group_boxing_by_dst_parallel", False)


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
    """Every stage, before backward: every sharded trainable variable is stored S(0) and its forward consumers read
    it restored as `shard_restore_level` says (see the module docstring)."""
    conf = settings(job)
    if not conf:
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
