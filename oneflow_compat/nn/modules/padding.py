"""`oneflow.nn.modules.padding`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/padding.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import (  # noqa: F401
    ConstantPad1d, ConstantPad2d, ConstantPad3d, ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d,
    ZeroPad2d)
