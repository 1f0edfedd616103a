"""The API of a `LazyBlob` that lives above the IR: operators (legacy blob_trait: `a + b` is `flow.math.add`),
`distribute` / `with_distribute` hints and eager `.numpy()`.

`install()` puts them on the class; the package top calls it once the surface is imported, so the IR never
imports the surface (the way JAX attaches array methods to its tracers from `jax.numpy`).
"""
from oneflow_compat import distribute as dist
from oneflow_compat import math as _math
from oneflow_compat._api import ops_api
from oneflow_compat.framework import eager
from oneflow_compat.ir.graph import LazyBlob

# method -> (flow.math function, whether the blob is the right operand)
_BINARY = {
    "__add__": ("add", False), "__radd__": ("add", True),
    "__sub__": ("subtract", False), "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False), "__rmul__": ("multiply", True),
    "__truediv__": ("divide", False), "__rtruediv__": ("divide", True),
    "__div__": ("divide", False), "__rdiv__": ("divide", True),
    "__mod__": ("mod", False), "__pow__": ("pow", False),
    "__eq__": ("equal", False), "__ne__": ("not_equal", False),
    "__lt__": ("less", False), "__le__": ("less_equal", False),
    "__gt__": ("greater", False), "__ge__": ("greater_equal", False),
}


def _binary(method, fn_name, reflected):
    if reflected:
        def op(self, other):
            return getattr(_math, fn_name)(other, self)
    else:
        def op(self, other):
            return getattr(_math, fn_name)(self, other)
    op.__name__ = op.__qualname__ = method
    return op


def _neg(self):
    return _math.negative(self)


def _matmul(self, other):
    return ops_api.matmul(self, other)


def _distribute(self):
    return dist.to_distribute(self.hint if self.hint is not None else self.op.out_hints.get(self.index))


def with_distribute(self, distribute):
    return LazyBlob(self.op, self.index, self.meta, hint=dist.to_sbp(distribute))


def with_split_distribute(self, axis):
    return self.with_distribute(dist.split(axis))


def with_broadcast_distribute(self):
    return self.with_distribute(dist.broadcast())


def numpy(self, *args):
    return eager.blob_numpy(self, *args)


def install():
    for method, (fn_name, reflected) in _BINARY.items():
        setattr(LazyBlob, method, _binary(method, fn_name, reflected))
    LazyBlob.__neg__ = _neg
    LazyBlob.__matmul__ = _matmul
    LazyBlob.distribute = property(_distribute)
    LazyBlob.with_distribute = with_distribute
    LazyBlob.with_split_distribute = with_split_distribute
    LazyBlob.with_broadcast_distribute = with_broadcast_distribute
    LazyBlob.numpy = numpy
