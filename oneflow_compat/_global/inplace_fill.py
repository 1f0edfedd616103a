"""`Tensor.fill_` while gradients are recorded: the filled tensor's history becomes a `where` of an all-true mask
choosing the value over the old content, so the old content gets a zero gradient and a tensor value (a 0-dim
tensor, `fill_(value_tensor)`) the sum of the output gradient, as OneFlow 0.9's fill_ / fill_tensor_ gradients
(autograd/gradient_funcs/fill.cpp @ v0.9.0: zeros for the input, the sum for the value). Without recording, the
storage is written in place (`Tensor.fill_`)."""
from oneflow_compat.runtime import autograd
from oneflow_compat._global import functional as F
from oneflow_compat._global.inplace import rebind
from oneflow_compat._global.tensor import BOOL, Tensor

_write_in_place = Tensor.fill_


def fill_(self, value):
    """`Tensor.fill_`: recorded when a history goes through (a non-leaf that requires grad, or a value tensor that
    does); otherwise (a leaf, a parameter being initialised, a buffer) the storage is written in place."""
    if autograd.is_grad_enabled() and ((self.requires_grad_flag and self._node is not None)
                                       or getattr(value, "requires_grad_flag", False)):
        return fill_recorded(self, value)
    return _write_in_place(self, value)


def fill_recorded(t, value):
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with %d dimensions."
                           % value.ndim)
    mask = F.ones_like(t, dtype=BOOL)
    return rebind(t, F.where(mask, value, t))
