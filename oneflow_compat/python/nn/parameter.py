"""`oneflow.python.nn.parameter` (v0.4.0 `oneflow/python/nn/parameter.py`): `Parameter`, the global API's."""
from oneflow_compat.nn import Parameter  # noqa: F401
