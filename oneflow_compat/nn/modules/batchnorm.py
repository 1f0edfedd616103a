"""`oneflow.nn.modules.batchnorm`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/batchnorm.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`).
Not provided (absent from `oneflow.nn` too): SyncBatchNorm."""
from oneflow_compat.nn import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401
