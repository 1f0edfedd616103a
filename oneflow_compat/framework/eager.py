"""Eager mode (`flow.enable_eager_execution()`, legacy-api.md §2.2): every call re-runs the body, each op runs as
soon as it is added, and `minimize` runs backward and the update before the call returns.

It reuses the lazy machinery op by op: the same trace builder, the same autodiff/optimizer passes, and each op,
as it is added, compiled alone by the compile pipeline (`passes/pipeline.py`, options `LEGACY_EAGER_OP`: one
logical device) into an executable (`runtime/executable.py`) that is fed the values its inputs already have.
"""
from oneflow_compat.backend import devices
from oneflow_compat.ir import builder
from oneflow_compat.ir.graph import Job
from oneflow_compat.kernels import checks
from oneflow_compat.framework import signature
from oneflow_compat.ir import sbp as S
from oneflow_compat.passes import pipeline
from oneflow_compat.runtime import executable, results, watch

# what the ops whose function the runtime supplies (`runtime_hook`) do on the one eager device: a watch hands over
# the value it read
_EAGER_HOOKS = dict(executable.RUNTIME_HOOKS, watch=watch.make_one_device_watch_fn)


class EagerRunner:
    def __init__(self, session, args, jf):
        self.session, self.args, self.jf = session, args, jf
        self.values = {}

    def bind_inputs(self, job):
        values = []
        for spec, value in zip(self.jf.params, self.args):
            values.extend(signature.check_feed(job.name, spec, value, 1))
        to_device = self.session.runtime.to_device
        for op, value in zip(job.inputs, values):
            op.sbp_in, op.sbp_out = [], [S.M if op.attrs["kind"] != "numpy" else S.B]
            value = value[0] if op.attrs["kind"] != "numpy" else value
            self.values[op.outputs[0].key()] = to_device(value, op.placement)

    def run_op(self, op):
        if op.defn.role == "input":
            return
        if op.defn.role == "variable":
            spec = op.attrs["spec"]
            if 0 not in spec.shards:
                self.session.vars.initialize(spec)
        if op.defn.collective and op.defn.runtime_hook is None:
            raise RuntimeError("op '%s' (%s) cannot run in eager mode" % (op.name, op.type))
        # the op alone, as a job of its own (the op keeps its job: its name and its job's name seed random ops)
        alone = Job(op.job.name, "predict", None)
        alone.ops = [op]
        pipeline.compile_job(self.session, alone, pipeline.LEGACY_EAGER_OP)
        exe = executable.Executable(alone, self.session, None, one_device=True, hooks=_EAGER_HOOKS)
        exe.bind_variables()
        # no boxing in eager mode: an op placed elsewhere than its producer (a "cpu" op after "gpu" ones) gets
        # its inputs moved to its own device as they are fed
        to_device = self.session.runtime.to_device
        pieces = [[to_device(self.values[x.key()], op.placement)] for x in exe.plan.entry_blobs]
        try:
            exe.call(lambda copy, micro: exe.feed_pieces(copy, pieces))
            regs, slot = exe.plan.regs, exe.plan.slot
            for y in op.outputs:
                self.values[y.key()] = regs[slot[(y.key(), 0)]]
        finally:
            exe.finish()


class EagerJobFunction:
    """What `@flow.global_function` returns in eager mode: each call runs the body on real data."""

    def __init__(self, func, job_type, config):
        self.func = func
        self.name = func.__name__
        self.job_type = job_type
        self.config = config
        self.params = signature.parse_params(func)
        self.ret = signature.parse_return(func)

    def __call__(self, *args, **kwargs):
        from oneflow_compat.framework import session as sess
        from oneflow_compat.framework import trace

        if kwargs:
            raise TypeError("job function '%s' does not accept keyword arguments" % self.name)
        if not (len(args) == len(self.params)):
            raise AssertionError("job function '%s' takes %d argument(s), %d given" % (
                self.name, len(self.params), len(args)))
        session = sess.default_session()
        session.init_runtime()
        session.status = "running"
        runner = EagerRunner(session, args, self)
        job = trace.trace_job(session, self, eager_runner=runner)
        if job.is_train:
            ctx = builder.BuildContext(job, session, job.default_placement, "consistent", eager=runner)
            pipeline.compile_job(session, job, pipeline.LEGACY_EAGER_TRAIN, ctx)
        leaves = []
        for blob, kind in job.output_blobs:
            v = devices.to_host(runner.values[blob.key()])
            mirrored = blob.op.view == "mirrored"
            leaves.append(results.leaf_value([v] if mirrored else v, kind, mirrored))
        checks.raise_failed()  # device-side checks of this call (kernels/checks.py)
        return results.deliver(self.ret.kind, signature.build_value(job.output_structure, leaves))


def blob_numpy(blob, *args):
    ctx = builder.current_or_none()
    runner = getattr(ctx, "eager", None) if ctx is not None else None
    if runner is None:
        raise RuntimeError("blob %s has no value: .numpy() works on blobs only in eager mode "
                           "(flow.enable_eager_execution()); in lazy mode return the blob or use flow.watch"
                           % blob.logical_blob_name)
    return devices.to_host(runner.values[blob.key()])
