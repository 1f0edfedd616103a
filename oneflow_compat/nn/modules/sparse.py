"""`oneflow.nn.modules.sparse`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/sparse.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import Embedding  # noqa: F401
