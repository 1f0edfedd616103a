"""`oneflow.nn.modules.normalization`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/normalization.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import GroupNorm, LayerNorm  # noqa: F401
from oneflow_compat.nn import RMSLayerNorm, RMSNorm  # noqa: F401,E402 (api-nn)
