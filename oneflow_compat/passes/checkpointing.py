"""Activation checkpointing of nn.Graph (`module.to(nn.graph.GraphModule).activation_checkpointing = True`), as
OneFlow 0.9's CheckpointingPass (v0.9.0 oneflow/core/job_rewriter/checkpointing_pass.cpp) does it: the
activations a checkpointed module computes are not kept for the backward; its forward ops run again in the
backward, from the module's inputs, right before the first backward op that needs them.

The trace (`runtime/graph_trace.py`) records the forward ops made inside a checkpointed module (OneFlow's scope
attribute "checkpointing", inherited by the modules inside; `job.checkpointing_ops`) and passes each tensor input
of such a module through an identity made outside it (OneFlow's `__pre_forward_map`): the tensors that are kept.
After the layouts are chosen (the clones take their originals' SBPs, so they compute the same pieces), for each
connected group of checkpointed ops on one placement (OneFlow's `GenConnectedCheckpointingSubgraphs`) that a
backward or optimizer op reads:

* every op of the group is cloned as `Sys-Checkpointing-Fake-Fw-Op_<name>` in the backward section, reading the
  clones of its producers in the group and the original producers outside it;
* the backward ops read the clones' outputs instead of the originals' (OneFlow's step 3.3);
* the clones run right before the first of those backward ops (OneFlow's control edge from the op before it),
  and clones nothing reads are dropped.

So the originals' outputs are last read in the forward and the plan releases them there (`runtime/plan.py`
frees each register after its last reader): between forward and backward only the group's inputs stay alive.

Left as they are: ops declared not `recomputable` (ops/registry.py: batch normalization, "normalization" and
"normalization_batch_stats", from OneFlow's list, which also names its fused forms and "repeat" / "unpack", ops
this implementation does not have: micro-batches are cut by the runtime), and any op with a side effect
(stateful, in place), collectives, boxing, variables and inputs.

Random ops: a clone of a dropout (or any op drawing from the op's seed) draws with its original's seed (the clone
copies OneFlow's op conf, seed included) and keeps its own call counter, which advances in step with the
original's (both run once per micro-batch), so the recomputation draws the very mask of the forward pass
(`ops/nn_ops.dropout_seed` reads `job.recompute_of`).
"""
from oneflow_compat.ir.graph import LazyBlob, Op

FAKE_PREFIX = "Sys-Checkpointing-Fake-Fw-Op_"


def _eligible(op):
    d = op.defn
    return (op.section == "forward" and d.recomputable and d.role not in ("variable", "input")
            and not (d.stateful or d.in_place or d.collective or d.boxing) and op.outputs)


def _groups(job, marked):
    """Connected groups of the marked ops (edges between marked ops of one placement), each in job order."""
    producer = {}
    readers = {}
    for op in marked:
        for y in op.outputs:
            producer[y.key()] = op
    for op in marked:
        for x in op.inputs:
            p = producer.get(x.key())
            if p is not None and p.placement == op.placement:
                readers.setdefault(p.name, []).append(op)
                readers.setdefault(op.name, []).append(p)
    seen, groups = set(), []
    for op in marked:
        if op.name in seen:
            continue
        seen.add(op.name)
        group, todo = [], [op]
        while todo:
            cur = todo.pop()
            group.append(cur)
            for nxt in readers.get(cur.name, ()):
                if nxt.name not in seen:
                    seen.add(nxt.name)
                    todo.append(nxt)
        order = {o.name: k for k, o in enumerate(marked)}
        groups.append(sorted(group, key=lambda o: order[o.name]))
    return groups


def apply(job):
    """Rewrites a train job's checkpointed forward ops to be recomputed in the backward (module docstring)."""
    names = getattr(job, "checkpointing_ops", None)
    if not names or not job.is_train:
        return
    marked = [op for op in job.ops if op.name in names and _eligible(op)]
    if not marked:
        return
    recompute_of = getattr(job, "recompute_of", None)
    if recompute_of is None:
        recompute_of = job.recompute_of = {}
    for group in _groups(job, marked):
        members = {op.name for op in group}
        outputs = {y.key() for op in group for y in op.outputs}
        consumers = [op for op in job.ops if op.section != "forward"
                     and any(x.key() in outputs for x in op.inputs)]
        if not consumers:
            continue  # OneFlow's step 3.1: nothing in the backward reads this group
        clone_of = {}  # original output key -> clone's output blob
        clones = []
        for op in group:
            name = job.unique_name(FAKE_PREFIX + op.name)
            clone = Op(job, name, op.type, op.defn,
                       [clone_of.get(x.key(), x) if x.op.name in members else x for x in op.inputs],
                       op.attrs, op.placement, op.view)
            clone.in_hints, clone.out_hints = dict(op.in_hints), dict(op.out_hints)
            clone.sbp_in, clone.sbp_out = list(op.sbp_in), list(op.sbp_out)
            clone.section = "backward"
            clone.outputs = [LazyBlob(clone, i, y.meta) for i, y in enumerate(op.outputs)]
            for y, c in zip(op.outputs, clone.outputs):
                clone_of[y.key()] = c
            job.op_names[name] = clone
            recompute_of[name] = recompute_of.get(op.name, op.name)
            clones.append(clone)
        for op in consumers:
            op.inputs = [clone_of.get(x.key(), x) for x in op.inputs]
        # clones nothing reads are dropped; the others run right before the first backward op that reads them
        needed = {x.key() for op in consumers for x in op.inputs}
        kept = []
        for clone in reversed(clones):
            if any(y.key() in needed for y in clone.outputs):
                kept.append(clone)
                needed.update(x.key() for x in clone.inputs)
            else:
                del job.op_names[clone.name]
                recompute_of.pop(clone.name, None)
        kept.reverse()
        at = min(job.ops.index(op) for op in consumers)
        job.ops[at:at] = kept
