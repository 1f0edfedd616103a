"""`flow.util`: `unique_str(prefix)`, a process-unique name (OneFlow v0.3.4 `framework/id_util.py`)."""
from oneflow_compat._api.legacy_misc import unique_str  # noqa: F401
