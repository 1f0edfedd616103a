"""`oneflow.nn.modules.dropout`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/dropout.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import Dropout, Dropout1d, Dropout2d, Dropout3d  # noqa: F401
