"""Runs a job function's body once on placeholder blobs and records the logical graph (a Job)."""
from oneflow_compat.ir import builder, dtypes, placement as placement_mod
from oneflow_compat.framework import signature
from oneflow_compat.ir.graph import Job
from oneflow_compat.ops import amp_lists, registry


def default_placement(session, config):
    from oneflow_compat.backend import devices

    if config is not None and config.default_placement_scope_ is not None:
        return config.default_placement_scope_.resolve(session)
    res = session.resource
    tag = devices.resolve_tag(res.default_device_tag)
    n = res.devices_per_machine
    pairs = [(m, d) for m in range(session.machine_num()) for d in range(n)]
    return placement_mod.Placement(tag, pairs, requested_tag=res.requested_device_tag)


def trace_job(session, jf, eager_runner=None):
    job = Job(jf.name, jf.job_type, jf.config)
    job.default_placement = default_placement(session, jf.config)
    if job.is_train:
        job.micro_batches = jf.config.num_gradient_accumulation_steps_
    if jf.config.enable_auto_mixed_precision_ and eager_runner is None:
        # v0.4's AutoMixedPrecision pass (passes/amp.py with v0.4's rules): lazy jobs only, as v0.4's eager build
        # context ran no job passes (EagerJobBuildAndInferCtx::Complete @ v0.4.0)
        job.amp, job.amp_rules = dtypes.float16, amp_lists.V04
    ctx = builder.BuildContext(job, session, job.default_placement, jf.config.default_logical_view_,
                               eager=eager_runner)
    with builder.Scoped(ctx):
        args = []
        flat_index = 0
        for spec in jf.params:
            blobs = []
            for ph in spec.flat():
                blobs.append(make_input(ctx, ph, flat_index))
                flat_index += 1
            args.append(tuple(blobs) if spec.tuple_of is not None else blobs[0])
        if eager_runner is not None:
            eager_runner.bind_inputs(job)
        returned = jf.func(*args)
        flat, template = signature.flatten_returned(jf.ret, returned, jf.name)
        job.output_blobs = flat
        job.output_structure = template
        finish_train_conf(session, job)
    return job


def make_input(ctx, ph, flat_index):
    shape = ph.shape
    k = ctx.job.micro_batches
    if k > 1 and ph.kind == "numpy":
        # gradient accumulation: the body sees one micro-batch; a call feeds the whole batch (runtime/executor.py)
        if shape[0] % k:
            raise ValueError("placeholder %s: batch size %d is not divisible by num_gradient_accumulation_steps(%d)"
                             % (ph, shape[0], k))
        shape = (shape[0] // k,) + tuple(shape[1:])
    attrs = {"shape": shape, "dtype": ph.dtype, "kind": ph.kind, "index": flat_index,
             "batch_axis": ph.batch_axis}
    if ph.kind == "numpy":
        if ctx.view == "mirrored":
            # a consistent input in a mirrored job: each device gets its slice (legacy casts automatically)
            ctx.views.append("consistent")
            try:
                op = registry.new_op("input", [], attrs, name=ctx.job.unique_name("Input"))
            finally:
                ctx.views.pop()
        else:
            op = registry.new_op("input", [], attrs, name=ctx.job.unique_name("Input"))
    elif ph.kind == "list_list_numpy":
        # a tensor list (OneFlow v0.3.4's is_tensor_list blobs): per device a list of tensors, each of the
        # placeholder's rank, together at most its static shape; mirrored view only, as legacy
        if ctx.view != "mirrored":
            raise AssertionError("%s is a tensor-list placeholder: it is only valid in mirrored view; set "
                                 "function_config.default_logical_view(flow.scope.mirrored_view())" % (ph,))
        attrs["tensor_list"] = True
        op = registry.new_op("input", [], attrs, name=ctx.job.unique_name("Input"))
    else:
        if ctx.view != "mirrored":
            raise AssertionError("%s is a mirrored (dynamic) placeholder: it is only valid in mirrored view; set "
                                 "function_config.default_logical_view(flow.scope.mirrored_view())" % (ph,))
        op = registry.new_op("input", [], attrs, name=ctx.job.unique_name("Input"))
    ctx.job.inputs.append(op)
    return op.outputs[0]


# The deprecated `func_config.train.model_update_conf` names optimizers of the surface (SGD, Adam, ...): the
# surface registers the conversion (`optimizer/legacy_conf.py`, imported with the package) so that tracing does
# not import it.
_LEGACY_OPTIMIZER_FROM_CONF = None


def set_legacy_optimizer_factory(factory):
    """`factory(model_update_conf, primary_lr, secondary_lr) -> optimizer`, used for jobs configured with
    func_config.train.*."""
    global _LEGACY_OPTIMIZER_FROM_CONF
    _LEGACY_OPTIMIZER_FROM_CONF = factory


def finish_train_conf(session, job):
    cfg = job.config
    if cfg.model_update_conf_ is not None or cfg.primary_lr_ is not None:
        if job.optimizer is not None:
            raise RuntimeError("job '%s': Use model update conf and optimizer conf at same time" % job.name)
        if job.is_train:
            job.optimizer = _LEGACY_OPTIMIZER_FROM_CONF(
                cfg.model_update_conf_ or {"naive_conf": {}}, cfg.primary_lr_, cfg.secondary_lr_)
            if cfg.loss_scale_factor_ is not None:
                job.optimizer.loss_scale_factor = cfg.loss_scale_factor_
    if job.is_train and job.optimizer is None:
        raise RuntimeError("train job '%s' has no optimizer: call flow.optimizer.<Optimizer>(...).minimize(loss) "
                           "inside it (legacy: Check failed: job().job_conf().train_conf().has_model_update_conf())"
                           % job.name)
    if job.is_train and not job.losses:
        raise RuntimeError("train job '%s' has no loss to minimize" % job.name)

