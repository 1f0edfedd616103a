"""Backward passes that are themselves recorded: `autograd.grad(..., create_graph=True)` and
`backward(create_graph=True)` (OneFlow 0.9: the backward functions run with gradient recording on,
`AutogradInterpreter::Apply`'s `AutoGradMode mode(create_graph)`), so gradients can be differentiated again.

The ordinary pass (`runtime/autograd.py`) computes each op's input gradients as a compiled backward job over
runtime Values, outside any record. Here the same walk runs over Tensors: an op's gradient rule is built into its
small backward job as there, and the job's ops are then applied one by one as eager ops on Tensors
(`dispatch.apply_op_list`), the forward op's inputs and outputs standing in with their own history (an input is
the tensor its edge names; an output is this node's output again). Every op of a gradient rule that itself has a
gradient rule is thus recorded; one without (an op this implementation cannot differentiate twice) is refused
by name rather than giving a silently wrong second derivative. A custom `autograd.Function`'s backward runs with
recording on; layout casts (to_global / to_local) give their backward as recorded casts (`backward_tensors`);
an activation checkpoint recomputes its function on its inputs, recorded, and the walk continues through that
(`recompute_recorded`).
"""
import functools

from oneflow_compat.ir.graph import LazyBlob, Op
from oneflow_compat.ir import builder
from oneflow_compat.ops import registry
from oneflow_compat.runtime import agreement, autograd, global_eager
from oneflow_compat._global import dispatch, higher_order_rules
from oneflow_compat._global.tensor import BOOL, Tensor

__all__ = ["run"]


def _history_tensor(value, like, edge):
    """A tensor of `value` on `like`'s placement and device whose gradient goes to `edge`."""
    if edge is not None and edge[0] == "leaf":
        return edge[1]
    t = Tensor._make(value, like._placement, None, like._device)
    if edge is not None:
        t.requires_grad_flag, t._node, t._out_index = True, edge[1], edge[2]
    return t


def _grad_job(node, dy_values):
    """The job of `node`'s gradient rule over input ops for its inputs, outputs and output gradients (as
    `global_eager._compile_grad` builds it), not compiled."""
    placement = node.inputs[0].placement if node.inputs else node.outputs[0].placement
    defn = registry.get(node.op_type)
    job, ctx = global_eager._new_job("create-graph-" + node.op_type, placement)
    with builder.Scoped(ctx):
        x_blobs = [global_eager._input(ctx, "x%d" % i, global_eager._layout(v)) for i, v in enumerate(node.inputs)]
        y_blobs = [global_eager._input(ctx, "y%d" % k, global_eager._layout(v)) for k, v in enumerate(node.outputs)]
        dy_blobs = [None if d is None else global_eager._input(ctx, "dy%d" % k, global_eager._layout(d))
                    for k, d in enumerate(dy_values)]
        fwd = Op(job, node.op_type, node.op_type, defn, x_blobs, node.attrs, placement, "consistent")
        fwd.outputs = y_blobs
        dxs = list(defn.grad(fwd, dy_blobs))
    return job, x_blobs, y_blobs, dy_blobs, dxs


# Ops without a gradient rule whose outputs do not vary with their inputs' values, or vary in steps (derivative 0
# wherever it exists, as OneFlow's and PyTorch's higher-order gradients take it): a gradient rule may use them
# (masks, zeros of a shape) and stay differentiable. Non-floating outputs (comparisons, indices) carry no gradient.
_STEP_FUNCTIONS = frozenset(("sign", "floor", "ceil", "round", "rint", "fill_like", "zeros_like", "ones_like",
                             "floordiv_x_grad", "floordiv_y_grad"))  # (floordiv's gradients: zeros, kernels' zero_grad)


def _piecewise_constant(op):
    return op.type in _STEP_FUNCTIONS or not any(y.meta.dtype.is_floating for y in op.outputs)


def _replay(node, dys):
    """The input gradients of OpNode `node` as recorded Tensors, from output gradients `dys` (Tensors or None)."""
    if node.inputs is None:
        raise RuntimeError("This FunctionNode with name `%s` has been released.\nMaybe you try to backward through "
                           "the node a second time. Specify retain_graph=True when calling .backward() or "
                           "autograd.grad() the first time." % node.name())
    like = next(d for d in dys if d is not None)
    xs = [_history_tensor(v, like, e) for v, e in zip(node.inputs, node.next_edges)]
    ys = []
    for k, v in enumerate(node.outputs):
        y = Tensor._make(v, like._placement, None, like._device)
        y.requires_grad_flag, y._node, y._out_index = True, node, k
        ys.append(y)
    # the rule's job is built holding the process lock, as every compile is (simulated ranks share the builder)
    job, x_blobs, y_blobs, dy_blobs, dxs = agreement.in_turn(_grad_job, node, [None if d is None else d._value
                                                                             for d in dys])
    feed = {}
    for blob, t in zip(x_blobs, xs):
        feed[blob.key()] = t
    for blob, t in zip(y_blobs, ys):
        feed[blob.key()] = t
    for blob, t in zip(dy_blobs, dys):
        if blob is not None:
            feed[blob.key()] = t
    for op in job.ops:
        if op.defn.role == "input":
            continue
        ins = [feed[x.key()] for x in op.inputs]
        constant = False
        if any(t.requires_grad_flag for t in ins) and registry.get(op.type).grad is None:
            if not _piecewise_constant(op):
                raise NotImplementedError(
                    "create_graph=True: the gradient of op '%s' uses op '%s', which has no gradient rule here, so "
                    "the gradient cannot be differentiated again" % (node.op_type, op.type))
            constant = True  # its derivative is zero wherever it exists: no history to record
        attrs = {k: v for k, v in op.attrs.items() if k != "name"}
        if ins:
            outs = dispatch.apply_op_list(op.type, ins, attrs, requires_grad=False if constant else None)
        else:
            outs = dispatch.make_source(op.type, attrs, like)
        for y, t in zip(op.outputs, outs):
            feed[y.key()] = t
    grads = [feed.get(dx.key()) if isinstance(dx, LazyBlob) and e is not None else None
             for dx, e in zip(dxs, node.next_edges)]
    if node.op_type in _GRAD_READS_INPUT and grads and grads[0] is not None and xs[0].requires_grad_flag:
        grads[0] = _depending_on(grads[0], xs[0])
    return grads


