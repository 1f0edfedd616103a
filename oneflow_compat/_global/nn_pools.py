"""OneFlow 0.9's pooling for tensors: `flow.nn.MaxPool1d/2d/3d`, `AvgPool1d/2d/3d`, `AdaptiveAvgPool1d/2d/3d`
and the functional `max_pool*d`, `avg_pool*d`, `adaptive_avg_pool*d`, on the registry's pooling ops (the 2-D ones
those of legacy `flow.nn.max_pool2d` / `avg_pool2d`), eager, in `nn.Graph`, local or global (batch or channel
splits stay split).

Signatures, defaults (stride = kernel_size, count_include_pad=True) and reprs follow OneFlow 0.9
(python/oneflow/nn/modules/pooling.py). `return_indices=True` returns (y, indices) from `nn_pool_indices.py`.
"""
import os

from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module
from oneflow_compat._global.nn_pool_indices import max_pool_with_indices

_FORMATS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _ntuple(value, n, what):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise ValueError("%s should be an int or a tuple of %d ints, got %r" % (what, n, value))
    return value


def _check(x, nd, what):
    F._check(x, what)
    if x.ndim != nd + 2:
        raise ValueError("%s: expected a %d-D input (batch, channels, %d spatial), got shape %s"
                         % (what, nd + 2, nd, tuple(x.shape)))
    return x


def _op(kind, nd):
    return "%s_pool%dd" % (kind, nd)


def _max_pool(nd, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode):  # noqa: A002
    x = _check(input, nd, "max_pool%dd" % nd)
    k = _ntuple(kernel_size, nd, "kernel_size")
    s = _ntuple(stride, nd, "stride") if stride is not None else k
    p = _ntuple(padding, nd, "padding")
    d = _ntuple(dilation, nd, "dilation")
    if return_indices:
        # (y, indices) from OneFlow's max_pool_Nd op (ops/pool_index_ops.py)
        return max_pool_with_indices(nd, x, k, s, p, d, ceil_mode)
    return apply_op(_op("max", nd), [x], {"ksize": k, "strides": s, "pads": tuple((v, v) for v in p),
                                          "data_format": _FORMATS[nd], "ceil_mode": bool(ceil_mode),
                                          "dilations": d})


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,  # noqa: A002
               ceil_mode=False):
    return _max_pool(1, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,  # noqa: A002
               ceil_mode=False):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,  # noqa: A002
               ceil_mode=False):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode)


def _avg_pool(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):  # noqa: A002
    x = _check(input, nd, "avg_pool%dd" % nd)
    k = _ntuple(kernel_size, nd, "kernel_size")
    s = _ntuple(stride, nd, "stride") if stride is not None else k
    p = _ntuple(padding, nd, "padding")
    return apply_op(_op("avg", nd), [x], {"ksize": k, "strides": s, "pads": tuple((v, v) for v in p),
                                          "data_format": _FORMATS[nd], "ceil_mode": bool(ceil_mode),
                                          "count_include_pad": bool(count_include_pad),
                                          "divisor_override": int(divisor_override or 0)})


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, 0)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _adaptive(nd, input, output_size):  # noqa: A002
    x = _check(input, nd, "adaptive_avg_pool%dd" % nd)
    if output_size is None:
        raise AssertionError("'output_size' cannot be NoneType")
    size = (output_size,) * nd if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(size) == 1 and nd > 1:
        size = size * nd
    if len(size) != nd:
        raise AssertionError("the length of 'output_size' does not match the input size, %d expected" % nd)
    # None keeps the input's size along that axis (OneFlow's _generate_output_size)
    size = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(size))
    return apply_op("adaptive_avg_pool%dd" % nd, [x], {"output_size": size, "data_format": _FORMATS[nd]})


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    return _adaptive(1, input, output_size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    return _adaptive(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    return _adaptive(3, input, output_size)


# --- modules ----------------------------------------------------------------------------------------------------
class _MaxPoolNd(Module):
    nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        n = self.nd
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride") if stride is not None else self.kernel_size
        self.padding = _ntuple(padding, n, "padding")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x):
        return _max_pool(self.nd, x, self.kernel_size, self.stride, self.padding, self.dilation,
                         self.return_indices, self.ceil_mode)

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}, dilation={}".format(self.kernel_size, self.stride,
                                                                          self.padding, self.dilation)


class MaxPool1d(_MaxPoolNd):
    nd = 1

    def extra_repr(self):
        return "kernel_size={}, stride={}, padding={}".format(self.kernel_size, self.stride, self.padding)


class MaxPool2d(_MaxPoolNd):
    """OneFlow 0.9 reads ONEFLOW_ENABLE_NHWC when the module is made: "1" takes (batch, height, width, channels)
    inputs (`channel_pos` "channels_last"; pooling.py @ v0.9.0)."""
    nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__(kernel_size, stride, padding, dilation, return_indices, ceil_mode)
        self.channel_pos = "channels_last" if os.getenv("ONEFLOW_ENABLE_NHWC") == "1" else "channels_first"

    def forward(self, x):
        if self.channel_pos == "channels_first":
            return super().forward(x)
        x = _check(x, 2, "max_pool2d")
        if self.return_indices:
            raise ValueError("MaxPool2d: return_indices=True with ONEFLOW_ENABLE_NHWC=1 (channels_last) is not "
                             "supported; the indices are those of channels_first inputs")
        return apply_op("max_pool2d", [x], {"ksize": self.kernel_size, "strides": self.stride,
                                            "pads": tuple((v, v) for v in self.padding), "data_format": "NHWC",
                                            "ceil_mode": bool(self.ceil_mode), "dilations": self.dilation})


class MaxPool3d(_MaxPoolNd):
    nd = 3


class _AvgPoolNd(Module):
    nd = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=0):
        super().__init__()
        n = self.nd
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride") if stride is not None else self.kernel_size
        self.padding = _ntuple(padding, n, "padding")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = int(divisor_override or 0)

    def forward(self, x):
        return _avg_pool(self.nd, x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                         self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return "kernel_size={kernel_size}, stride={stride}, padding={padding}, ceil_mode={ceil_mode}".format(
            **self.__dict__)


class AvgPool1d(_AvgPoolNd):
    nd = 1

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    nd = 2


class AvgPool3d(_AvgPoolNd):
    nd = 3


class _AdaptiveAvgPoolNd(Module):
    nd = 2

    def __init__(self, output_size):
        super().__init__()
        if output_size is None:
            raise AssertionError("'output_size' cannot be NoneType")
        self.output_size = output_size

    def forward(self, x):
        return _adaptive(self.nd, x, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    nd = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    nd = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    nd = 3
