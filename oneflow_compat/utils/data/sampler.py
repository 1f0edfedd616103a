"""Samplers (OneFlow 0.9, `utils/data/sampler.py`): the order in which a DataLoader reads a map-style dataset."""
import numpy as np

from oneflow_compat._global import creation, generators
from oneflow_compat._global.tensor import Tensor


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _fresh_generator():
    g = generators.Generator("cpu")
    g.manual_seed(np.random.randint(0, np.iinfo(np.int64).max))
    return g


class RandomSampler(Sampler):
    """A permutation of the indices drawn from `generator` (a fresh, randomly seeded one when None), or with
    `replacement`, `num_samples` independent draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got replacement={}".format(self.replacement))
        if self._num_samples is not None and not replacement:
            raise ValueError("With replacement=False, num_samples should not be specified, since a random permute "
                             "will be performed.")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got num_samples={}"
                             .format(self.num_samples))

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from creation.randint(0, n, (32,), generator=generator).numpy().tolist()
            yield from creation.randint(0, n, (self.num_samples % 32,), generator=generator).numpy().tolist()
        else:
            yield from creation.randperm(n, generator=generator).numpy().tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        return (self.indices[i] for i in creation.randperm(len(self.indices), generator=self.generator).tolist())

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got num_samples={}"
                             .format(num_samples))
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got replacement={}".format(replacement))
        w = weights.numpy() if isinstance(weights, Tensor) else np.asarray(weights)
        self.weights = np.asarray(w, dtype=np.float64)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self):
        g = self.generator if self.generator is not None else _fresh_generator()
        u = g.uniform((self.num_samples,), np.float64)  # one draw of the generator's stream
        p = self.weights / self.weights.sum()
        if self.replacement:
            return iter(np.searchsorted(np.cumsum(p), u, side="right").clip(0, len(p) - 1).tolist())
        if self.num_samples > len(p):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        keys = np.log(np.maximum(g.uniform((len(p),), np.float64), 1e-300)) / np.maximum(p, 1e-300)
        return iter(np.argsort(-keys, kind="stable")[:self.num_samples].tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler` (the last one shorter unless `drop_last`)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got batch_size={}".format(batch_size))
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got drop_last={}".format(drop_last))
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
