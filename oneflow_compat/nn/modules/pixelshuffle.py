"""`oneflow.nn.modules.pixelshuffle`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/pixelshuffle.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import PixelShufflev2  # noqa: F401
