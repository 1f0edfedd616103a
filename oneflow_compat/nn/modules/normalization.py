"""`oneflow.nn.modules.normalization`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/normalization.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`).
Not provided (absent from `oneflow.nn` too): RMSLayerNorm, RMSNorm."""
from oneflow_compat.nn import GroupNorm, LayerNorm  # noqa: F401
