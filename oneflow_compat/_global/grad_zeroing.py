"""`Tensor._zero_grad_(set_to_none=False)`: what `Optimizer.zero_grad` and `Module.zero_grad` do to each
parameter (OneFlow 0.9, oneflow/api/python/framework/tensor.cpp:308-335 `PyTensorObject_zero_grad`): the gradient
is dropped (`set_to_none`) or zeroed in place; a zeroed GLOBAL gradient also turns its broadcast components into
partial sums (`SbpBToP`, tensor.cpp:293-306: zeros are a valid partial sum, and the next accumulation then needs
no communication), on the same tensor object (`param.grad` keeps its identity) and the same storage.

The next backward gives the gradient back the parameter's own SBP, as OneFlow 0.9's engine boxes every eager
global leaf's accumulated gradient to the leaf's placement and SBP after each accumulation
(oneflow/core/autograd/autograd_engine.cpp:154-175 `FunctionNode::AccGrad4LeafTensor`): a broadcast parameter's
gradient shows broadcast again and holds the summed value on every rank. The partial-sum zeros left here are
marked (`Value.zeroed`); a gradient added into them replaces them (`Tensor._add_to_grad`: zeros summed over the
ranks add nothing), so a data-parallel step's only collective for its gradients stays the bucket's all-reduce."""
from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import global_eager
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


def is_zeroed_partial_of(grad_value, own):
    """Whether `grad_value` is what `zero_grad_` left of a gradient laid out as `own` (a leaf's Value) and still
    holds zeros: the same placement, `own`'s SBP with broadcast made partial sum, nothing written since."""
    return (getattr(grad_value, "zeroed", False) and grad_value.sbp is partial_of(own.sbp)
            and (grad_value.placement is own.placement or grad_value.placement == own.placement)
            and grad_value.meta.dtype == own.meta.dtype)
