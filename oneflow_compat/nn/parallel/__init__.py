"""`oneflow.nn.parallel`: `DistributedDataParallel` (OneFlow 0.9)."""
from oneflow_compat.nn.parallel.distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
