"""OneFlow 0.9's convolutions for tensors: `flow.nn.Conv1d/2d/3d`, `ConvTranspose1d/2d/3d` and the functional
`conv1d/2d/3d`, `conv_transpose1d/2d/3d`, on the registry's `conv1d` / `conv2d` / `conv3d` / `deconv*d` ops (the
declarations the legacy `flow.nn.conv*` functions use) plus `bias_add`: eager, inside `nn.Graph`, local or global
(a batch split keeps the weight broadcast; the weight split by filters splits the output channels).

Signatures, defaults, initialization (kaiming uniform, a = √5; bias uniform in ±1/√fan_in) and reprs follow OneFlow
0.9 (python/oneflow/nn/modules/conv.py): `Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))`; its transposed
convolutions print no arguments. Padding: ints, or "same" / "valid" (stride 1), zeros only (`padding_mode`).
"""
import math

from oneflow_compat._global import functional as F
from oneflow_compat._global import nn_init
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module, Parameter

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


def _padding(padding, kernel_size, dilation, stride, n):
    """Symmetric pads per spatial axis from an int / tuple, or "same" (OneFlow 0.9's get_padding: the total
    d (k - 1) split with the smaller half before: an even total only, odd kernels) / "valid"."""
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError("Invalid padding string %r, should be one of {'same', 'valid'}" % (padding,))
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        if padding == "valid":
            return (0,) * n
        return tuple(d * (k - 1) // 2 for k, d in zip(kernel_size, dilation))
    return _ntuple(padding, n, "padding")


def _same_pads(padding, kernel_size, dilation):
    """Explicit (before, after) pairs; "same" with an odd total d (k - 1) puts the extra cell after (PyTorch)."""
    if padding == "same":
        return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(kernel_size, dilation))
    return None


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):  # noqa: A002
    x = F._check(input, "conv%dd" % nd)
    if x.ndim != nd + 2:
        raise ValueError("conv%dd: expected a %d-D input (batch, channels, %d spatial), got shape %s"
                         % (nd, nd + 2, nd, tuple(x.shape)))
    ks = tuple(weight.shape[2:])
    stride, dilation = _ntuple(stride, nd, "stride"), _ntuple(dilation, nd, "dilation")
    pads = _same_pads(padding, ks, dilation) if isinstance(padding, str) else None
    if pads is None:
        pads = tuple((p, p) for p in _padding(padding, ks, dilation, stride, nd))
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError("conv%dd: expected input with %d channels (weight %s, groups=%d), got shape %s"
                           % (nd, weight.shape[1] * groups, tuple(weight.shape), groups, tuple(x.shape)))
    op = "conv2d" if nd == 2 else "conv%dd" % nd
    y = apply_op(op, [x, weight], {"strides": stride, "pads": pads, "dilations": dilation, "groups": int(groups),
                                   "data_format": _FORMATS[nd]})
    return y if bias is None else apply_op("bias_add", [y, bias], {"axis": 1})


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups, dilation):  # noqa: A002
    x = F._check(input, "conv_transpose%dd" % nd)
    if x.ndim != nd + 2:
        raise ValueError("conv_transpose%dd: expected a %d-D input, got shape %s" % (nd, nd + 2, tuple(x.shape)))
    stride, dilation = _ntuple(stride, nd, "stride"), _ntuple(dilation, nd, "dilation")
    padding, output_padding = _ntuple(padding, nd, "padding"), _ntuple(output_padding, nd, "output_padding")
    ks = tuple(weight.shape[2:])
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError("conv_transpose%dd: expected input with %d channels (weight %s), got shape %s"
                           % (nd, weight.shape[0], tuple(weight.shape), tuple(x.shape)))
    for op_, s, d in zip(output_padding, stride, dilation):
        if op_ >= max(s, d):
            raise ValueError("output padding must be smaller than either stride or dilation, got output_padding=%s"
                             % (output_padding,))
    spatial = tuple((n - 1) * s - 2 * p + d * (k - 1) + op_ + 1 for n, s, p, d, k, op_ in
                    zip(x.shape[2:], stride, padding, dilation, ks, output_padding))
    out_shape = (x.shape[0], weight.shape[1] * groups) + spatial
    y = apply_op("deconv%dd" % nd, [x, weight], {"strides": stride, "pads": tuple((p, p) for p in padding),
                                                 "dilations": dilation, "groups": int(groups),
                                                 "data_format": _FORMATS[nd], "output_shape": out_shape})
    return y if bias is None else apply_op("bias_add", [y, bias], {"axis": 1})


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


# --- modules ----------------------------------------------------------------------------------------------------
def _init_weight_and_bias(module):
    nn_init.kaiming_uniform_(module.weight, a=math.sqrt(5))
    if module.bias is not None:
        fan_in, _ = nn_init._calculate_fan_in_and_fan_out(module.weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        nn_init.uniform_(module.bias, -bound, bound)


class _ConvNd(Module):
    nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        from oneflow_compat._global import creation

        n = self.nd
        if padding_mode != "zeros":
            raise AssertionError("padding_mode %r is not supported: OneFlow's Conv%dd supports 'zeros' only"
                                 % (padding_mode, n))
        if in_channels % groups:
            raise AssertionError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise AssertionError("out_channels must be divisible by groups")
        self.padding_mode = padding_mode
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride")
        self.dilation = _ntuple(dilation, n, "dilation")
        self._padding_arg = padding
        self.padding = _padding(padding, self.kernel_size, self.dilation, self.stride, n)
        self.groups, self.in_channels, self.out_channels = groups, in_channels, out_channels
        self.channel_pos = "channels_first"
        self.weight = Parameter(creation.empty(out_channels, in_channels // groups, *self.kernel_size, dtype=dtype,
                                               device=device))
        self.out_channel_groups = out_channels // groups
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _init_weight_and_bias(self)

    def forward(self, x):
        if x.ndim == self.nd + 2 and x.shape[1] != self.in_channels:
            raise ValueError("The input channels %d should be equal to self.in_channels %d."
                             % (x.shape[1], self.in_channels))
        padding = self._padding_arg if self._padding_arg == "same" else self.padding
        return _conv(self.nd, x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class Conv1d(_ConvNd):
    nd = 1


class Conv2d(_ConvNd):
    nd = 2


class Conv3d(_ConvNd):
    nd = 3


class _ConvTransposeNd(Module):
    nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        from oneflow_compat._global import creation

        n = self.nd
        if padding_mode != "zeros":
            raise AssertionError("Only `zeros` padding mode is supported for ConvTranspose%dd" % n)
        if in_channels % groups or out_channels % groups:
            raise AssertionError("in_channels and out_channels must be divisible by groups")
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride")
        self.padding = _ntuple(padding, n, "padding")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.output_padding = _ntuple(output_padding, n, "output_padding")
        self.groups, self.filters = groups, out_channels
        self.weight = Parameter(creation.empty(in_channels, out_channels // groups, *self.kernel_size, dtype=dtype,
                                               device=device))
        if bias:
            self.bias = Parameter(creation.empty(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _init_weight_and_bias(self)

    def forward(self, x):
        return _conv_transpose(self.nd, x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                               self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    nd = 1


class ConvTranspose2d(_ConvTransposeNd):
    nd = 2


class ConvTranspose3d(_ConvTransposeNd):
    nd = 3
