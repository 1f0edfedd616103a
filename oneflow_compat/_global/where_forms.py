"""OneFlow 0.9's `oneflow.where` / `Tensor.where` (python/oneflow/nn/modules/where.py `where_op`): with a condition
alone, the indices of its non-zero entries, `nonzero(condition, as_tuple=True)`; with input and other, the
elementwise choice (`functional.where`, the `where` op)."""
from oneflow_compat._global import functional as F
from oneflow_compat._global import tensor_functions as TF


def where(condition, input=None, other=None):  # noqa: A002
    if input is None and other is None:
        return TF.nonzero(condition, as_tuple=True)
    return F.where(condition, input, other)
