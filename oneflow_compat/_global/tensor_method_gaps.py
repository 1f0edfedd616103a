"""Tensor methods OneFlow 0.9 registers that the rest of `tensor_methods` lacked, each bound to the function it
calls there (OneFlow v0.9.0 python/oneflow/framework/tensor.py `RegisterMethods`, and the C methods of
oneflow/api/python/framework/tensor_functions.cpp / tensor.cpp):

`__contains__` ((element == self).any()), `as_strided`, `logaddexp`, `inverse` (flow._C.inv), `clamp_min` /
`clamp_max`, `gelu`, `relu_`, `contiguous_`, `exponential_`, the nn.init fills as methods (`kaiming_normal_`,
`kaiming_uniform_` with OneFlow's keyword `data_format`, `xavier_normal_`, `xavier_uniform_`, `orthogonal_`,
`trunc_normal_`), `global_id`, and the numpy transfers `to_numpy`, `_copy_to_numpy`, `_copy_from_numpy`.
"""
import math
from numbers import Number

import numpy as np

from oneflow_compat._global import elementwise_extra as _ew
from oneflow_compat._global import functional as F
from oneflow_compat._global import generators, nn_init
from oneflow_compat._global.nn_activations import gelu as _gelu
from oneflow_compat._global.products_extra import inv as _inv
from oneflow_compat._global.shape_extra import as_strided as _as_strided
from oneflow_compat._global.inplace import rebind as _rebind
from oneflow_compat._global.logaddexp import logaddexp as _logaddexp
from oneflow_compat._global.tensor import Tensor


def contains(self, element):
    """`element in tensor`: True when some element equals `element` (a Tensor or a number)."""
    if isinstance(element, (Tensor, Number)):
        return bool((self == element).any().item())
    raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a %s." % type(element))


def as_strided(self, size, stride, storage_offset=0):
    return _as_strided(self, size, stride, storage_offset)


def logaddexp(self, other):
    return _logaddexp(self, other)


def inverse(self):
    return _inv(self)


def clamp_min(self, min):  # noqa: A002
    return _ew.clamp_min(self, min)


def clamp_max(self, max):  # noqa: A002
    return _ew.clamp_max(self, max)


def gelu(self):
    """The exact GELU (OneFlow's `Tensor.gelu` takes no arguments)."""
    return _gelu(self)


def relu_(self):
    return _rebind(self, F.relu(self))


def contiguous_(self):
    """In-place `contiguous`: every tensor here is stored contiguously, so it is `self`."""
    return self


def exponential_(self, lambd=1.0, generator=None):
    """Fills `self` in place with draws of the exponential distribution of rate `lambd` (density
    lambd * exp(-lambd * x)), by inversion of a uniform draw from the tensor's generator (so a global tensor gets
    the same logical numbers on any placement, as the other random fills)."""
    if not self.dtype.is_floating:
        raise RuntimeError("exponential_ expects a floating point tensor, got %s" % self.dtype)
    if not lambd > 0:
        raise RuntimeError("exponential_ expects lambda > 0.0, but found lambda=%s" % lambd)
    gen = generator if generator is not None else (
        generators.global_generator() if self.is_global else generators.default_generator())
    u = gen.uniform(tuple(self.shape), np.float64)
    return nn_init._fill(self, -np.log1p(-u) / float(lambd))


