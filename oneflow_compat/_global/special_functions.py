"""flow.digamma(input) and flow.polygamma(n, input), with Tensor.digamma() / Tensor.polygamma(n).

Not in OneFlow 0.9 (its lgamma gradient is a TODO asking for digamma: math_unary_elementwise_func.h at v0.9.0);
named and ordered as torch's (`torch.polygamma(n, input)`), the ops of ops/polygamma_ops.py: floating inputs (an
integer input becomes float32, as lgamma's), differentiable to every order.
"""
from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op


def digamma(input):  # noqa: A002
    """ψ(input) = d/dx lgamma(x); NaN at 0, -1, -2, …"""
    return apply_op("digamma", [F._floating(input)])


def polygamma(n, input):  # noqa: A002
    """ψ^(n)(input), the n-th derivative of digamma (n >= 0); at 0, -1, -2, …: +inf for odd n, NaN for even n."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError("polygamma(n, input): n must be a non-negative integer, got %r" % (n,))
    return apply_op("polygamma", [F._floating(input)], {"n": n})


def tensor_polygamma(self, n):
    return polygamma(n, self)
