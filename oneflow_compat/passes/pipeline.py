"""The compile pipeline: the one place that lists the passes. Every way of running ops compiles through it — legacy
job functions (`runtime/session.py`), nn.Graph (`runtime/graph_runtime.py`), eager ops on global and local tensors
and their backward (`runtime/global_eager.py`), legacy eager mode (`framework/eager.py`) — and differs only in its
`Options`:

    autodiff + optimizer (train jobs)  →  prune  →  AMP  →  SBP choice  →  checkpointing  →  fusion
    (passes/optimizer_pass.py)           (prune)   (amp)   (sbp_infer)   (checkpointing)    (fusion)
    →  boxing insertion  →  gradient buckets
       (boxing)             (grad_buckets)

(`amp`: nn.Graph's `config.enable_amp(True)`, set on the job as `job.amp` (the mixed-precision dtype): OneFlow
0.9's AutoMixedPrecision pass over the forward and backward ops of CUDA placements, `passes/amp.py`; after pruning,
before the layouts, which then see the casts it inserts. The legacy `func_config.enable_auto_mixed_precision(True)`
sets `job.amp` (float16) and `job.amp_rules = amp_lists.V04`: the same pass with v0.4's lists, run first, on the
forward ops alone, as v0.4 ran it before GenerateBackwardAndOptimizerOpConfs — the backward is then built from the
rewritten forward. `checkpointing`: nn.Graph's activation checkpointing, train
jobs: the checkpointed modules' forward ops cloned into the backward with their originals' layouts,
`passes/checkpointing.py`.)

The runtime then builds the job's executable (`runtime/executable.py`: its plan, feeding, running, fetching).

Options:
* `train`: run the optimizer pass on train jobs (backward, loss scaling, regularization, clipping, updates);
* `prune`: drop ops nothing needed reads (an eager op has nothing to prune; its backward job has);
* `layout`: how each op's SBP is chosen — "infer" (greedy by bytes moved, `sbp_infer.infer`), "one device"
  (legacy eager mode: every op on one logical device, mirrored ops keep per-device values) or None (already
  chosen);
* `exact_first`: among equally cheap signatures, one that reads every input as it lies wins over one whose only
  boxing is free (B -> S slices), as OneFlow's eager and nn.Graph inference does (matmul(B, B) stays B);
* `fusion`: fuse chains that one kernel computes faster with the same values (`passes/fusion.py`);
* `boxing`: insert a boxing op wherever a producer's layout differs from what its consumer reads;
* `buckets`: group the data-parallel gradient all-reduces across processes into flat buckets (one collective per
  bucket, as DDP).
"""
import collections

from oneflow_compat.ops import amp_lists
from oneflow_compat.passes import amp, auto_parallel, boxing, checkpointing, fusion, grad_buckets, optimizer_pass, prune, \
    sbp_infer

Options = collections.namedtuple("Options", "train prune layout exact_first fusion boxing buckets")

# legacy job functions: compiled together at the session's first call
LEGACY_JOB = Options(train=True, prune=True, layout="infer", exact_first=False, fusion=True, boxing=True,
                     buckets=True)
# nn.Graph: its traced build, compiled like a legacy job, with eager's choice among equal signatures
GRAPH = Options(train=True, prune=True, layout="infer", exact_first=True, fusion=True, boxing=True, buckets=True)
# one eager op on global or local tensors (inputs pinned to the layouts they have): nothing to prune or fuse
EAGER_OP = Options(train=False, prune=False, layout="infer", exact_first=True, fusion=False, boxing=True,
                   buckets=False)
# the backward of one eager op (its declared gradient rule): outputs nobody asked for are pruned
EAGER_GRAD = Options(train=False, prune=True, layout="infer", exact_first=True, fusion=False, boxing=True,
                     buckets=False)
# one op of a legacy eager job, run as it is traced on one logical device (no boxing: its inputs are moved to
# its device as they are fed)
LEGACY_EAGER_OP = Options(train=False, prune=False, layout="one device", exact_first=False, fusion=False,
                          boxing=False, buckets=False)
# the backward and update of a legacy eager train job, once its body has run: the optimizer pass adds its ops in
# the eager build context, which runs each as it is added (compiled alone as above)
LEGACY_EAGER_TRAIN = Options(train=True, prune=False, layout=None, exact_first=False, fusion=False, boxing=False,
                             buckets=False)


def compile_job(session, job, options, ctx=None):
    """Runs the passes `options` choose on `job` (in place) and returns it. `ctx`: the build context the optimizer
    pass adds its ops in (legacy eager mode and nn.Graph give their own; by default a fresh one)."""
    amp_dtype = getattr(job, "amp", None)  # CUDA ops in float16 (passes/amp.py): nn.Graph's config.enable_amp,
    amp_rules = getattr(job, "amp_rules", None) or amp_lists.V09  # or the legacy enable_auto_mixed_precision (V04)
    if amp_dtype is not None and amp_rules.before_backward:
        amp.apply(job, amp_dtype, amp_rules)
    if options.train and job.is_train:
        optimizer_pass.build(session, job, ctx)
    if options.prune:
        prune.prune(job)
    if amp_dtype is not None and not amp_rules.before_backward:
        amp.apply(job, amp_dtype, amp_rules)
    if options.layout == "infer":
        sbp_infer.infer(job, exact_first=options.exact_first)
        auto = getattr(job, "auto_parallel", None)  # nn.Graph's config.enable_auto_parallel (passes/auto_parallel.py)
        if auto is not None and auto.enable:
            auto_parallel.search(job, auto)
    elif options.layout == "one device":
        sbp_infer.one_device(job)
    if options.train and job.is_train:
        checkpointing.apply(job)  # nn.Graph's activation checkpointing: after the layouts, which clones copy
    if options.fusion:
        fusion.fuse(job)
    if options.boxing:
        boxing.insert(job)
    if options.buckets:
        grad_buckets.assign(job)
    return job


def choose_layouts(job, options):
    """The SBP choice of `options` alone, on the job as it is so far: what an nn.Graph's `build` answers when a
    tensor's `sbp` is asked while it is traced (the choice of an op never depends on the ops after it)."""
    sbp_infer.infer(job, exact_first=options.exact_first)
    return job


def fingerprint(job):
    """One line per op: what every rank must agree on before running the job together."""
    lines = []
    for op in job.ops:
        lines.append("%s %s %s in=%s out=%s shapes=%s" % (
            op.name, op.type, op.placement, op.sbp_in, op.sbp_out, [tuple(y.shape) for y in op.outputs]))
    return lines
