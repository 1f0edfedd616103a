"""The argument names (and the overloads) functional_api.yaml (OneFlow v0.9.0) gives `oneflow._C` names bound
earlier under the functional forms' names: `tanh(x)` not `tanh(input)`, `swapaxes(input, dim0, dim1)`,
`cosine_similarity(x, y, ...)`, `tensor_buffer_to_tensor(input, instance_shape, dtype)`, `transpose(input, dim0,
dim1)`, `argmax(..., dtype)`, `fmod(..., inplace)`, ... The earlier keyword names stay accepted (aliases), so a call
that worked before still works.
"""
import functools
import inspect
import numbers

from oneflow_compat._global import functional as _F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global.tensor import Tensor


def renamed(fn, name, **new_for_old):
    """`fn` under the yaml's parameter names (`new_for_old`: old name -> yaml name; positions unchanged); the old
    keyword names are still taken."""
    sig = inspect.signature(fn)
    params = [p.replace(name=new_for_old.get(p.name, p.name)) for p in sig.parameters.values()]
    old_for_new = {v: k for k, v in new_for_old.items()}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **{old_for_new.get(k, k): v for k, v in kwargs.items()})

    wrapper.__signature__ = sig.replace(parameters=params)
    wrapper.__name__ = wrapper.__qualname__ = name
    return wrapper


def _alias(kwargs, old, new, value, fn):
    if old in kwargs:
        if value is not None:
            raise TypeError("%s() got both '%s' and its alias '%s'" % (fn, new, old))
        return kwargs.pop(old)
    return value


def transpose(input=None, perm=None, dim0=None, dim1=None, **kwargs):  # noqa: A002
    """Transpose(input, perm) or Transpose2dim(input, dim0, dim1) (`x` the earlier keyword of input)."""
    input = _alias(kwargs, "x", "input", input, "transpose")
    if kwargs:
        raise TypeError("transpose() got an unexpected keyword argument '%s'" % next(iter(kwargs)))
    if not isinstance(input, Tensor):
        raise TypeError("transpose(): argument 'input' must be Tensor, not %s" % type(input).__name__)
    if isinstance(perm, numbers.Integral) and dim0 is not None and dim1 is None:  # transpose(x, 0, 1)
        perm, dim0, dim1 = None, perm, dim0
    if perm is not None:
        return _F.permute(input, *[int(p) for p in perm])
    if dim0 is None or dim1 is None:
        raise TypeError("transpose() needs perm, or dim0 and dim1")
    return _F.transpose(input, int(dim0), int(dim1))


def argmax(x=None, dim=None, keepdim=None, dtype=None, **kwargs):
    x = _alias(kwargs, "input", "x", x, "argmax")
    out = _F.argmax(x, dim, bool(keepdim))
    return out if dtype is None else _F.cast(out, dtype)


def fmod(input, other, *, inplace=False):  # noqa: A002
    from oneflow_compat._global.math_extra import fmod as _fmod

    out = _fmod(input, other)
    return _inplace.rebind(input, out) if inplace else out


def tensordot(a, b, dims=None, dims_a=None, dims_b=None):
    """TensorDot(a, b, dims_a, dims_b) / TensorDotIntDims(a, b, dims): `dims` an int (the last dims of a with the
    first of b) or a pair of lists; the earlier (a, b, dims_a, dims_b) positional form is kept."""
    from oneflow_compat._global import products_extra

    if dims_b is None and dims_a is not None and dims is not None and not isinstance(dims, numbers.Integral):
        dims, dims_a, dims_b = None, dims, dims_a  # tensordot(a, b, dims_a, dims_b) positionally
    if dims_a is not None or dims_b is not None:
        return products_extra.c_tensordot(a, b, dims_a, dims_b)
    if isinstance(dims, (list, tuple)):  # [dims_a, dims_b]
        return products_extra.c_tensordot(a, b, dims[0], dims[1])
    return products_extra.c_tensordot(a, b, 2 if dims is None else dims)


def bernoulli_(input, p=None, *, dtype=None, generator=None, **kwargs):  # noqa: A002
    """InplaceBernoulli / InplaceBernoulliProb: every element 0 or 1 (probability its own value, or the number p), in
    place; the tensor keeps its dtype (`dtype` names OneFlow's draw type, the values are the same)."""
    from oneflow_compat._global.math_methods import bernoulli_ as _bernoulli_

    input = _alias(kwargs, "self", "input", input, "bernoulli_")
    out = _bernoulli_(input, p, generator=generator)
    return out


def tensor_buffer_to_tensor(input=None, instance_shape=None, dtype=None, **kwargs):  # noqa: A002
    """TensorBufferToTensor(input, instance_shape, dtype): the yaml's order (the earlier binding took (x, dtype,
    instance_shape); a dtype given second is still read as the dtype)."""
    from oneflow_compat._global.nn_data import tensor_buffer_to_tensor as _tb2t
    from oneflow_compat.ir import dtypes

    input = _alias(kwargs, "x", "input", input, "tensor_buffer_to_tensor")
    if isinstance(instance_shape, dtypes.DType):
        instance_shape, dtype = dtype, instance_shape
    return _tb2t(input, dtype, instance_shape)
