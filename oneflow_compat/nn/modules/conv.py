"""`oneflow.nn.modules.conv`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/conv.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
