"""OneFlow 0.9's `nn.FusedMLP` and its functionals `_C.fused_mlp` / `_C.fused_matmul_bias_add_relu_dropout`
(api-misc2).

Facts from v0.9.0: python/oneflow/nn/modules/fused_mlp.py (parameters `weight_i` / `bias_i`, Linear's initialisation
per layer, `skip_final_activation`, `hidden_dropout_rate` / `out_dropout_rate`, the extra_repr) and
oneflow/core/functional/impl/nn_functor.cpp (FusedMLPFunctor, FusedMatmulBiasAddReluDropoutFunctor: the checks and
their messages, and the non-CUDA path — per layer matmul(x, wᵀ) + bias, relu unless it is the last layer and
`skip_final_activation`, then dropout at that layer's rate). The fused CUDA kernel computes the same numbers; here
each layer is the registered matmul / add / relu / dropout ops, so local and global tensors, autograd and nn.Graph
come with them.
"""
import math

from oneflow_compat._global import creation, nn_init
from oneflow_compat._global import functional as F
from oneflow_compat._global.dropout import dropout
from oneflow_compat._global.modules import Module, Parameter
from oneflow_compat._global.nn_functional import relu


def _check_layers(what, x, weights, biases, dropout_rate_list=None):
    weights, biases = list(weights), list(biases)
    if len(weights) < 1:
        raise RuntimeError("%s: The number of weights should be greater equal than 1. " % what)
    if len(weights) != len(biases):
        raise RuntimeError("%s: The number of weights should be equal to biases. " % what)
    if dropout_rate_list is not None and len(dropout_rate_list) != len(weights):
        raise RuntimeError("%s: The dropout rate list length should be equal to the number of weights. " % what)
    if x.dim() != 2:
        raise RuntimeError("%s: x should be a 2-D tensor (batch, features), got shape %s" % (what, tuple(x.shape)))
    k = x.shape[1]
    for i, (w, b) in enumerate(zip(weights, biases)):
        if dropout_rate_list is not None and dropout_rate_list[i] < 0.0:
            raise RuntimeError("%s: Dropout rate should be >= 0.0" % what)
        if w.dim() != 2:
            raise RuntimeError("%s: Weight's dim size should == 2" % what)
        if b.dim() != 1:
            raise RuntimeError("%s: Bias's dim size should == 1" % what)
        n = w.shape[0]
        # (OneFlow 0.9 words these two checks differently in fused_mlp and in the dropout variant:
        # core/functional/impl/nn_functor.cpp FusedMLPFunctor / FusedMatmulBiasAddReluDropoutFunctor)
        mlp = what == "fused_mlp"
        if b.shape[0] != n:
            raise RuntimeError("%s: Bias's dim is not equal to weight's %s dim. " % (what, "first" if mlp else "last"))
        if w.shape[1] != k:
            raise RuntimeError("%s: weight's %s dim should be equal to input's %s dim. "
                               % (what, "second" if mlp else "first", "second" if mlp else "last"))
        k = n
    return weights, biases


def _layers(x, weights, biases, skip_final_activation, rates, generator=None):
    out = x
    last = len(weights) - 1
    for i, (w, b) in enumerate(zip(weights, biases)):
        out = F.linear(out, w, b)
        if i != last or not skip_final_activation:
            out = relu(out)
        if rates is not None:
            out = dropout(out, float(rates[i]), training=True, generator=generator)
    return out


def fused_mlp(x, weights, biases, skip_final_activation):
    """relu(... relu(x wᵀ₀ + b₀) ... wᵀₙ + bₙ), the last relu left out when `skip_final_activation`."""
    weights, biases = _check_layers("fused_mlp", x, weights, biases)
    return _layers(x, weights, biases, bool(skip_final_activation), None)


def fused_matmul_bias_add_relu_dropout(x, weights, biases, skip_final_activation, dropout_rate_list,
                                       generator=None):
    """fused_mlp with dropout after each layer (after its relu), at that layer's rate (always training)."""
    weights, biases = _check_layers("fused_matmul_bias_add_relu_dropout", x, weights, biases,
                                    list(dropout_rate_list))
    return _layers(x, weights, biases, bool(skip_final_activation), list(dropout_rate_list), generator)


class FusedMLP(Module):
    def __init__(self, in_features, hidden_features, out_features, hidden_dropout_rate=None, out_dropout_rate=0.0,
                 skip_final_activation=False):
        super().__init__()
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.out_features = out_features
        self.skip_final_activation = skip_final_activation
        self.hidden_layer_num = len(hidden_features)
        rates = list(hidden_dropout_rate) if hidden_dropout_rate else [0.0] * self.hidden_layer_num
        if len(rates) != self.hidden_layer_num:
            raise ValueError("FusedMLP: hidden_dropout_rate needs one rate per hidden layer (%d), got %r"
                             % (self.hidden_layer_num, hidden_dropout_rate))
        self.dropout_rate_list = rates + [out_dropout_rate]
        self.add_parameters()
        self.reset_parameters()
        self.use_dropout = any(r != 0.0 for r in self.dropout_rate_list)

    def add_parameters(self):
        """weight_i (out_i, in_i) and bias_i (out_i) for each layer: hidden ones, then the output layer."""
        sizes = [self.in_features] + list(self.hidden_features) + [self.out_features]
        for i in range(self.hidden_layer_num + 1):
            self.register_parameter("weight_%d" % i, Parameter(creation.empty(sizes[i + 1], sizes[i])))
            self.register_parameter("bias_%d" % i, Parameter(creation.empty(sizes[i + 1])))

    def weight(self, i):
        return getattr(self, "weight_%d" % i)

    def weights(self):
        return [self.weight(i) for i in range(self.hidden_layer_num + 1)]

    def bias(self, i):
        return getattr(self, "bias_%d" % i)

    def biases(self):
        return [self.bias(i) for i in range(self.hidden_layer_num + 1)]

    def reset_parameters(self):
        """nn.Linear's initialisation, layer by layer: kaiming_uniform_(a=√5) weights, U(±1/√fan_in) biases."""
        for i in range(self.hidden_layer_num + 1):
            nn_init.kaiming_uniform_(self.weight(i), a=math.sqrt(5))
            fan_in, _ = nn_init._calculate_fan_in_and_fan_out(self.weight(i))
            bound = 1 / math.sqrt(fan_in)
            nn_init.uniform_(self.bias(i), -bound, bound)

    def forward(self, x):
        if not self.training or not self.use_dropout:
            return fused_mlp(x, self.weights(), self.biases(), self.skip_final_activation)
        return fused_matmul_bias_add_relu_dropout(x, self.weights(), self.biases(), self.skip_final_activation,
                                                  self.dropout_rate_list)

    def extra_repr(self):
        return "in_features={}, hidden_features={}, out_features={}, skip_final_activation={}".format(
            self.in_features, self.hidden_features, self.out_features, self.skip_final_activation)
