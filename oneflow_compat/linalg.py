"""`flow.linalg`: `matmul`, the same function as `flow.matmul` (OneFlow v0.3.4 `ops/linalg.py` exports both)."""
from oneflow_compat._api.ops_api import matmul  # noqa: F401
