"""OneFlow 0.9's `median` (both forms) and `nansum`, and `hann_window`, composed of registered ops (sort = top_k +
batch_gather, where, reduce_sum, cos), so they run eagerly, inside nn.Graph and on global tensors, with autograd
through the ops' rules.

Facts from OneFlow v0.9.0: `functional_api.yaml` (`median(input)` and `median(input, dim=-1, keepdim=False)`
returning (values, indices); `reduce_nansum(input, dim, keepdim=False, *, dtype=None)` bound as `nansum`;
`hann_window(window_length, periodic=True, *, device=None | placement, sbp, dtype=None, requires_grad=False)`)
and `oneflow/core/functional/impl/math_functor.cpp` / `array_functor.cpp` (the median of an empty tensor is a
NaN scalar; a reduced dim of size 0 raises "IndexError: Expected reduction dim D to have non-zero size."; the
median is the lower one, the element at (n - 1) // 2 in sorted order; hann_window refuses non-floating dtypes
with "hann_window expects floating point dtypes, got: DTYPE" and is [1.] for a window of length 1).
"""
import collections
import math

import numpy as np

from oneflow_compat._global import creation, default_dtype, functional as F
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.tensor import as_dtype

_Median = collections.namedtuple("median", ["values", "indices"])


def median(input, dim=None, keepdim=False):  # noqa: A002
    """`median(input)`: the lower median of all elements (a 0-d tensor); `median(input, dim=-1,
    keepdim=False)`: the lower median along `dim` and its index, a (values, indices) named tuple."""
    x = F._check(input, "median")
    if dim is None:
        if x.numel() == 0:
            return F._const(float("nan"), x, x.dtype if x.dtype.is_floating else _float32())
        flat = F.reshape(x, (-1,))
        values, _ = TF.sort(flat, 0)
        k = (flat.shape[0] - 1) // 2
        return F.reshape(TF._slice_along(values, 0, k, k + 1), ())
    d = TF._dim(dim, x.ndim, "median")
    if x.ndim == 0:
        return _Median(x, F.zeros_like(x, dtype=_int64()))
    n = x.shape[d]
    if n == 0:
        raise IndexError("IndexError: Expected reduction dim %d to have non-zero size." % d)
    values, indices = TF.sort(x, d)
    k = (n - 1) // 2
    values, indices = TF._slice_along(values, d, k, k + 1), TF._slice_along(indices, d, k, k + 1)
    if not keepdim:
        values, indices = F.squeeze(values, d), F.squeeze(indices, d)
    # median_with_indices gives int64 indices (sort's are int32)
    return _Median(values, F.cast(indices, _int64()))


def _int64():
    from oneflow_compat.ir import dtypes

    return dtypes.int64


def _float32():
    from oneflow_compat.ir import dtypes

    return dtypes.float32


def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The sum treating NaNs as zero (over all elements, or over `dim`: an int or a list)."""
    x = F._check(input, "nansum")
    if dtype is not None:
        x = F.cast(x, dtype)
    if x.dtype.is_floating:
        x = F.where(TF.isnan(x), 0.0, x)
    return F.sum(x, dim, keepdim)


def hann_window(window_length, periodic=True, *, device=None, placement=None, sbp=None, dtype=None,
                requires_grad=False):
    """The Hann window 0.5 - 0.5 cos(2 pi n / N), n < window_length, N = window_length when `periodic` (the
    window of a DFT) else window_length - 1 (symmetric)."""
    dt = as_dtype(dtype)
    if dt is not None and not dt.is_floating:
        raise RuntimeError("hann_window expects floating point dtypes, got: oneflow.%s" % dt.name)
    dt = dt or default_dtype.get_default_dtype()
    n = int(window_length)
    if n < 0:
        raise RuntimeError("hann_window(): window_length must be non-negative, got %d" % n)
    if n == 1:
        values = np.ones(1, np.float64)
    else:
        denom = n if periodic else n - 1
        values = (1.0 - np.cos(2.0 * math.pi * np.arange(n, dtype=np.float64) / max(denom, 1))) / 2.0
    return creation.tensor(values.astype(dt.np), dtype=dt, device=device, placement=placement, sbp=sbp,
                           requires_grad=requires_grad)
