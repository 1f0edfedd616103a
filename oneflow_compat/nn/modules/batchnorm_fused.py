"""`oneflow.nn.modules.batchnorm_fused`: the classes OneFlow 0.9 defines in
`python/oneflow/nn/modules/batchnorm_fused.py`, the very objects `oneflow.nn` binds (in `_global/nn_norms_extra.py`)."""
from oneflow_compat._global.nn_norms_extra import FusedBatchNorm1d, FusedBatchNorm2d, FusedBatchNorm3d  # noqa: F401
