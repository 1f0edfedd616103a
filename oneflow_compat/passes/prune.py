"""Dead-op elimination: gradient rules build the gradient of every input, and only some are needed (a conv's
input gradient when the input is a placeholder, say). An op survives if it has side effects, produces a job
output, or feeds an op that survives."""


def prune(job):
    needed = {blob.key() for blob, _ in job.output_blobs}
    keep = []
    for op in reversed(job.ops):
        if op.defn.stateful or op.defn.role != "compute" or any(y.key() in needed for y in op.outputs):
            keep.append(op)
            for x in op.inputs:
                needed.add(x.key())
    keep.reverse()
    kept = {id(op) for op in keep}
    for op in job.ops:
        if id(op) not in kept:
            del job.op_names[op.name]
    job.ops = keep
