"""`DistributedSampler` (OneFlow 0.9, `utils/data/distributed.py`): rank r of n reads samples r, r + n, … of one
permutation that every rank draws alike (seeded by `seed + epoch`), padded by repeating the first samples (or
cut, `drop_last`) so each rank reads `ceil(len / n)` of them. With global tensors, each rank feeds its own batch
as its piece of a `split(0)` tensor (`x.to_global(placement, flow.sbp.split(0))`)."""
import math

from oneflow_compat import env
from oneflow_compat._global import creation, generators
from oneflow_compat.utils.data.sampler import Sampler


class DistributedSampler(Sampler):
    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = env.get_world_size()
        if rank is None:
            rank = env.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError("Invalid rank {}, rank should be in the interval [0, {}]".format(rank, num_replicas - 1))
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            g = generators.Generator("cpu")
            g.manual_seed(self.seed + self.epoch)
            indices = creation.randperm(len(self.dataset), generator=g).tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch: the next iteration draws the permutation of `seed + epoch`."""
        self.epoch = epoch
