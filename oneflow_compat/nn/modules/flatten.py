"""`oneflow.nn.modules.flatten`: `Flatten` (implemented in `_global/modules.py`)."""
from oneflow_compat._global.modules import Flatten  # noqa: F401
