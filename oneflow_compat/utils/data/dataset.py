"""Datasets (OneFlow 0.9, `utils/data/dataset.py`): map-style `Dataset` (`__getitem__`, `__len__`),
`IterableDataset` (`__iter__`), `TensorDataset`, `ConcatDataset`, `Subset` and `random_split`."""
import bisect
import math
import warnings

from oneflow_compat._global import creation
from oneflow_compat._global.tensor import Tensor


class Dataset:
    """A map from keys (usually 0..len-1) to samples."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples (`__iter__`). With worker processes each worker iterates its own copy: use
    `get_worker_info()` in `__iter__` to split the work."""

    def __iter__(self):
        raise NotImplementedError

    def __add__(self, other):
        raise NotImplementedError("adding IterableDatasets is not supported")


class TensorDataset(Dataset):
    """Sample i = (t[i] for t in tensors); the tensors share their first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        if any(not isinstance(t, Tensor) for t in tensors):
            raise TypeError("TensorDataset: every argument must be a flow.Tensor")
        n = tensors[0].shape[0] if tensors[0].ndim else None
        if any(t.ndim == 0 or t.shape[0] != n for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset):
    """Datasets one after the other."""

    @staticmethod
    def cumsum(sequence):
        out, s = [], 0
        for e in sequence:
            s += len(e)
            out.append(s)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if d == 0 else idx - self.cumulative_sizes[d - 1]
        return self.datasets[d][sample_idx]


class Subset(Dataset):
    """The samples of `dataset` at `indices`."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Non-overlapping random subsets of the given lengths (or fractions summing to 1), drawn by a permutation
    from `generator` (default: the default generator)."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn("Length of split at index %d is 0. This might result in an empty dataset." % i)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = creation.randperm(n, generator=generator).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset:offset + length]))
        offset += length
    return out
