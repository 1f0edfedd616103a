"""`Tensor._zero_grad_(set_to_none=False)`: what `Optimizer.zero_grad` and `Module.zero_grad` do to each
parameter (OneFlow 0.9, oneflow/api/python/framework/tensor.cpp:308-335 `PyTensorObject_zero_grad`): the gradient
is dropped (`set_to_none`) or zeroed in place; a zeroed GLOBAL gradient also turns its broadcast components into
partial sums (`SbpBToP`, tensor.cpp:293-306: zeros are a valid partial sum, and the next accumulation then needs
no communication), on the same tensor object (`param.grad` keeps its identity) and the same storage.

The next backward gives the gradient back the parameter's own SBP, as OneFlow 0.9's engine boxes every eager
global leaf's accumulated gradient to the leaf's placement and SBP after each accumulation
(oneflow/core/autograd/autograd_engine.cpp:154-175 `FunctionNode::AccGrad4LeafTensor`): a broadcast parameter's
gradient shows broadcast again and holds the old gradient plus the new, summed, on every rank. Whatever the
partial-sum gradient holds by then (zeros; or what was written into it: `add_`, `fill_`, a write into
`to_local()` on some ranks only) is added into the bucket contribution of the new gradient before its all-reduce
(`leaf_gradient`, `runtime/buckets.py`), so a data-parallel step's only collective for its gradients stays the
bucket's all-reduce and nothing written is lost; the bucket's sum then replaces the old gradient
(`Tensor._add_to_grad`, `Value.folded`). A broadcast gradient (every rank the whole batch) joins the buckets as a
partial sum (`runtime/autograd.py`: one all-reduce for all of them, where OneFlow 0.9 adds and boxes each); one on
a mesh is added to the old pieces and the sum boxed once (`fold_into_old`); with a hook on the leaf the old
gradient is boxed on its own and added (a collective, as OneFlow 0.9's add then boxing).
The zeros left here are marked (`Value.zeroed`, for readers: no decision depends on it, since a write through
`to_local()` on one rank cannot clear it on the others)."""
from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import autograd, global_eager
from oneflow_compat.runtime.graph_trace import LazyValue


def zero_grad_(self, set_to_none=False):
    grad = self.grad
    if grad is None:
        return
    if set_to_none:
        self.grad = None
        return
    grad.zero_()
    if grad._placement is None or type(grad._value) is LazyValue:
        return
    v = grad._value
    if v.placement.parallel_num > 1:
        sbp = partial_of(v.sbp)
        if sbp is not v.sbp:
            # the same pieces relabelled (a partial sum's piece has the broadcast piece's shape): no allocation
            # (a global tensor has no views to tell: `_set_value`'s work is not needed)
            grad._value, grad._sbp = global_eager.Value(v.meta, v.placement, sbp, v.pieces), None
    else:  # one device: the value stays as it lies (its one piece is the value), only the SBP shown changes
        shown = tuple(flow_sbp.partial_sum if s == flow_sbp.broadcast else s for s in grad.sbp)
        if shown != tuple(grad.sbp):
            grad._sbp = shown
    grad._value.zeroed = True


def partial_of(sbp):
    """`sbp` (1-D or n-D, compiler symbols) with broadcast made partial sum: what a zeroed gradient is laid out as."""
    kind = type(sbp)  # (types compared, not symbols: no __eq__ call per parameter per step)
    if kind is S.Broadcast:
        return S.P
    if kind is S.NdSbp and S.B in sbp.sbps:
        return S.nd([S.P if s == S.B else s for s in sbp.sbps], sbp.mesh)
    return sbp


def forget_zeroed(value):
    """`value`'s pieces were written: it is no longer known to hold zeros."""
    if getattr(value, "zeroed", False):
        value.zeroed = False


