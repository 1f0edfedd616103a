"""`oneflow.utils` (OneFlow 0.9): `utils.data` (datasets, samplers and the DataLoader), `utils.global_view`
(`to_global` / `to_local` of state dicts, `global_mode`), `utils.checkpoint` (activation checkpointing) and
`utils.tensor` (`from_torch` / `to_torch`)."""
from oneflow_compat.utils import checkpoint, data, global_view, tensor  # noqa: F401
