"""`oneflow.nn.modules.linear`: `Linear` and `Identity` (implemented in `_global/modules.py`)."""
from oneflow_compat._global.modules import Identity, Linear  # noqa: F401
