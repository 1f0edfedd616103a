"""`flow.logaddexp(input, other)`: log(e^x + e^y), computed as OneFlow v0.9.0's LogAddExpFunctor composes it
(oneflow/core/functional/impl/math_functor.cpp): max(x, y) + log(1 + exp(-|x - y|)), which neither overflows
nor underflows. A composition of registered ops, so broadcasting, SBP, autograd and nn.Graph come with them."""
from oneflow_compat._global import functional as F
from oneflow_compat._global.tensor import Tensor


def logaddexp(input, other, *, out=None):  # noqa: A002
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError("logaddexp(): argument '%s' must be Tensor, not %s" % (name, type(t).__name__))
    if input.numel() == 0 or other.numel() == 0:
        raise RuntimeError("logaddexp do not support 0-size tensor.")
    result = F.add(F.maximum(input, other), F.log1p(F.exp(F.neg(F.abs(F.sub(input, other))))))
    if out is not None:
        out.copy_(result)
        return out
    return result
