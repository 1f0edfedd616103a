"""`oneflow.backends` (OneFlow 0.9): `backends.cudnn`'s setters."""
from oneflow_compat.backends import cudnn  # noqa: F401
