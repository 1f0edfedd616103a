"""OneFlow 0.9's quantization-aware training for tensors: `nn.MinMaxObserver`, `nn.MovingAverageMinMaxObserver`,
`nn.FakeQuantization`, `nn.Quantization`, `nn.QatConv1d/2d/3d` and their functional forms
(`oneflow._C.min_max_observer`, `moving_average_min_max_observer`, `fake_quantization`, `quantization`).

Signatures, defaults and formulas: python/oneflow/nn/modules/{min_max_observer, moving_average_min_max_observer,
fake_quantization, quantization}.py, python/oneflow/nn/qat/conv.py and functional_api.yaml at v0.9.0; the numbers
are OneFlow 0.9's kernels (kernels/quantization.py, `quantization_formula` "google" / "cambricon"). The ops are the
registry's (ops/quantization_ops.py, shared with the legacy `flow.quantization`): local or global tensors, eager or
inside nn.Graph; fake quantization's gradient passes straight through.

OneFlow 0.9's moving_average_min_max_observer is one op that updates moving_max / moving_min and outputs the scale;
here, as for the legacy API, the in-place update and the scale are two ops run one after the other.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.runtime import autograd
from oneflow_compat._global import creation
from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module
from oneflow_compat._global.nn_convs import Conv1d, Conv2d, Conv3d, _conv

_FORMULAS = ("google", "cambricon")


def _formula(quantization_formula, what):
    if quantization_formula not in _FORMULAS:
        raise ValueError("%s: quantization_formula must be 'google' or 'cambricon', got %r"
                         % (what, quantization_formula))
    return quantization_formula


def _attrs(quantization_formula, quantization_bit, quantization_scheme, what):
    return {"quantization_bit": int(quantization_bit), "quantization_scheme": quantization_scheme,
            "quantization_formula": _formula(quantization_formula, what)}


def _tensor(x, what):
    return F._check(x, what)


# --- functional forms (oneflow._C, functional_api.yaml v0.9.0) -----------------------------------------------------
def min_max_observer(input, quantization_formula="google", quantization_bit=8,  # noqa: A002
                     quantization_scheme="symmetric", per_layer_quantization=True):
    """(scale, zero_point) of input: per layer, or per row of axis 0 (per channel; "google" only)."""
    x = _tensor(input, "min_max_observer")
    attrs = _attrs(quantization_formula, quantization_bit, quantization_scheme, "min_max_observer")
    attrs["per_layer_quantization"] = bool(per_layer_quantization)
    scale, zero_point = apply_op("min_max_observer", [x.detach()], attrs)
    return scale, zero_point


def moving_average_min_max_observer(input, current_train_step, moving_max, moving_min, training,  # noqa: A002
                                    stop_update_after_iters, quantization_formula="google", quantization_bit=8,
                                    quantization_scheme="symmetric", momentum=0.95):
    """Updates moving_max / moving_min in place from input (while `training` and current_train_step <=
    stop_update_after_iters; the first update takes the values as they are) and returns (scale, zero_point) from
    them. "cambricon" keeps symmetric moving extremes (the largest magnitude) and outputs the power-of-two shift."""
    what = "moving_average_min_max_observer"
    x = _tensor(input, what)
    for t, name in ((current_train_step, "current_train_step"), (moving_max, "moving_max"),
                    (moving_min, "moving_min")):
        if not hasattr(t, "dtype"):
            raise TypeError("%s(): %s must be a Tensor, got %s" % (what, name, type(t).__name__))
    if current_train_step.dtype is not dtypes.int64:
        raise TypeError("%s(): current_train_step must be an int64 tensor, got %s"
                        % (what, current_train_step.dtype))
    attrs = _attrs(quantization_formula, quantization_bit, quantization_scheme, what)
    update_scheme = "symmetric" if quantization_formula == "cambricon" else quantization_scheme
    with autograd.no_grad():
        apply_op(what, [x.detach(), current_train_step, moving_max, moving_min],
                 {"quantization_bit": attrs["quantization_bit"], "quantization_scheme": update_scheme,
                  "quantization_formula": attrs["quantization_formula"],
                  "stop_update_after_iters": int(stop_update_after_iters), "training": bool(training),
                  "momentum": float(momentum)})
        scale, zero_point = apply_op("moving_average_min_max_observer_scale", [moving_max, moving_min], attrs)
    return scale, zero_point


def fake_quantization(input, scale, zero_point, quantization_formula="google", quantization_bit=8,  # noqa: A002
                      quantization_scheme="symmetric"):
    """input quantized with (scale, zero_point) and mapped back to floats; the gradient passes straight through."""
    x = _tensor(input, "fake_quantization")
    return apply_op("fake_quantization", [x, scale, zero_point],
                    _attrs(quantization_formula, quantization_bit, quantization_scheme, "fake_quantization"))


def quantization(input, scale, zero_point, quantization_formula="google", quantization_bit=8,  # noqa: A002
                 quantization_scheme="symmetric"):
    """input's integer levels under (scale, zero_point), as floats (OneFlow registers no gradient)."""
    x = _tensor(input, "quantization")
    return apply_op("quantization", [x.detach(), scale, zero_point],
                    _attrs(quantization_formula, quantization_bit, quantization_scheme, "quantization"))


