"""Train jobs: backward, gradient post-processing (legacy-api.md §2.12) and the optimizer's update ops.

Order, as OneFlow: 1/N loss-instance scaling -> loss-scale division -> regularization -> clipping -> update.
Forward results of the call are computed with the pre-update variables; updates come last.

The optimizer reaches this pass as data on the job (`job.optimizer`, `job.losses`, `job.micro_batches`) and is
read by its attributes only (the protocol in `optimizer/optimizers.py`): `leaf_optimizers()`, `lr_scheduler`,
`grad_clipping`, `loss_scale_factor`, `loss_scale_policy` (`dynamic`, `initial_state()`, `next_state()`),
`state_specs`, `state_shape`, `weight_decay_rate`, `update_scaled` and `needs_whole_tensor_norms`.
"""
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ops import variable_ops
from oneflow_compat.ir import sbp as sbp_mod
from oneflow_compat.ops import registry
from oneflow_compat.passes import autodiff, clip_norm_types, zero
from oneflow_compat.passes.autodiff import GradScope


def build(session, job, ctx=None):
    if ctx is None:
        ctx = builder.BuildContext(job, session, job.default_placement, "consistent")
    with builder.Scoped(ctx):
        _build(session, job, ctx)


def _loss_instance_scale(ctx, job, grads):
    """1/N with N the element count of the (logical) loss — returned as a static factor — or, for dynamic
    (mirrored) losses, the global axis-0 size counted at run time (applied here as ops; factor 1)."""
    loss = job.losses[0]
    shapes = {tuple(l.shape) for l in job.losses}
    if len(shapes) != 1:
        raise ValueError("job '%s': all losses must have the same shape to be scaled together, got %s" % (
            job.name, sorted(shapes)))
    if not loss.is_dynamic:
        n = 1
        for d in loss.shape:
            n *= d
        return 1.0 / n, grads
    with GradScope(ctx, loss.op, "optimizer"):
        count = registry.apply("axis0_count", [loss])  # mirrored: each device its rows, as float
        count = registry.apply("cast_from_mirrored", [count], {"sbp": sbp_mod.P})
    out = {}
    for name, (vop, g) in grads.items():
        with GradScope(ctx, vop, "optimizer"):
            out[name] = (vop, registry.apply("div_by_scalar_tensor", [g, count]))
    return 1.0, out


def _build(session, job, ctx):
    opt = job.optimizer
    factor = getattr(opt, "loss_scale_factor", None)
    policy = getattr(opt, "loss_scale_policy", None)
    if policy is not None and getattr(policy, "loss_scale_factor", None) is not None:
        factor = policy.loss_scale_factor
    dynamic = None
    if getattr(policy, "dynamic", False):
        dynamic = _DynamicScale(ctx, job, policy)
    # ZeRO, every stage (passes/zero.py): sharded parameters are stored S(0) and restored for the forward pass
    zero.shard_parameters(job, ctx, autodiff.variable_owners(job))
    grads = autodiff.build_backward(ctx, job, loss_scale=dynamic.scale if dynamic else factor)
    if not grads:
        raise RuntimeError("train job '%s': no trainable variable receives a gradient from the loss" % job.name)
    job.raw_grads = [g for _, g in grads.values()]  # what gradient accumulation sums over micro-batches
    if dynamic is not None:
        grads = dynamic.unscale(grads)
    # 1/N, 1/micro-batches and 1/loss-scale are one static factor: folded into the update unless a regularizer
    # or clipping must see the scaled gradient first
    static, grads = _loss_instance_scale(ctx, job, grads)
    static /= job.micro_batches
    if factor is not None:
        static /= factor
    owners = autodiff.variable_owners(job)
    groups = []  # (leaf optimizer, its gradients, folded scale per variable)
    for leaf in opt.leaf_optimizers():
        group = {n: vg for n, vg in grads.items() if owners.get(n) is leaf}
        if not group:
            continue
        clip = getattr(leaf, "grad_clipping", None)
        folded = {}
        for name, (vop, g) in list(group.items()):
            reg = vop.attrs["spec"].regularizer
            has_reg = reg is not None and (reg.l1 or reg.l2)
            if not has_reg and clip is None:
                folded[name] = static
                continue
            with GradScope(ctx, vop, "optimizer"):
                if static != 1.0:
                    g = registry.apply("scalar_mul", [g], {"value": static})
                if has_reg:
                    g = registry.apply("add_regularization", [g, vop.outputs[0]],
                                       {"l1": float(reg.l1), "l2": float(reg.l2)})
            group[name] = (vop, g)
            folded[name] = 1.0
        if clip is not None:
            group = _clip_by_global_norm(ctx, job, group, clip)
        groups.append((leaf, group, folded))
    _add_updates(session, job, ctx, groups, dynamic)


