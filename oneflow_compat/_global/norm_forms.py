"""OneFlow 0.9's `flow.norm` / `Tensor.norm` on top of the linalg norms (`products_extra.vector_norm`,
`matrix_norm`, `norm`, the api-shape team's): one implementation of the norms, two entry points.

What OneFlow 0.9 computes (python/oneflow/nn/modules/norm.py and framework/tensor.py `_norm` call
`_C.norm(..., for_norm=True)` when p is not a string and dim is None; oneflow/core/functional/impl/math_functor.cpp
NormFunctor / Norm2Functor / ScalarNormFunctor):

* p a string ('fro', 'nuc') -> the matrix norm over `dim` (every dim when None): 'fro' = sqrt(sum x^2) over those
  dims, 'nuc' refused as OneFlow refuses it;
* dim given -> one dim: the vector norm (p None -> 2); two dims: the matrix norm (p None -> 'fro');
* dim None, p None -> the 2-norm of every entry;
* dim None, p a number -> the input must be 1-D or 2-D; an *integer* p with |p| >= 2 is sum(|x|^p)^(1/p) over every
  entry (so flow.norm(matrix, 2) is the entrywise 2-norm), otherwise a 1-D input takes the vector norm (any p: inf,
  -inf, 0, fractional) and a 2-D input the matrix norm (inf, -inf, 1, -1; others refused as OneFlow refuses them).
"""
import numbers

from oneflow_compat._global import functional as F
from oneflow_compat._global import products_extra as linalg


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002
    if isinstance(p, str) or dim is not None:
        return linalg.norm(input, p, dim, keepdim, dtype)
    linalg._floating_check(input, dtype, "linalg.norm()")
    if p is not None:
        if input.ndim > 2:
            raise RuntimeError("linalg.norm(): input must be 1-D or 2-D when dim is None and ord is not None")
        if isinstance(p, numbers.Integral) and not isinstance(p, bool) and abs(p) >= 2:
            x = input if dtype is None else F.cast(input, dtype)
            return F.pow(F.sum(F.pow(F.abs(x), float(p)), list(range(x.ndim))), 1.0 / p)
    return linalg.norm(input, p, None, keepdim, dtype)