def is_partial_of(grad_value, own):
    """Whether `grad_value` is laid out as `zero_grad_` leaves a gradient of a leaf laid out as `own` (a leaf's
    Value): the same placement, shape and dtype, `own`'s SBP with broadcast made partial sum (whatever its pieces
    hold: zeros, or what was written into them since; or a partial sum assigned to `.grad`)."""
    sbp = partial_of(own.sbp)
    return (sbp is not own.sbp and (grad_value.sbp is sbp or grad_value.sbp == sbp)
            and (grad_value.placement is own.placement or grad_value.placement == own.placement)
            and grad_value.meta.dtype == own.meta.dtype and grad_value.meta.shape == own.meta.shape)


def leaf_gradient(leaf):
    """`runtime.autograd.backward`'s `leaf_gradient`: (this rank's pieces of `leaf`'s `.grad` or None, whether the
    next bucketed sum of its gradient may carry them) — it may where `.grad` is a partial sum on the leaf's
    placement (`is_partial_of`: after `zero_grad()`) and no hook must see the new gradient alone (OneFlow 0.9 runs a
    leaf's hooks on the new gradient, before it is added to `.grad`). OneFlow 0.9 adds the new gradient to the old
    one (the old partial sum's pieces summed over the ranks, plus the new sum): adding this rank's old piece into
    its bucket contribution gives that sum in the one all-reduce the step makes anyway, for pieces of any content,
    equal or different per rank. Every rank answers the second alike (the layouts and hooks are the same
    everywhere), so every rank then accumulates alike."""
    grad = leaf._grad
    if grad is None:
        return None, False
    g = grad._value
    if type(g) is LazyValue:
        return None, False
    if leaf._grad_hooks:
        return g.pieces, False
    own = leaf._value
    if type(g.sbp) is S.PartialSum and type(own.sbp) is S.Broadcast:  # (1-D, every step of data parallelism: inline)
        return g.pieces, ((g.placement is own.placement or g.placement == own.placement)
                          and (g.meta.dtype is own.meta.dtype or g.meta.dtype == own.meta.dtype)
                          and g.meta.shape == own.meta.shape)
    return g.pieces, is_partial_of(g, own)


def fold_into_old(leaf, value):
    """`value` (a gradient of `leaf` that no bucket summed) added to the leaf's partial-sum `.grad` on the gradient's
    own layout, or None where that is not free: `value` laid out as `.grad` is, or broadcast where `.grad` is a
    partial sum (broadcast to partial sum needs no communication), so that boxing the result to the leaf's SBP is
    the one collective of the accumulation (OneFlow 0.9: the old gradient plus the new, then boxed to the leaf's
    SBP) instead of one for the old gradient and one for the new. Decided from layouts only: every rank alike."""
    grad = leaf._grad
    if grad is None:
        return None
    g, own = grad._value, leaf._value
    if type(g) is LazyValue or type(value) is LazyValue or not is_partial_of(g, own) or \
            value.meta.shape != own.meta.shape or value.meta.dtype != own.meta.dtype or \
            not (value.placement is g.placement or value.placement == g.placement) or \
            not _freely_partial(value.sbp, g.sbp):
        return None
    v = autograd.box(value, g.placement, g.sbp, label="gradient")
    if len(v.pieces) != len(g.pieces) or any(p.shape != q.shape for p, q in zip(v.pieces, g.pieces)):
        return None
    return global_eager.Value(g.meta, g.placement, g.sbp, [q + p for q, p in zip(v.pieces, g.pieces)], g.lk)


def _freely_partial(sbp, target):
    """Whether boxing from `sbp` to `target` (a partial-sum gradient's layout) needs no communication: on every
    mesh axis the same component, or broadcast where `target` is a partial sum."""
    if type(sbp) is S.NdSbp or type(target) is S.NdSbp:
        if type(sbp) is not type(target) or len(sbp.sbps) != len(target.sbps) or sbp.mesh != target.mesh:
            return False
        pairs = zip(sbp.sbps, target.sbps)
    else:
        pairs = ((sbp, target),)
    return all(a == b or (type(a) is S.Broadcast and type(b) is S.PartialSum) for a, b in pairs)
