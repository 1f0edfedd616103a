"""`oneflow.python.nn.module` (v0.4.0 `oneflow/python/nn/module.py`): `Module`, the global API's nn.Module."""
from oneflow_compat._global.modules import Module  # noqa: F401
