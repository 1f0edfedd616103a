"""OneFlow 0.9's further activations for tensors (issue 21, the nnextra helper): the `flow.nn.functional` forms
`celu`, `selu`, `hardshrink`, `softshrink`, `softsign`, `glu`, `threshold`, `quick_gelu` and the `flow.nn` modules
`CELU`, `SELU`, `Hardshrink`, `Softshrink`, `Softsign`, `GLU`, `Threshold`, `QuickGELU`, each one op of the registry
(ops/nn_extra_ops.py) through `dispatch.apply_op`: eager, inside `nn.Graph`, local or global. GLU is composed (its
two halves, sigmoid, a product), as OneFlow's functional composes it.

Signatures, defaults and reprs are OneFlow v0.9.0's (python/oneflow/nn/modules/activation.py,
oneflow/core/functional/functional_api.yaml): `celu(x, alpha=1.0, inplace=False)`, `hardshrink(x, lambd=0.5,
inplace=False)`, `softshrink(x, alpha=0.5, inplace=False)` (the module's `lambd` is the functional's `alpha`),
`threshold(x, threshold, value)`, `glu(input, dim=-1)`. As OneFlow's SELU and Softsign modules accept `inplace`
and ignore it, so do these.
"""
from oneflow_compat._global import functional as F
from oneflow_compat._global import tensor_methods
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module
from oneflow_compat._global.nn_activations import _floating, _maybe_inplace


# --- functional forms -------------------------------------------------------------------------------------------
def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    """x for x > 0, alpha (exp(x / alpha) - 1) otherwise."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides the input)")
    return _maybe_inplace(input, apply_op("celu", [_floating(input, "celu")], {"alpha": float(alpha)}), inplace)


def selu(input):  # noqa: A002
    """scale (x for x > 0, alpha (exp(x) - 1) otherwise), alpha 1.6733, scale 1.0507."""
    return apply_op("selu", [_floating(input, "selu")])


class ShrinkThresholdError(RuntimeError, ValueError):
    """A negative shrink threshold: softshrink's is OneFlow 0.9's RuntimeError with its words
    (core/functional/impl/activation_functor.cpp SoftShrinkFunctor); a ValueError as this project raised before."""


def _check_lambd(what, lambd):
    if lambd < 0:
        if what == "softshrink":
            raise ShrinkThresholdError("alpha must be greater or equal to 0, but found to be %s. (softshrink: lambd "
                                       "must be non-negative, got %r)" % (lambd, lambd))
        raise ValueError("%s: lambd must be non-negative, got %r" % (what, lambd))


def hardshrink(input, lambd=0.5, inplace=False):  # noqa: A002
    """x where |x| > lambd, else 0."""
    _check_lambd("hardshrink", lambd)
    y = apply_op("hardshrink", [_floating(input, "hardshrink")], {"lambd": float(lambd)})
    return _maybe_inplace(input, y, inplace)


def softshrink(input, alpha=0.5, inplace=False):  # noqa: A002
    """x - alpha above alpha, x + alpha below -alpha, 0 between (OneFlow's functional calls torch's lambd alpha)."""
    _check_lambd("softshrink", alpha)
    y = apply_op("softshrink", [_floating(input, "softshrink")], {"alpha": float(alpha)})
    return _maybe_inplace(input, y, inplace)


def softsign(input):  # noqa: A002
    """x / (1 + |x|)."""
    return apply_op("softsign", [_floating(input, "softsign")])


def threshold(input, threshold, value):  # noqa: A002
    """x where x > threshold, else value."""
    return apply_op("threshold", [_floating(input, "threshold")],
                    {"threshold_val": float(threshold), "value": float(value)})


def quick_gelu(input):  # noqa: A002
    """x sigmoid(1.702 x), GELU's sigmoid approximation."""
    return apply_op("quick_gelu", [_floating(input, "quick_gelu")])


def glu(input, dim=-1):  # noqa: A002
    """a sigmoid(b), a and b the two halves of `input` along `dim` (whose size must be even)."""
    from oneflow_compat._global import tensor_functions as TF

    x = _floating(input, "glu")
    if x.ndim == 0:
        raise ValueError("glu does not support scalars because halving size must be even")
    n = x.ndim
    if not -n <= dim < n:
        raise IndexError("glu(): Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-n, n - 1, dim))
    d = dim % n
    size = x.shape[d]
    if size % 2:
        raise ValueError("Halving dimension must be even, but dimension %d is size %d" % (d, size))
    a = TF.narrow(x, d, 0, size // 2)
    b = TF.narrow(x, d, size // 2, size // 2)
    return F.mul(a, F.sigmoid(b))


# --- modules ----------------------------------------------------------------------------------------------------
class CELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return celu(x, self.alpha, self.inplace)

    def extra_repr(self):
        return "alpha=%s" % (self.alpha,) + (", inplace=True" if self.inplace else "")


class SELU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return selu(x)


class Hardshrink(Module):
    def __init__(self, lambd=0.5, inplace=False):
        super().__init__()
        self.inplace, self.lambd = inplace, lambd

    def forward(self, x):
        return hardshrink(x, self.lambd, self.inplace)

    def extra_repr(self):
        return "lambd=%s" % (self.lambd,) + (", inplace=True" if self.inplace else "")


class Softshrink(Module):
    def __init__(self, lambd=0.5, inplace=False):
        super().__init__()
        self.inplace, self.lambd = inplace, lambd

    def forward(self, x):
        return softshrink(x, self.lambd, self.inplace)

    def extra_repr(self):
        return "lambd=%s" % (self.lambd,) + (", inplace=True" if self.inplace else "")


class Softsign(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return softsign(x)


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return glu(input, self.dim)


class Threshold(Module):
    def __init__(self, threshold, value):
        super().__init__()
        self.threshold, self.value = threshold, value

    def forward(self, input):  # noqa: A002
        return threshold(input, self.threshold, self.value)


class QuickGELU(Module):
    def forward(self, x):
        return quick_gelu(x)


# Tensor.selu / Tensor.softsign (OneFlow 0.9's tensor_functions.cpp): installed from here, as this module imports
# tensor_methods (the other way round would be an import cycle)
tensor_methods._METHODS.update({"selu": selu, "softsign": softsign})
tensor_methods.install()
