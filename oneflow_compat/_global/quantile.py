"""`flow.quantile(input, q, dim=None, keepdim=False, *, interpolation='linear', out=None)` as OneFlow 0.9
documents it (v0.9.0 python/oneflow/framework/docstr/quantile.py; signature functional_api.yaml `quantile`).

The q-th quantile of each row along `dim` (of the flattened input when dim is None): q in [0, 1] maps to the
position q·(n - 1) of the sorted row; between the neighbours a ≤ b at floor and ceil of that position the result
is, by `interpolation`: linear a + (b - a)·fraction, lower a, higher b, midpoint (a + b) / 2, nearest the one whose
index is closer (an exact .5 rounds half to even, as PyTorch, whose numbers OneFlow's docstring references). A 1-D
tensor q gives a leading output axis of its length. The result is float64, as OneFlow 0.9's QuantileFunctor
(math_functor.cpp) returns it (its float64 fraction weights promote the sorted values); this one also takes
OneFlow's documented forms its functor did not yet (any number of dims, any dim, every interpolation).

Composed of registered ops (sort, narrow, cast, arithmetic): differentiable (the gradient reaches the two
neighbours, weighted), and SBP and nn.Graph come with them. The positions are host numbers (q is read on the
host), as OneFlow's functor computes them.
"""
import math

import numpy as np

from oneflow_compat._global import functional as F
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.tensor import Tensor
from oneflow_compat.ir import dtypes

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _qs(q):
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        values = np.asarray(q.numpy(), dtype=np.float64).reshape(-1)
        return [float(v) for v in values], q.ndim == 1
    if isinstance(q, bool) or not isinstance(q, (int, float, np.integer, np.floating)):
        raise TypeError("quantile(): argument 'q' must be float or Tensor, not %s" % type(q).__name__)
    return [float(q)], False


def _one(sorted_x, d, n, q, interpolation, keepdim):
    rank = q * (n - 1)
    lo, hi = int(math.floor(rank)), int(math.ceil(rank))
    if interpolation == "nearest":
        lo = hi = int(np.round(rank))  # half to even, as torch.round

    def at(i):
        v = TF.narrow(sorted_x, d, i, 1)
        return v if keepdim else F.reshape(v, tuple(s for k, s in enumerate(v.shape) if k != d))

    a = at(lo)
    if interpolation in ("lower", "nearest") or lo == hi:
        return a if interpolation != "higher" else at(hi)
    b = at(hi)
    if interpolation == "higher":
        return b
    if interpolation == "midpoint":
        return F.mul(F.add(a, b), 0.5)
    return F.add(a, F.mul(F.sub(b, a), rank - lo))


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError("quantile(): argument 'input' must be Tensor, not %s" % type(input).__name__)
    if not input.dtype.is_floating:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           "Got %s" % interpolation)
    qs, q_is_vector = _qs(q)
    for v in qs:
        if not 0.0 <= v <= 1.0:
            raise RuntimeError("quantile() q must be in the range [0, 1] but got %s" % v)
    x = F.cast(input, dtypes.float64)
    if dim is None:
        x = F.reshape(x, (-1,)) if not keepdim else F.reshape(x, (1,) * max(input.ndim - 1, 0) + (-1,))
        d = x.ndim - 1
    else:
        ndim = max(x.ndim, 1)
        if not -ndim <= dim < ndim:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                             % (-ndim, ndim - 1, dim))
        if x.ndim == 0:
            x = F.reshape(x, (1,))
        d = dim % ndim
    n = x.shape[d]
    if n == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    sorted_x = TF.sort(x, d).values
    results = [_one(sorted_x, d, n, v, interpolation, keepdim) for v in qs]
    if dim is None:
        results = [F.reshape(r, (1,) * input.ndim if keepdim else ()) for r in results]
    if dim is not None and input.ndim == 0:
        results = [F.reshape(r, ()) for r in results]
    result = F.stack(results, 0) if q_is_vector else results[0]
    if out is not None:
        out.copy_(result)
        return out
    return result