def _clip_by_global_norm(ctx, job, grads, clip):
    norm_type = float(getattr(clip, "norm_type", 2.0))
    if norm_type != 2.0:  # nn.Graph's clip_grad_norm_type (passes/clip_norm_types.py)
        return clip_norm_types.clip(ctx, job, grads, clip.clip_norm, norm_type)
    sq = []
    for name, (vop, g) in grads.items():
        with GradScope(ctx, vop, "optimizer"):
            sq.append(registry.apply("reduce_sum_square", [g]))
    ctx.section = "optimizer"
    total = sq[0] if len(sq) == 1 else registry.apply("add_n", sq)
    # (OneFlow 0.9's graphs clip by max_norm / (‖g‖ + 1e-6), the legacy jobs by min(1/‖g‖, 1/clip_norm))
    scale = registry.apply("global_norm_clip_scale", [total], {"clip_norm": float(clip.clip_norm),
                                                               "formula": getattr(clip, "formula", "legacy")})
    out = {}
    for name, (vop, g) in grads.items():
        with GradScope(ctx, vop, "optimizer"):
            out[name] = (vop, registry.apply("mul_by_scalar_tensor", [g, scale]))
    return out


class _DynamicScale:
    """Dynamic loss scaling: the loss gradient is seeded with the current scale (a variable), gradients are divided
    by it, a step whose gradients hold inf/nan skips every update, and the policy's state machine moves the scale."""

    def __init__(self, ctx, job, policy):
        self.policy = policy
        scale0, good0 = policy.initial_state()
        pl = ctx.placements[0]
        prefix = "System-Train-DynamicLossScale-%s-" % job.name  # OneFlow's dynamic_loss_scale_schedule_pass
        self.scale = variable_ops.get_variable(prefix + "LossScale", shape=(1,), dtype=dtypes.float32,
                                               trainable=False, init_value=scale0, apply_namespace=False,
                                               placement=pl)
        self.good = variable_ops.get_variable(prefix + "GoodStepCounter", shape=(1,), dtype=dtypes.int64,
                                              trainable=False, init_value=good0, apply_namespace=False,
                                              placement=pl)
        self.ctx = ctx
        self.nonfinite = None

    def unscale(self, grads):
        out, counts = {}, []
        for name, (vop, g) in grads.items():
            with GradScope(self.ctx, vop, "optimizer"):
                g = registry.apply("div_by_scalar_tensor", [g, registry.apply("cast", [self.scale], {"dtype": g.dtype})])
                counts.append(registry.apply("count_nonfinite", [g]))
            out[name] = (vop, g)
        self.ctx.section = "optimizer"
        self.nonfinite = counts[0] if len(counts) == 1 else registry.apply("add_n", counts)
        return out

    def finish(self):
        registry.new_op("loss_scale_update", [self.scale, self.good, self.nonfinite], {"policy": self.policy},
                        name=self.ctx.job.unique_name("System-Train-LossScale-update"))


def _add_updates(session, job, ctx, groups, dynamic=None):
    ctx.section = "optimizer"
    step = variable_ops.get_variable("System-Train-TrainStep-" + job.name, shape=(1,), dtype=dtypes.int64,
                                     trainable=False, init_value=0, apply_namespace=False,
                                     placement=ctx.placements[0])
    for opt, grads, folded in groups:
        lr = registry.apply("learning_rate", [step], {"scheduler": opt.lr_scheduler})
        for name, (vop, g) in grads.items():
            _add_update(job, ctx, opt, name, vop, g, lr, step, folded[name], dynamic)
    if dynamic is not None:
        dynamic.finish()
    registry.new_op("increment", [step], {}, name=job.unique_name("System-Train-TrainStep-increment"))


