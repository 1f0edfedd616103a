"""`oneflow._C`'s creation and random names (OneFlow v0.9.0 functional_api.yaml; functors in
`oneflow/core/functional/impl/array_functor.cpp`, `random_functor.cpp`): the local overloads (device) and the
global ones (placement, sbp) in one function each, as OneFlow's overload resolution picks them by the keywords
given; `global_*` names take placement and sbp only. The values are those of the top-level creators (the same
generators: parallelism never changes the numbers).
"""
import numbers

from oneflow_compat import sbp as _sbp
from oneflow_compat._global import creation as _C
from oneflow_compat._global import functional as _F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global import tensor_functions as _T
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.ir import dtypes as _dtypes


def _shape(size, fn):
    if isinstance(size, numbers.Integral):
        return (int(size),)
    try:
        return tuple(int(s) for s in size)
    except TypeError:
        raise TypeError("%s(): argument 'size' must be a shape (a list of ints), not %s"
                        % (fn, type(size).__name__)) from None


def _placed(placement, sbp, fn):
    if (placement is None) != (sbp is None):
        raise ValueError("%s(): placement and sbp must be given together" % fn)
    return {} if placement is None else {"placement": placement, "sbp": sbp}


def normal(mean, std, size, *, out=None, dtype=None, device=None, generator=None, requires_grad=False,
           placement=None, sbp=None):
    """Normal / Normal2 (an int size) / GlobalNormal."""
    # (out goes to flow.normal: OneFlow's functor checks it against dtype and device, and draws in its dtype)
    return _C.normal(float(mean), float(std), _shape(size, "normal"), out=out, dtype=dtype, device=device,
                     generator=generator, requires_grad=requires_grad, **_placed(placement, sbp, "normal"))


def eye(n, m=None, *, dtype=_dtypes.float32, device=None, requires_grad=False, placement=None, sbp=None):
    return _C.eye(int(n), None if m is None else int(m), dtype=dtype, device=device, requires_grad=requires_grad,
                  **_placed(placement, sbp, "eye"))


def arange(start=None, end=None, step=1, *, dtype=None, device=None):
    """Arange(start, end, step) or Arange(end) (positionally `arange(5)`, or `arange(end=5)`)."""
    if end is None:
        start, end = 0, start
    elif start is None:
        start = 0
    return _C.arange(start, end, step, dtype=dtype, device=device)


def global_arange(start=None, end=None, step=1, *, dtype=None, placement, sbp):
    if end is None:
        start, end = 0, start
    elif start is None:
        start = 0
    return _C.arange(start, end, step, dtype=dtype, placement=placement, sbp=sbp)


def constant(shape, value, *, dtype, device=None):
    """Constant: a tensor of `shape` filled with the number `value`."""
    return _C.full(_shape(shape, "constant"), value, dtype=dtype, device=device)


def global_constant(shape, value, *, dtype, placement, sbp):
    return _C.full(_shape(shape, "global_constant"), value, dtype=dtype, placement=placement, sbp=sbp)


def _tensor_filled(shape, value, dtype, fn):
    if not isinstance(value, Tensor):
        raise TypeError("%s(): argument 'value' must be Tensor, not %s" % (fn, type(value).__name__))
    if value.numel() != 1:
        raise RuntimeError("%s: value must hold one element, got shape %s" % (fn, tuple(value.shape)))
    shape = _shape(shape, fn)
    v = _F.reshape(_F.cast(value, dtype) if dtype is not None else value, (1,) * len(shape))
    return _T.expand(v, *shape).contiguous() if shape else _F.reshape(v, ())


def tensor_constant(shape, value, *, dtype, device=None):
    """TensorConstant: `shape` filled with the one element of the tensor `value` (differentiable in value)."""
    out = _tensor_filled(shape, value, dtype, "tensor_constant")
    return out if device is None else out.to(device)