# --- modules -------------------------------------------------------------------------------------------------------
class MinMaxObserver(Module):
    def __init__(self, quantization_formula="google", quantization_bit=8, quantization_scheme="symmetric",
                 per_layer_quantization=True):
        super().__init__()
        self.quantization_formula = quantization_formula
        self.quantization_bit = quantization_bit
        self.quantization_scheme = quantization_scheme
        self.per_layer_quantization = per_layer_quantization

    def forward(self, input):  # noqa: A002
        return min_max_observer(input, self.quantization_formula, self.quantization_bit, self.quantization_scheme,
                                self.per_layer_quantization)


class MovingAverageMinMaxObserver(Module):
    def __init__(self, stop_update_after_iters=1, quantization_formula="google", quantization_bit=8,
                 quantization_scheme="symmetric", momentum=0.95):
        super().__init__()
        self.quantization_formula = quantization_formula
        self.stop_update_after_iters = stop_update_after_iters
        self.quantization_bit = quantization_bit
        self.quantization_scheme = quantization_scheme
        self.momentum = momentum
        self.register_buffer("moving_max", creation.zeros(1))
        self.register_buffer("moving_min", creation.zeros(1))
        self.reset_running_stats()

    def reset_running_stats(self):
        self.moving_max.fill_(0)
        self.moving_min.fill_(0)

    def forward(self, input, current_train_step):  # noqa: A002
        return moving_average_min_max_observer(
            input, current_train_step, self.moving_max, self.moving_min, self.training, self.stop_update_after_iters,
            self.quantization_formula, self.quantization_bit, self.quantization_scheme, self.momentum)


class FakeQuantization(Module):
    def __init__(self, quantization_formula="google", quantization_bit=8, quantization_scheme="symmetric"):
        super().__init__()
        self.quantization_formula = quantization_formula
        self.quantization_bit = quantization_bit
        self.quantization_scheme = quantization_scheme

    def forward(self, input, scale, zero_point):  # noqa: A002
        return fake_quantization(input, scale, zero_point, self.quantization_formula, self.quantization_bit,
                                 self.quantization_scheme)


class Quantization(FakeQuantization):
    def forward(self, input, scale, zero_point):  # noqa: A002
        return quantization(input, scale, zero_point, self.quantization_formula, self.quantization_bit,
                            self.quantization_scheme)


# --- QAT convolutions (python/oneflow/nn/qat/conv.py, v0.9.0) --------------------------------------------------------
def _init_fake_quants(module, quantization_formula, quantization_bit, quantization_scheme, weight_quant_per_layer,
                      input_quant_momentum):
    module.input_min_max_observer = MovingAverageMinMaxObserver(
        stop_update_after_iters=1, quantization_formula=quantization_formula, quantization_bit=quantization_bit,
        quantization_scheme=quantization_scheme, momentum=input_quant_momentum)
    # never advanced by the module (as OneFlow's): the input observer keeps updating while training
    module.register_buffer("current_train_step", creation.zeros(1, dtype=dtypes.int64))
    module.weight_min_max_observer = MinMaxObserver(
        quantization_formula=quantization_formula, quantization_bit=quantization_bit,
        quantization_scheme=quantization_scheme, per_layer_quantization=weight_quant_per_layer)
    module.fake_quantizer = FakeQuantization(quantization_formula=quantization_formula,
                                             quantization_bit=quantization_bit,
                                             quantization_scheme=quantization_scheme)


class _QatConv:
    """The convolution of fake-quantized input (moving-average observer) and fake-quantized weight (min-max
    observer), as OneFlow's get_conv_fake_quantized."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", quantization_formula="google", quantization_bit=8,
                 quantization_scheme="symmetric", weight_quant_per_layer=True, input_quant_momentum=0.95):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode)
        _init_fake_quants(self, quantization_formula, quantization_bit, quantization_scheme, weight_quant_per_layer,
                          input_quant_momentum)

    def _conv_forward(self, x, weight, bias):
        padding = self._padding_arg if self._padding_arg == "same" else self.padding
        return _conv(self.nd, x, weight, bias, self.stride, padding, self.dilation, self.groups)

    def forward(self, x):
        scale, zero_point = self.input_min_max_observer(x, self.current_train_step)
        x_q = self.fake_quantizer(x, scale, zero_point)
        w_scale, w_zero_point = self.weight_min_max_observer(self.weight)
        w_q = self.fake_quantizer(self.weight, w_scale, w_zero_point)
        return self._conv_forward(x_q, w_q, self.bias)


class QatConv1d(_QatConv, Conv1d):
    pass


class QatConv2d(_QatConv, Conv2d):
    pass


class QatConv3d(_QatConv, Conv3d):
    pass
