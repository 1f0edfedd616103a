"""`Tensor.gather` in both of OneFlow's argument orders: 0.9's `x.gather(dim, index)` and v0.4.0's
`x.gather(index, dim=0)` (oneflow/python/nn/modules/gather.py@v0.4.0 registers `gather_op(input, index, dim=0,
sparse_grad=False)` as the Tensor method). The orders cannot be confused: v0.4.0's first argument is the index
Tensor, 0.9's an int."""
from oneflow_compat._global import functional as F
from oneflow_compat._global.tensor import Tensor


def gather(self, *args, **kwargs):
    if args and isinstance(args[0], Tensor):  # v0.4.0: (index, dim=0, sparse_grad=False)
        index, rest = args[0], args[1:]
        dim = rest[0] if rest else kwargs.pop("dim", 0)
        if (rest[1] if len(rest) > 1 else kwargs.pop("sparse_grad", False)):
            raise AssertionError("Only support bool = False for now!")
        if kwargs:
            raise TypeError("gather() got unexpected keyword arguments %s" % sorted(kwargs))
        return F.gather(self, dim, index)
    return F.gather(self, *args, **kwargs)