def global_tensor_constant(shape, value, *, dtype, placement, sbp):
    """GlobalTensorConstant: the local one made global; a local `value` is read whole on every rank."""
    out = _tensor_filled(shape, value, dtype, "global_tensor_constant")
    if out.is_global:
        return out.to_global(placement=placement, sbp=sbp)
    whole = [_sbp.broadcast] * (len(sbp) if isinstance(sbp, (list, tuple)) else 1)
    return out.to_global(placement=placement, sbp=whole).to_global(sbp=sbp)


def empty(shape, *, dtype, device=None, pin_memory=False):
    return _C.empty(*_shape(shape, "empty"), dtype=dtype, device=device, pin_memory=pin_memory)


def global_empty(shape, *, dtype, placement, sbp):
    return _C.empty(*_shape(shape, "global_empty"), dtype=dtype, placement=placement, sbp=sbp)


def rand(size, *, dtype=None, device=None, generator=None, requires_grad=False, placement=None, sbp=None):
    return _C.rand(*_shape(size, "rand"), dtype=dtype, device=device, generator=generator,
                   requires_grad=requires_grad, **_placed(placement, sbp, "rand"))


def randn(size, *, dtype=None, device=None, generator=None, requires_grad=False, placement=None, sbp=None):
    return _C.randn(*_shape(size, "randn"), dtype=dtype, device=device, generator=generator,
                    requires_grad=requires_grad, **_placed(placement, sbp, "randn"))


def randint(low=None, high=None, size=None, *, dtype=None, device=None, generator=None, requires_grad=False,
            placement=None, sbp=None):
    """RandInt(low, high, size) or RandInt(high, size) (positionally `randint(5, [3])`, or `randint(high=5,
    size=[3])`): integers in [low, high)."""
    if size is None:
        low, high, size = 0, low, high
    elif low is None:
        low = 0
    if high is None or size is None:
        raise TypeError("randint() needs high and size")
    return _C.randint(int(low), int(high), _shape(size, "randint"), dtype=dtype, device=device,
                      generator=generator, requires_grad=requires_grad, **_placed(placement, sbp, "randint"))


def randperm(n, *, generator=None, dtype=_dtypes.int64, device=None, requires_grad=False, placement=None,
             sbp=None):
    return _C.randperm(int(n), generator=generator, dtype=dtype, device=device, requires_grad=requires_grad,
                       **_placed(placement, sbp, "randperm"))


def bernoulli(input, p=None, *, dtype=_dtypes.float32, generator=None, inplace=False):  # noqa: A002
    """Bernoulli (each element's probability is input's) / BernoulliProb (one probability `p`)."""
    if not isinstance(input, Tensor):
        raise TypeError("bernoulli(): argument 'input' must be Tensor, not %s" % type(input).__name__)
    if p is not None and not 0.0 <= float(p) <= 1.0:
        raise ValueError("bernoulli: p must be in [0, 1], got %r" % (p,))
    out = _T.bernoulli(input, p=p, generator=generator)
    if inplace:
        return _inplace.rebind(input, _F.cast(out, input.dtype))
    return out if dtype is None or out.dtype == dtype else _F.cast(out, dtype)


def exponential_(x, lambd=1.0, generator=None):
    return x.exponential_(lambd, generator=generator)


def multinomial(x, num_samples, replacement=False, generator=None):
    return _T.multinomial(x, int(num_samples), replacement=replacement, generator=generator)


def uniform_(x, *args, **kwargs):
    """InplaceUniform(x, from, to): `from` is a Python keyword, so it is read from **kwargs too."""
    names = ("from", "to")
    vals = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in vals:
            raise TypeError("uniform_() got an unexpected or repeated keyword argument '%s'" % k)
        vals[k] = v
    if set(vals) != set(names):
        raise TypeError("uniform_() missing required argument(s): %s"
                        % ", ".join("'%s'" % n for n in names if n not in vals))
    return x.uniform_(float(vals["from"]), float(vals["to"]))
