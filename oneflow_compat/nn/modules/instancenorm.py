"""`oneflow.nn.modules.instancenorm`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/instancenorm.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401
