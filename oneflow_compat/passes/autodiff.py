"""Reverse-mode autodiff over a job: gradient ops built from each op's grad rule, placed with the forward op."""
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops import registry


class GradScope:
    """Puts new ops on the forward op's placement and view while its gradient is built."""

    def __init__(self, ctx, op, section="backward"):
        self.ctx, self.op, self.section = ctx, op, section

    def __enter__(self):
        self.ctx.placements.append(self.op.placement)
        self.ctx.views.append(self.op.view)
        self.saved_section, self.ctx.section = self.ctx.section, self.section

    def __exit__(self, *exc):
        self.ctx.placements.pop()
        self.ctx.views.pop()
        self.ctx.section = self.saved_section
        return False


def _name(v):
    return v if isinstance(v, str) else v.op.attrs["name"]


def variable_owners(job):
    """{variable name: leaf optimizer} for the trainable variables the job's optimizer updates."""
    opt = job.optimizer
    trainable = [n for n, op in job.variable_ops.items()
                 if op.attrs["spec"].trainable and op.attrs["spec"].dtype.is_floating]
    owners = {}
    for leaf in opt.leaf_optimizers():
        for v in leaf.resolve_variables(trainable):
            name = _name(v)
            if name in job.variable_ops and name in trainable:
                owners[name] = leaf
    return owners


def trainable_variable_ops(job):
    owners = variable_owners(job)
    return [op for name, op in job.variable_ops.items() if name in owners]


def build_backward(ctx, job, loss_scale=None):
    """Adds the backward ops of `job`; returns {variable name: gradient blob} (unscaled: d Σ losses / d var)."""
    var_ops = trainable_variable_ops(job)
    watched = {}
    for blob, handler in job.diff_watches:
        watched.setdefault(blob.key(), []).append(handler)
    # which blobs depend on a trainable variable
    needs = set()
    for op in var_ops:
        needs.add(op.outputs[0].key())
    requests = getattr(job, "grad_requests", None) or {}  # nn.Graph: gradients build() read (`t.grad`)
    stand_ins = {op.name for op in requests.values()}
    needs.update(requests)
    fwd_ops = list(job.ops)
    for op in fwd_ops:
        # ops without a grad rule (comparisons, argmax, ...) stop the gradient; so do the stand-ins of
        # gradients (a gradient read inside build is not differentiated again: OneFlow 0.9's lazy backward
        # runs with create_graph=False)
        if op.name in stand_ins:
            continue
        if op.defn.grad is not None and any(x.key() in needs for x in op.inputs):
            for y in op.outputs:
                needs.add(y.key())
    for key in watched:
        needs.add(key)
    grads = {}
    custom = getattr(job, "custom_grads", None)  # {op name: grad rule} of this job's ops alone

    def add_grad(key, g):
        grads.setdefault(key, []).append(g)

    for loss in job.losses:
        if loss.key() not in needs:
            continue
        with GradScope(ctx, loss.op):
            name = ctx.job.unique_name(loss.op.name + "-loss_seed")
            if isinstance(loss_scale, LazyBlob):  # dynamic loss scaling: the scale is a variable
                seed = registry.apply("fill_like_tensor", [loss, loss_scale], name=name)
            else:
                seed = registry.apply("fill_like", [loss], {"value": 1.0 if loss_scale is None else float(loss_scale)},
                                      name=name)
        add_grad(loss.key(), seed)

    def total(key, op):
        gs = grads.get(key)
        if not gs:
            return None
        if len(gs) > 1:
            with GradScope(ctx, op):
                gs[:] = [registry.apply("add_n", gs)]
        return gs[0]

    for op in reversed(fwd_ops):
        if op.name in stand_ins or not any(y.key() in needs for y in op.outputs):
            continue
        dys = [total(y.key(), op) for y in op.outputs]
        for y, dy in zip(op.outputs, dys):
            if dy is not None and y.key() in watched:
                for handler in watched[y.key()]:
                    with GradScope(ctx, op):
                        registry.new_op("watch", [dy], {"handler": handler.handler, "kind": handler.kind,
                                                        "what": "diff of " + y.logical_blob_name})
        if op.defn.role == "variable" or all(d is None for d in dys):
            continue
        if op.defn.grad is None or not any(x.key() in needs for x in op.inputs):
            continue
        # an op whose gradient the user wrote (`autograd.Function` traced in an nn.Graph) has its own rule
        rule = custom.get(op.name, op.defn.grad) if custom else op.defn.grad
        with GradScope(ctx, op):
            dxs = rule(op, dys)
        for i, (x, dx) in enumerate(zip(op.inputs, dxs)):
            if dx is not None and x.key() in needs:
                hint = op.grad_hints.get(i)
                if hint is not None:
                    with GradScope(ctx, op):
                        dx = registry.apply("identity", [dx], in_hints={0: hint}, out_hints={0: hint})
                add_grad(x.key(), dx)
    out = {}
    for op in var_ops:
        g = total(op.outputs[0].key(), op)
        if g is not None:
            out[op.attrs["name"]] = (op, g)
    if requests:
        _resolve_grad_requests(ctx, job, requests, fwd_ops, total)
        # a parameter's gradient that build changed in place (nn.Graph: `p.grad.mul_(c)`, clip_grad_norm_) is
        # the one its update reads (OneFlow 0.9 MarkVariableGradients)
        for name, blob in (getattr(job, "variable_grads", None) or {}).items():
            if name in out:
                out[name] = (out[name][0], blob)
    return out


def _resolve_grad_requests(ctx, job, requests, fwd_ops, total):
    """Each gradient build() read stands as an identity of its blob: it now reads the gradient blob (zeros where
    no gradient arrived), and it and the ops reading it, traced in build after `loss.backward()`, move after
    the backward ops (the ops run in list order), before the optimizer's updates, which come later."""
    producers = {op.name: op for op in fwd_ops}
    for key, stand_in in requests.items():
        src = producers[key[0]]
        g = total(key, src)
        if g is None:
            with GradScope(ctx, src):
                g = registry.apply("fill_like", [src.outputs[key[1]]], {"value": 0.0})
        stand_in.inputs[0] = g
        stand_in.section = "backward"
    moved = {op.name for op in requests.values()}
    produced = set()
    for op in fwd_ops:
        if op.name in moved or any(x.key() in produced for x in op.inputs):
            moved.add(op.name)
            produced.update(y.key() for y in op.outputs)
    later = [op for op in job.ops if op.name in moved]
    job.ops[:] = [op for op in job.ops if op.name not in moved] + later
