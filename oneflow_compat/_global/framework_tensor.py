"""`oneflow.framework.tensor` (OneFlow 0.9): the `Tensor` class and `register_tensor_op` (a decorator installing
a function as a Tensor method). The package top binds this module under that name (`oneflow_compat.framework`
is the runtime layer and cannot import the surface)."""
from oneflow_compat._global.tensor import Tensor, is_tensor  # noqa: F401


def register_tensor_op(op_name):
    def decorator(fn):
        setattr(Tensor, op_name, fn)
        return fn

    return decorator