def _add_update(job, ctx, opt, name, vop, g, lr, step, grad_scale, dynamic=None):
    custom = getattr(opt, "custom_update", None)
    special = custom(name) if custom is not None else None
    if special is not None:  # a variable its optimizer group updates by an op of its own (one_embedding's shadow)
        op_type, attrs = special
        skip = [dynamic.nonfinite] if dynamic is not None else []
        with GradScope(ctx, vop, "optimizer"):
            registry.new_op(op_type, [vop.outputs[0], g] + skip, dict(attrs, grad_scale=grad_scale),
                            name=job.unique_name(name + "-update"))
        return
    spec = vop.attrs["spec"]
    rows = _indexed_slices_rows(job, opt, name, vop, g)
    # ZeRO (passes/zero.py) stored a sharded variable S(0) already: its states and update follow its layout
    w, layout = vop.outputs[0], spec.sbp
    states, hints = [], {0: layout, 1: layout, 2: sbp_mod.B, 3: sbp_mod.B}
    for suffix, init in opt.state_specs(name, spec.shape, spec.dtype.np):
        shape = opt.state_shape(suffix, spec.shape)
        # scalar states (LAMB's beta1_t/beta2_t) are replicated; the others live like their variable (its shard)
        sbp = layout if tuple(shape) == tuple(spec.shape) else sbp_mod.B
        hints[4 + len(states)] = sbp
        states.append(variable_ops.get_variable(
            "%s-%s" % (name, suffix), shape=shape, dtype=spec.dtype, trainable=False, init_value=init,
            apply_namespace=False, placement=spec.placement, sbp=sbp))
    # LARS / LAMB on a split (model-parallel) variable: the update that measures the whole variable's norms over
    # its pieces (system_ops.optimizer_update_whole_norms), so N devices update as 1 device
    split = bool(sbp_mod.split_axes(layout)) and spec.placement.parallel_num > 1  # (on a mesh: any axis)
    update_type = "optimizer_update"
    if split and getattr(opt, "needs_whole_tensor_norms", False):
        update_type = "optimizer_update_whole_norms"
    skip = []  # dynamic loss scaling: the count of non-finite gradient values; any skips the update
    if dynamic is not None:
        hints[4 + len(states)] = sbp_mod.B
        skip = [dynamic.nonfinite]
    if update_type != "optimizer_update":
        rows = None
    attrs = {"optimizer": opt, "var": name, "weight_decay": opt.weight_decay_rate(name), "grad_scale": grad_scale,
             "n_states": len(states)}
    if rows is not None:  # the update reads the gathered indices (whole) after the states and the skip count
        hints[4 + len(states) + len(skip)] = sbp_mod.B
        attrs["indexed_slices"] = True
    with GradScope(ctx, vop, "optimizer"):
        registry.new_op(update_type, [w, g, lr, step] + states + skip + (
                        [rows] if rows is not None else []), attrs,
                        name=job.unique_name(name + "-update"), in_hints=hints)


# OneFlow v0.3.4's IndexedSlicesOptimizerRewritePass (oneflow/core/job_rewriter/indexed_slices_optimizer_rewrite_
# pass.cpp): with `func_config.indexed_slices_optimizer_conf(dict(include_op_names=dict(op_name=[...])))`, a listed
# variable whose gradient is the gather's (unsorted_segment_sum_like along axis 0, through scalar_mul / parallel_cast
# only) and whose update is sgd / momentum / adam without l1 or l2 is updated on the gathered rows alone: the
# other rows keep their values and optimizer states (no weight decay, no momentum decay there).
def _indexed_slices_rows(job, opt, name, vop, g):
    if not getattr(opt, "sparse_update", False):  # (nn.Graph's add_optimizer(is_sparse=True) lists all its variables)
        conf = getattr(job.config, "ignored", {}).get("indexed_slices_optimizer_conf")
        if not isinstance(conf, dict) or not conf.get("enable", True):
            return None
        included = conf.get("include_op_names", {}).get("op_name", [])
        if name not in included or not getattr(opt, "indexed_slices_update", False):
            return None
    reg = vop.attrs["spec"].regularizer
    if reg is not None and (reg.l1 or reg.l2):
        return None
    blob = g
    while blob.op.defn.rowwise:
        blob = blob.op.inputs[0]
    rows = blob.op.defn.indexed_rows(blob.op) if blob.op.defn.indexed_rows is not None else None
    if rows is None or tuple(blob.shape) != tuple(vop.outputs[0].shape):
        return None
    return rows