def _fan_with_format(self, mode, data_format):
    """OneFlow 0.9's Tensor.kaiming_* pass `data_format` to nn.init, whose fan is `calc_fan` (channels first or
    last)."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError("Mode {} not supported, please use one of fan_in, fan_out".format(mode))
    return nn_init.calc_fan(tuple(self.shape), mode, nn_init.get_data_format(data_format))


def kaiming_uniform_(self, a=0, mode="fan_in", nonlinearity="leaky_relu", *, data_format="NCHW"):
    bound = math.sqrt(3.0) * nn_init.calculate_gain(nonlinearity, a) / math.sqrt(
        _fan_with_format(self, mode, data_format))
    return nn_init.uniform_(self, -bound, bound)


def kaiming_normal_(self, a=0, mode="fan_in", nonlinearity="leaky_relu", *, data_format="NCHW"):
    std = nn_init.calculate_gain(nonlinearity, a) / math.sqrt(_fan_with_format(self, mode, data_format))
    return nn_init.normal_(self, 0.0, std)


def xavier_normal_(self, gain=1.0):
    return nn_init.xavier_normal_(self, gain=gain)


def xavier_uniform_(self, gain=1.0):
    return nn_init.xavier_uniform_(self, gain=gain)


def orthogonal_(self, gain=1.0):
    return nn_init.orthogonal_(self, gain=gain)


def trunc_normal_(self, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return nn_init.trunc_normal_(self, mean=mean, std=std, a=a, b=b)


# global_id: OneFlow numbers each global tensor with a transport token used to synchronise ranks; here the number
# is given on first request, in request order (the same on every rank when the ranks run the same program).
_global_ids = {}


def global_id(self):
    if not self.is_global:
        raise RuntimeError("Only global tensors have 'global_id', global id is used to synchronize rank")
    key = id(self._value)
    entry = _global_ids.get(key)
    if entry is None or entry[0]() is not self._value:
        import weakref
        try:
            ref = weakref.ref(self._value)
        except TypeError:  # values without weak references: keep them alive with their number
            value = self._value
            ref = lambda: value  # noqa: E731
        entry = (ref, len(_global_ids) + 1)
        _global_ids[key] = entry
    return entry[1]


def _local_only(self, name):
    if not self.is_local:
        raise RuntimeError("%s() is only for local tensors; call to_local() (or numpy()) on a global tensor" % name)


def to_numpy(self):
    """The local tensor's values as a new numpy array (OneFlow's C `to_numpy`, which `numpy()` wraps)."""
    _local_only(self, "to_numpy")
    return np.array(self.numpy(), copy=True)


def _copy_to_numpy(self, array):
    """Writes the local tensor's values into the numpy `array` (same dtype and number of elements)."""
    _local_only(self, "_copy_to_numpy")
    values = self.numpy()
    if not isinstance(array, np.ndarray) or array.dtype != values.dtype or array.size != values.size:
        raise RuntimeError("_copy_to_numpy(): expects a numpy array of dtype %s with %d elements"
                           % (values.dtype, values.size))
    array.reshape(-1)[...] = values.reshape(-1)
    return None


def _copy_from_numpy(self, array):
    """Overwrites the local tensor in place with the numpy `array` (same dtype and number of elements)."""
    _local_only(self, "_copy_from_numpy")
    dtype = np.dtype(self.dtype.np)
    if not isinstance(array, np.ndarray) or array.dtype != dtype or array.size != self.numel():
        raise RuntimeError("_copy_from_numpy(): expects a numpy array of dtype %s with %d elements"
                           % (dtype, self.numel()))
    nn_init._fill(self, np.ascontiguousarray(array).reshape(tuple(self.shape)))
    return None


METHODS = {
    "__contains__": contains, "as_strided": as_strided, "logaddexp": logaddexp, "inverse": inverse,
    "clamp_min": clamp_min, "clamp_max": clamp_max, "gelu": gelu, "relu_": relu_, "contiguous_": contiguous_,
    "exponential_": exponential_, "kaiming_uniform_": kaiming_uniform_, "kaiming_normal_": kaiming_normal_,
    "xavier_normal_": xavier_normal_, "xavier_uniform_": xavier_uniform_, "orthogonal_": orthogonal_,
    "trunc_normal_": trunc_normal_, "global_id": global_id, "to_numpy": to_numpy, "_copy_to_numpy": _copy_to_numpy,
    "_copy_from_numpy": _copy_from_numpy,
}
