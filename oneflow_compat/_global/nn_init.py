"""`flow.nn.init`: fill a tensor in place with random or constant values (OneFlow's / PyTorch's formulas).

Random fills draw from the generator the tensor's kind calls for (`generators.py`): a LOCAL tensor from this
rank's local generator (so a module built locally and then converted with `to_global(..., broadcast)` takes the
first rank's values, as in OneFlow), a GLOBAL tensor from the global generator as one full logical value of
which each rank keeps its piece (the same numbers whatever the placement and SBP).
"""
import math

import numpy as np

from oneflow_compat import initializer
from oneflow_compat.ir import dtypes
from oneflow_compat.kernels import bfloat16 as bf16_k
from oneflow_compat.ir import sbp as S
from oneflow_compat.runtime import global_eager
from oneflow_compat._global import device_keys, generators


def _fill(tensor, full):
    """Writes the full logical host value `full` into `tensor`'s storage (this rank's piece of it)."""
    value = tensor._value
    full = np.asarray(full, dtype=value.meta.dtype.np)
    if value.meta.dtype is dtypes.bfloat16:  # bfloat16 storage holds bfloat16 numbers
        full = bf16_k.round_to_bfloat16(np, full).reshape(full.shape)
    if tensor.is_local:
        with device_keys.of(tensor):  # (a "cuda:K" tensor: on its GPU)
            for piece in value.pieces:
                piece[...] = global_eager.to_device(full, value.placement)
        return tensor
    ranks = [m for m, _ in value.placement.pairs]
    me = global_eager.rank()
    for piece in value.pieces:
        index = ranks.index(me)
        # partial sums: the logical value is their sum, so the first addend holds it all (on every mesh axis)
        part = full[S.local_slices(full.shape, value.sbp, index, len(ranks))]
        if not S.holds_addend_value(value.sbp, index):
            part = np.zeros_like(part)
        piece[...] = global_eager.to_device(np.ascontiguousarray(part), value.placement)
    return tensor


def _generator(tensor, generator):
    if generator is not None:
        return generator
    return generators.global_generator() if tensor.is_global else generators.default_generator()


def _shape(tensor):
    return tuple(tensor.shape)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Values drawn uniformly from [a, b)."""
    gen = _generator(tensor, generator)
    return _fill(tensor, gen.uniform(_shape(tensor), tensor.dtype.np, low=float(a), high=float(b)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    gen = _generator(tensor, generator)
    return _fill(tensor, gen.normal(_shape(tensor), tensor.dtype.np, mean=float(mean), std=float(std)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """A normal draw clamped to [a, b] (OneFlow 0.9 `nn/init.py`: `normal_(mean, std).clamp_(a, b)`, not a
    resampling)."""
    gen = _generator(tensor, None)
    return _fill(tensor, np.clip(gen.normal(_shape(tensor), tensor.dtype.np, mean=float(mean), std=float(std)),
                                 a, b))


def constant_(tensor, val):
    return _fill(tensor, np.full(_shape(tensor), val))


def zeros_(tensor):
    return constant_(tensor, 0)


def ones_(tensor):
    return constant_(tensor, 1)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain of an activation (PyTorch's table, which OneFlow copies)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError("negative_slope {} not a valid number".format(param))
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError("Unsupported nonlinearity {}".format(nonlinearity))


def _calculate_fan_in_and_fan_out(tensor):
    shape = _shape(tensor)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for d in shape[2:]:
        receptive *= d
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError("Mode {} not supported, please use one of fan_in, fan_out".format(mode))
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(−bound, bound) with bound = gain·√(3 / fan): He et al. (2015)."""
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(_fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


# api-nn: nn.init.orthogonal_ (OneFlow v0.9.0 python/oneflow/nn/init.py and framework/tensor.py `_orthogonal`)
def orthogonal_(tensor, gain=1.0, generator=None):
    """Fills `tensor` (2 or more dims; the trailing ones flattened) with a (semi-)orthogonal matrix times `gain`:
    the Q of a QR factorisation of a standard normal draw (transposed when there are fewer rows than columns), its
    columns' signs fixed by R's diagonal (Saxe et al. 2013), as OneFlow's `_orthogonal`. OneFlow 0.9's own
    `_orthogonal` returns a new tensor and leaves the argument unfilled; the documented behaviour, filling in
    place (and returning the tensor), is this one, drawn from the generators as the other fills."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = int(np.prod(tensor.shape[1:]))
    gen = _generator(tensor, generator)
    flattened = gen.normal((rows, cols), np.float64)
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r, 0))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(_shape(tensor)))


# --- nn.init.eye_, calc_fan and get_data_format (OneFlow v0.9.0 python/oneflow/nn/init.py, which takes
# calc_fan / get_data_format from ops/util/initializer_util.py) ---------------------------------------------------
def eye_(tensor):
    """Fills a 2-D tensor with the identity matrix (ones on the main diagonal of a non-square one too), in place;
    OneFlow's `flow._C.eye_`."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*_shape(tensor)))


def get_data_format(data_format):
    """"NC..." -> "channels_first", "N...C" -> "channels_last", "" -> "" (the legacy initializers' tag)."""
    return initializer.data_format_tag(data_format)


def calc_fan(shape, mode, data_format):
    """The fan of a weight `shape` (OneFlow's initializer formula, `initializer.weight_fans`, which differs from
    `_calculate_fan_in_and_fan_out` beyond 2 dims); `mode` "fan_in", "fan_out" or "fan_sum" (their sum). A
    float."""
    shape = tuple(shape)
    if len(shape) < 2:
        raise AssertionError("Fan in and fan out can out be computed for tensor with fewer 2 dimensions")
    if len(shape) > 2 and data_format not in ("channels_first", "channels_last"):
        raise NotImplementedError("Only support 'channels_first' and 'channels_last' data format")
    fan_in, fan_out = initializer.weight_fans(shape, data_format)
    if mode == "fan_sum":
        return float(fan_in) + float(fan_out)
    if mode == "fan_in":
        return float(fan_in)
    if mode == "fan_out":
        return float(fan_out)
    raise NotImplementedError("Only support 'fan_in', 'fan_out' and 'fan_sum' mode")
