"""OneFlow 0.9's in-place math of oneflow.rst / tensor.rst (`floor_`, `sin_`, `clamp_min_`, `clamp_max_`,
`addcmul_`, `addcdiv_`, `Tensor.bernoulli_`) and the api-math Tensor methods, installed on the class from here:
this module sits above `tensor_methods.py` (whose `_rebind` writes a result into a tensor: its storage when nothing
records gradients, else the tensor takes the result) and the function modules it binds, so none of them imports
another in a cycle. Aliases are the same functions as their originals (Tensor.arccos is Tensor.acos).

`bernoulli_` follows OneFlow v0.9.0 `oneflow/core/functional/impl/random_functor.cpp`: with no p the tensor's own
values are the probabilities, with a number p (in [0, 1], else "bernoulli expects p to be in [0, 1], but got
p=P") every entry is drawn with it.
"""
from oneflow_compat._global import elementwise_extra as _ew, functional as F, nn_activations as _act
from oneflow_compat._global import reductions_extra as _red, tensor_attributes_extra as _attrs
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.tensor import Tensor
from oneflow_compat._global.tensor_methods import _rebind


def _inplace_shape(input, result, what):
    if tuple(result.shape) != tuple(input.shape):
        raise RuntimeError("%s(): the result's shape %s does not match the in-place input's shape %s"
                           % (what, tuple(result.shape), tuple(input.shape)))
    return _rebind(input, F.cast(result, input.dtype))


def addcmul_(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return _inplace_shape(input, _ew.addcmul(input, tensor1, tensor2, value=value), "addcmul_")


def addcdiv_(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return _inplace_shape(input, _ew.addcdiv(input, tensor1, tensor2, value=value), "addcdiv_")


def clamp_min_(input, min):  # noqa: A002
    return _rebind(input, _ew.clamp_min(input, min))


def clamp_max_(input, max):  # noqa: A002
    return _rebind(input, _ew.clamp_max(input, max))


def floor_(input):  # noqa: A002
    """floor in place: `input` takes the values and is returned."""
    return _rebind(input, F.floor(F._check(input, "floor_")))


def sin_(input):  # noqa: A002
    """sin in place: `input` takes the values and is returned."""
    x = F._check(input, "sin_")
    if not x.dtype.is_floating:
        raise RuntimeError("sin_(): the in-place result must keep the input's dtype, and sin of a %s tensor is "
                           "floating" % x.dtype)
    return _rebind(x, F.sin(x))



def bernoulli_(self, p=None, *, generator=None):
    """Fills this tensor with 0/1 draws: probability its own values (p None) or the number `p`."""
    if p is not None:
        if isinstance(p, Tensor):
            raise TypeError("bernoulli_(): p must be a number in [0, 1], got a Tensor")
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise RuntimeError("bernoulli expects p to be in [0, 1], but got p=%s" % p)
    draws = TF.bernoulli(self, p=p, generator=generator)
    return _rebind(self, F.cast(draws.detach(), self.dtype))



METHODS = {
    "arccos": TF.acos, "arccosh": TF.acosh, "arcsin": TF.asin, "arcsinh": TF.asinh, "arctan": TF.atan,
    "arctanh": TF.atanh,
    "addcdiv": _ew.addcdiv, "addcdiv_": addcdiv_, "addcmul": _ew.addcmul, "addcmul_": addcmul_,
    "floor_": floor_, "sin_": sin_, "log10": _ew.log10, "logical_xor": _ew.logical_xor,
    "trunc": _ew.trunc, "isclose": _ew.isclose, "allclose": _ew.allclose, "equal": _ew.equal,
    "median": _red.median, "nansum": _red.nansum, "negative": F.negative,
    "mish": lambda self: _act.mish(self), "silu": lambda self: _act.silu(self),
    "softplus": lambda self, beta=1, threshold=20: _act.softplus(self, beta, threshold),
    "type": _attrs.tensor_type, "byte": _attrs.byte, "cast": _attrs.cast, "get_device": _attrs.get_device,
    "stride": _attrs.stride, "storage_offset": _attrs.storage_offset, "pin_memory": _attrs.pin_memory,
    "is_pinned": _attrs.is_pinned, "bernoulli_": bernoulli_,
}


def install():
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)


install()
