"""v0.4.0's Tensor methods where they differ from 0.9's, in forms that keep 0.9's working.

`Tensor.gather` in both of OneFlow's argument orders: 0.9's `x.gather(dim, index)` and v0.4.0's
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


def repeat(self, *sizes, **kwargs):
    """`x.repeat(2, 3)`, `x.repeat((2, 3))` and v0.4.0's keyword form `x.repeat(sizes=(2, 3))`
    (repeat.py@v0.4.0 registers `repeat_op(x, sizes)` as the Tensor method)."""
    from oneflow_compat._global import tensor_functions as TF
    if "sizes" in kwargs:
        if sizes:
            raise TypeError("repeat() got multiple values for argument 'sizes'")
        sizes = (kwargs.pop("sizes"),)
    if kwargs:
        raise TypeError("repeat() got unexpected keyword arguments %s" % sorted(kwargs))
    return TF.repeat(self, *sizes)


def zeros_(self):
    """v0.4.0's `Tensor.zeros_()` (framework/tensor.py@v0.4.0): fills the tensor with zeros in place; 0.9 spells
    it `zero_`."""
    return self.zero_()
