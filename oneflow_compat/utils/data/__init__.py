"""`oneflow.utils.data` (OneFlow 0.9): datasets, samplers, `DataLoader` (worker processes included) and
`DistributedSampler`, with OneFlow's signatures and errors."""
from oneflow_compat.utils.data.collate import default_collate, default_convert  # noqa: F401
from oneflow_compat.utils.data.dataloader import DataLoader, _DatasetKind, get_worker_info  # noqa: F401
from oneflow_compat.utils.data.dataset import (  # noqa: F401
    ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split)
from oneflow_compat.utils.data.dataset import IterableDataset as IterDataPipe  # noqa: F401
from oneflow_compat.utils.data.distributed import DistributedSampler  # noqa: F401
from oneflow_compat.utils.data.sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
           "random_split", "DataLoader", "_DatasetKind", "IterDataPipe", "DistributedSampler", "get_worker_info",
           "default_collate", "default_convert"]
