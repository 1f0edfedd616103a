"""`oneflow.utils` (OneFlow 0.9): `utils.data`, datasets, samplers and the DataLoader."""
from oneflow_compat.utils import data  # noqa: F401
