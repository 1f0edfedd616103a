"""`flow.autograd`: backward from several tensors at once, and the grad-mode switches."""
from oneflow_compat._global.dispatch import backward as _backward
from oneflow_compat.runtime.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401


def backward(tensors, grad_tensors=None, retain_graph=False, create_graph=False):
    """Backpropagates from `tensors` (a tensor or a list), with `grad_tensors` for non-scalar ones."""
    from oneflow_compat._global.tensor import Tensor

    if isinstance(tensors, Tensor):
        tensors = [tensors]
    if grad_tensors is not None and isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    if create_graph:  # the leaves' gradients are recorded, to be differentiated again
        from oneflow_compat._global.autograd_function import backward_recorded

        backward_recorded(list(tensors), None if grad_tensors is None else list(grad_tensors))
        return
    _backward(list(tensors), None if grad_tensors is None else list(grad_tensors), retain_graph)


# --- api-autograd: OneFlow 0.9's autograd.rst (custom Functions, autograd.grad) -------------------------------------
from oneflow_compat._global.autograd_function import Function, grad  # noqa: E402,F401
