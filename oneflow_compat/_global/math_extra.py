"""OneFlow 0.9's `flow.cumprod` and `flow.fmod` for tensors (also `Tensor.cumprod`, `Tensor.fmod`), each one op of
the registry (ops/nn_extra_ops.py) through `dispatch.apply_op`: eager, inside `nn.Graph`, local or global.

Signatures are OneFlow v0.9.0's (oneflow/core/functional/functional_api.yaml: `cumprod(input, dim, *, dtype=None)`,
`fmod(input, other)` with a tensor or a scalar `other`; python/oneflow/nn/modules/math_ops.py `fmod_op`).
"""
from oneflow_compat._global import functional as F
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import Tensor


def cumprod(input, dim, dtype=None):  # noqa: A002
    """Running products along `dim`: y_i = x_0 x_1 ... x_i (integer inputs give int64)."""
    x = F._check(input, "cumprod")
    if dtype is not None:
        x = F.cast(x, dtype)
    if x.ndim == 0:
        return x
    n = max(x.ndim, 1)
    if not -n <= dim < n:
        raise IndexError("cumprod(): Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-n, n - 1, dim))
    return apply_op("cumprod", [x], {"dim": dim % n})


def fmod(input, other):  # noqa: A002
    """The remainder of input / other with the sign of the dividend `input` (C's fmod; `remainder` differs)."""
    if not isinstance(input, Tensor):
        raise TypeError("fmod(): input must be a Tensor, got %s" % type(input).__name__)
    x, y = F._tensor_pair(input, other, "fmod")
    return apply_op("broadcast_fmod", [x, y])
