"""`oneflow.utils` (OneFlow 0.9): `utils.data` (datasets, samplers and the DataLoader) and `utils.global_view`
(`to_global` / `to_local` of state dicts)."""
from oneflow_compat.utils import data, global_view  # noqa: F401
