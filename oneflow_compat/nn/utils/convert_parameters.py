"""`nn.utils.parameters_to_vector` / `vector_to_parameters`: parameters flattened into one vector and back."""
from oneflow_compat.runtime import autograd
from oneflow_compat._global import functional as F
from oneflow_compat._global.tensor import Tensor


def parameters_to_vector(parameters):
    """One 1-D tensor: the parameters flattened and concatenated in order (differentiable)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector(): expected at least one parameter")
    return F.cat([F.reshape(p, (-1,)) for p in params])


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of `vec` into the parameters' data, in order."""
    if not isinstance(vec, Tensor):
        raise TypeError("expected flow.Tensor, but got: {}".format(type(vec).__name__))
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError("vector_to_parameters(): the vector has shape %s but the parameters hold %d elements"
                         % (tuple(vec.shape), total))
    offset = 0
    with autograd.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(F.reshape(vec[offset:offset + n], tuple(p.shape)))
            offset += n