# Forward ops whose gradient op in OneFlow 0.9 reads the forward input x (for its shape) although the gradient
# does not vary with it (avg_pool_<n>d_grad and adaptive_avg_pool<n>d_grad take x and dy): there a gradient of the
# gradient with respect to x is zeros, not None (OneFlow's test_higher_derivative_pool.py reads it). Here those
# gradient ops take x's shape as an attr, so the replayed gradient is made to depend on x with a zero derivative.
_GRAD_READS_INPUT = frozenset(["avg_pool%dd" % n for n in (1, 2, 3)] + ["adaptive_avg_pool%dd" % n for n in (1, 2, 3)])


def _depending_on(dx, x):
    """dx itself, recorded as where(False, x, dx): its derivative with respect to x is zeros."""
    never = dispatch.apply_op("cast", [dispatch.apply_op("fill_like", [dx], {"value": 0.0}, requires_grad=False)],
                              {"dtype": BOOL}, requires_grad=False)
    return dispatch.apply_op("where", [never, x, dx])


def _node_backward(node, dys):
    if isinstance(node, autograd.OpNode):
        composite = higher_order_rules.RULES.get(node.op_type)
        if composite is not None and node.inputs is not None:
            like = next(d for d in dys if d is not None)
            xs = [_history_tensor(v, like, e) for v, e in zip(node.inputs, node.next_edges)]
            grads = composite(xs, dys, node.attrs)
            if grads is not None:
                return [g if e is not None else None for g, e in zip(grads, node.next_edges)]
        return _replay(node, dys)
    tensor_backward = getattr(node, "backward_tensors", None)  # a custom autograd.Function
    if tensor_backward is not None:
        return tensor_backward(dys)
    raise NotImplementedError("create_graph=True: the backward of '%s' is not recorded by this implementation, so "
                              "the gradient through it cannot be differentiated again" % node.name())


def _sum(tensors):
    tensors = [t for t in tensors if t is not None]
    if not tensors:
        return None
    return functools.reduce(lambda a, b: a + b, tensors)


def run(roots, inputs=None):
    """Backpropagates recorded: `roots` = [(edge, gradient Tensor)]. Returns {id(tensor): summed gradient Tensor}
    for `inputs` (leaves or not), or, with `inputs` None, {id(leaf): (leaf, gradient)} for every leaf reached."""
    want_leaf = None if inputs is None else {id(x) for x in inputs if x._node is None}
    want_node = {} if inputs is None else {(id(x._node), x._out_index): x for x in inputs if x._node is not None}
    pending, nodes, leaves = {}, {}, {}

    def send(edge, g):
        if edge is None or g is None:
            return
        if edge[0] == "leaf":
            leaf = edge[1]
            if want_leaf is None or id(leaf) in want_leaf:
                leaves.setdefault(id(leaf), (leaf, []))[1].append(g)
            return
        node, index = edge[1], edge[2]
        slots = pending.get(node)
        if slots is None:
            slots = pending[node] = [[] for _ in range(node.num_outputs)]
            nodes[node.seq] = node
        slots[index].append(g)

    with autograd.enable_grad():
        for edge, g in roots:
            send(edge, g)
        captured = {}
        while nodes:
            node = nodes.pop(max(nodes))
            dys = [_sum(g) for g in pending.pop(node)]
            for k, d in enumerate(dys):
                x = want_node.get((id(node), k))
                if x is not None and d is not None:
                    captured[id(x)] = d
            if all(d is None for d in dys):
                continue
            splice = getattr(node, "recompute_recorded", None)  # an activation checkpoint (utils/checkpoint.py)
            if splice is not None:
                # its function recomputed on the inputs themselves, recorded: the walk goes on through that record
                # (its nodes are newer than every pending one), so inputs and the parameters inside get gradients
                # that can be differentiated again
                for edge, dy in splice(dys):
                    send(edge, dy)
                continue
            for edge, dx in zip(node.next_edges, _node_backward(node, dys)):
                send(edge, dx)
        for key, (leaf, grads) in leaves.items():
            captured[key] = (leaf, _sum(grads)) if inputs is None else _sum(grads)
    return captured
