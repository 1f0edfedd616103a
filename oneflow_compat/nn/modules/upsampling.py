"""`oneflow.nn.modules.upsampling`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/upsampling.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: F401
