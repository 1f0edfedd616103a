"""`flow.system`: OneFlow's system-level assign (`flow.system.assign(ref, value)` writes a variable and returns it;
OneFlow v0.3.4 `oneflow/python/ops/assign_op.py`)."""
from oneflow_compat._api.legacy_array_api import system_assign as assign  # noqa: F401
