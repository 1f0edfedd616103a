"""OneFlow 0.9's activations for tensors: the `flow.nn.functional` forms (`relu6`, `elu`, `hardsigmoid`,
`hardswish`, `hardtanh`, `mish`, `silu`, `softplus`, `logsigmoid`, `gelu`, `prelu`) and the `flow.nn` modules
(`ReLU6`, `ELU`, `Hardsigmoid`, `Hardswish`, `Hardtanh`, `Mish`, `SiLU`, `Softplus`, `LogSigmoid`, `GELU`,
`Sigmoid`, `Tanh`, `LeakyReLU`, `Softmax`, `LogSoftmax`, `PReLU`), each one op of the registry (the declarations the
legacy `flow.nn.*` functions use) through `dispatch.apply_op`: eager, inside `nn.Graph`, local or global.

Signatures, defaults and reprs are OneFlow 0.9's (python/oneflow/nn/modules/activation.py). `inplace=True` writes
the result into the input tensor (its storage when nothing records gradients, as the tensor's other in-place
methods do).
"""
import warnings

from oneflow_compat._global import functional as F
from oneflow_compat._global.inplace import rebind as _rebind  # tensor_methods' _rebind, without importing it
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module, Parameter


def _floating(x, what):
    F._check(x, what)
    return F._floating(x)


def _maybe_inplace(x, result, inplace):
    return _rebind(x, result) if inplace else result


# --- functional forms -------------------------------------------------------------------------------------------
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    if not min_val < max_val:
        raise ValueError("hardtanh: max_val (%r) should be larger than min_val (%r)" % (max_val, min_val))
    y = apply_op("hardtanh", [_floating(input, "hardtanh")], {"min_val": float(min_val), "max_val": float(max_val)})
    return _maybe_inplace(input, y, inplace)


def relu6(input, inplace=False):  # noqa: A002
    return hardtanh(input, 0.0, 6.0, inplace)


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    return _maybe_inplace(input, apply_op("elu", [_floating(input, "elu")], {"alpha": float(alpha)}), inplace)


def hardsigmoid(input, inplace=False):  # noqa: A002
    return _maybe_inplace(input, apply_op("hardsigmoid", [_floating(input, "hardsigmoid")]), inplace)


def hardswish(input, inplace=False):  # noqa: A002
    return _maybe_inplace(input, apply_op("hardswish", [_floating(input, "hardswish")]), inplace)


def silu(input, inplace=False):  # noqa: A002
    return _maybe_inplace(input, apply_op("silu", [_floating(input, "silu")]), inplace)


def mish(input, inplace=False):  # noqa: A002
    return _maybe_inplace(input, apply_op("mish", [_floating(input, "mish")]), inplace)


def softplus(input, beta=1, threshold=20):  # noqa: A002
    return apply_op("softplus", [_floating(input, "softplus")], {"beta": float(beta), "threshold": float(threshold)})


def logsigmoid(input):  # noqa: A002
    return apply_op("log_sigmoid", [_floating(input, "logsigmoid")])


def gelu(input, approximate="none"):  # noqa: A002
    """Exact GELU (x Φ(x)), or its tanh approximation with approximate="tanh"."""
    x = _floating(input, "gelu")
    if approximate == "none":
        return apply_op("gelu", [x])
    if approximate == "tanh":
        return apply_op("fast_gelu", [x])
    raise NotImplementedError("gelu: approximate must be 'none' or 'tanh', got %r" % (approximate,))


def prelu(input, weight):  # noqa: A002
    """x for x > 0, weight · x otherwise; `weight` holds one value, or one per channel (axis 1)."""
    x = _floating(input, "prelu")
    n = weight.numel()
    if n != 1 and (x.ndim < 2 or n != x.shape[1]):
        # OneFlow 0.9's words first (core/functional/impl/activation_functor.cpp PReluFunctor)
        raise RuntimeError("num_parameters in prelu must be 1 or %s (prelu: weight of %d values does not fit an "
                           "input of shape %s)" % (x.shape[1] if x.ndim >= 2 else 1, n, tuple(x.shape)))
    # the prelu op's alpha has the input's axes after the first: per channel (C, 1, ...), or all 1
    alpha_shape = (n,) + (1,) * (x.ndim - 2) if n != 1 else (1,) * max(x.ndim - 1, 1)
    if x.ndim == 1:
        return F.reshape(apply_op("prelu", [F.unsqueeze(x, 0), F.reshape(weight, (1,))]), tuple(x.shape))
    return apply_op("prelu", [x, F.reshape(weight, alpha_shape)])


# --- modules ----------------------------------------------------------------------------------------------------
def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class ReLU6(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        if self.inplace:
            warnings.warn("ReLU6 module do not support inplace now")
        return relu6(x)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Tanh(Module):
    def forward(self, input):  # noqa: A002
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        if self.inplace:
            warnings.warn("ELU module do not support inplace now")
        return elu(x, self.alpha)

    def extra_repr(self):
        return "alpha=%s" % (self.alpha,) + (", inplace=True" if self.inplace else "")


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):  # noqa: A002
        return gelu(input, self.approximate)


class Hardsigmoid(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return hardsigmoid(x, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Hardswish(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        if self.inplace:
            warnings.warn("Hardswish module do not support inplace now")
        return hardswish(x)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Hardtanh(Module):
    def __init__(self, min_val=-1, max_val=1, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument min_value is deprecated and rename to min_val")
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument max_value is deprecated and rename to max_val")
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        if self.inplace:
            warnings.warn("Hardtanh module do not support inplace now")
        return hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self):
        return "min_val=%s, max_val=%s" % (self.min_val, self.max_val) + (", inplace=True" if self.inplace else "")


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        return _maybe_inplace(x, F.leaky_relu(x, self.negative_slope), self.inplace)

    def extra_repr(self):
        return "negative_slope=%s" % (self.negative_slope,) + (", inplace=True" if self.inplace else "")


class Mish(Module):
    def __init__(self, inplace=False):
        self.inplace = inplace
        super().__init__()

    def forward(self, x):
        return mish(x)


class SiLU(Module):
    def __init__(self, inplace=False):
        self.inplace = inplace
        super().__init__()

    def forward(self, x):
        return silu(x)


class Softplus(Module):
    def __init__(self, beta=1, threshold=20):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return "beta=%s, threshold=%s" % (self.beta, self.threshold)


class LogSigmoid(Module):
    def forward(self, x):
        return logsigmoid(x)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmax(x, self.dim)

    def extra_repr(self):
        return "dim=%s" % (self.dim,)


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(x, self.dim)

    def extra_repr(self):
        return "dim=%s" % (self.dim,)


class PReLU(Module):
    """One slope (num_parameters=1) or one per channel, initialized to `init` (0.25)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        from oneflow_compat._global import creation

        self.num_parameters = num_parameters
        self.weight = Parameter(creation.empty(num_parameters, dtype=dtype, device=device).fill_(init))

    def forward(self, x):
        return prelu(x, self.weight)

    def extra_repr(self):
        return "num_parameters=%s" % (self.num_parameters,)
