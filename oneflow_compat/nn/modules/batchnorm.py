"""`oneflow.nn.modules.batchnorm`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/batchnorm.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`;
SyncBatchNorm in `_global/nn_sync_batchnorm.py`)."""
from oneflow_compat.nn import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm  # noqa: F401
from oneflow_compat._global.nn_norms import _BatchNorm  # noqa: F401 (convert_sync_batchnorm's isinstance test)
