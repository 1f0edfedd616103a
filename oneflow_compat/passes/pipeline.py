"""The compile pipeline: each pass is a function of the job, applied in order; the runtime then builds the job's
plan and executor (`runtime/executor.py`)."""
from oneflow_compat.passes import boxing, fusion, optimizer_pass, prune, sbp_infer


def compile_job(session, job):
    if job.is_train:
        optimizer_pass.build(session, job)
    prune.prune(job)
    sbp_infer.infer(job)
    fusion.fuse(job)
    boxing.insert(job)
    return job


def fingerprint(job):
    """One line per op: what every rank must agree on before running the job together."""
    lines = []
    for op in job.ops:
        lines.append("%s %s %s in=%s out=%s shapes=%s" % (
            op.name, op.type, op.placement, op.sbp_in, op.sbp_out, [tuple(y.shape) for y in op.outputs]))
    return lines


def check_same_plans_across_ranks(session, compiled):
    comm = session.runtime.comm
    if comm.size == 1:
        return
    for name in sorted(compiled):
        comm.check_same(fingerprint(compiled[name].job), "plan of job '%s'" % name)
    comm.check_same(sorted(compiled), "job list")
