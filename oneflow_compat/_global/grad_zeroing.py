"""`Tensor._zero_grad_(set_to_none=False)`: what `Optimizer.zero_grad` and `Module.zero_grad` do to each
parameter (OneFlow 0.9, oneflow/api/python/framework/tensor.cpp `PyTensorObject_zero_grad`): the gradient is
dropped (`set_to_none`) or zeroed in place; a zeroed GLOBAL gradient also turns its broadcast components into
partial sums (zeros are a valid partial sum, and the next accumulation then needs no communication), on the same
tensor object (`param.grad` keeps its identity)."""
from oneflow_compat import sbp as flow_sbp


def zero_grad_(self, set_to_none=False):
    grad = self.grad
    if grad is None:
        return
    if set_to_none:
        self.grad = None
        return
    grad.zero_()
    if grad.is_global:
        from oneflow_compat._global import creation

        sbp = [flow_sbp.partial_sum if s == flow_sbp.broadcast else s for s in grad.sbp]
        if list(grad.sbp) != sbp:
            grad.data = creation.zeros(grad.shape, dtype=grad.dtype, placement=grad.placement, sbp=sbp)
