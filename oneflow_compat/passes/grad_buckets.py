"""Gradient buckets in compiled jobs: the data-parallel gradient all-reduces of a train job (legacy job functions,
nn.Graph) grouped into buckets, each all-reduced as one flat buffer (`runtime/buckets.py`), as PyTorch's
DistributedDataParallel does — one collective per bucket instead of one per gradient.

A candidate is a boxing of the optimizer section from partial sums to broadcast copies on one placement spanning
several processes (a gradient of a data-parallel weight, read by its update). Candidates join the open bucket in
job order while they share its placement and dtype, its size stays within `cap_bytes`, and their source is made
before the bucket's first member; the members are then moved together to the first member's place (each reads
only its own source, made before that place, so nothing else changes). Each member keeps its boxing op — its name,
its bytes in `explain` — and gets `attrs["bucket"] = (bucket number, member index, member count)`: at run time
every member writes its piece into its slot of the bucket's persistent buffer and hands its consumers a view of
it, and the last member all-reduces the buffer in place before any consumer runs.
"""
from oneflow_compat.ir import sbp as S
from oneflow_compat.ops import transitions

DEFAULT_CAP_BYTES = 25 << 20


def _candidate(op):
    if not op.defn.boxing or op.section != "optimizer":
        return False
    a = op.attrs
    pl = a["src_placement"]
    return (a["src_sbp"] == S.P and a["dst_sbp"] == S.B and a["dst_placement"] == pl and pl.device_tag == "cpu"
            and len({machine for machine, _ in pl.pairs}) > 1 and op.inputs[0].dtype.is_floating)


def assign(job, cap_bytes=DEFAULT_CAP_BYTES):
    """Groups the job's gradient all-reduces into buckets (in place; see the module docstring)."""
    position = {id(op): k for k, op in enumerate(job.ops)}
    buckets = []  # [first member's position, placement, dtype, bytes, [members]]
    for k, op in enumerate(job.ops):
        if not _candidate(op):
            continue
        x = op.inputs[0]
        nbytes = transitions.blob_bytes(x.meta)
        open_ = buckets[-1] if buckets else None
        if open_ is not None and open_[1] == op.placement and open_[2] == x.dtype and \
                open_[3] + nbytes <= cap_bytes and position[id(x.op)] < open_[0]:
            open_[3] += nbytes
            open_[4].append(op)
        else:
            buckets.append([k, op.placement, x.dtype, nbytes, [op]])
    buckets = [b for b in buckets if len(b[4]) > 1]
    if not buckets:
        return job
    moved = {id(op) for b in buckets for op in b[4][1:]}
    lead = {id(b[4][0]): b[4] for b in buckets}
    ops = []
    for op in job.ops:
        if id(op) in moved:
            continue
        members = lead.get(id(op))
        ops.extend(members if members is not None else [op])
    job.ops = ops
    for number, (_, _, _, _, members) in enumerate(buckets):
        for index, op in enumerate(members):
            op.attrs["bucket"] = (number, index, len(members))
    return job
