"""`oneflow.nn.modules.module`: `Module` (implemented in `_global/modules.py`)."""
from oneflow_compat._global.modules import Module, Parameter  # noqa: F401
