"""`flow.mm` (and `Tensor.mm`) as OneFlow 0.9 has it: two matrices only, checked with its words
(core/functional/impl/nn_functor.cpp MatMulNoBroadCastFunctor), then the matmul."""
from oneflow_compat._global import functional as F


def mm(input, mat2):  # noqa: A002
    a, b = F._check(input, "mm"), F._check(mat2, "mm")
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                           % (a.shape[0], a.shape[1], b.shape[0], b.shape[1]))
    return F.matmul(a, b)
