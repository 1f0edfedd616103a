"""`oneflow.utils.data` (issue 21, part 2): datasets, samplers, collation, and DataLoader with worker processes
yielding the same batches as without."""
import os

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, DistributedSampler,
                                       IterableDataset, RandomSampler, SequentialSampler, Subset, TensorDataset,
                                       get_worker_info, random_split)


def _dataset(n=23):
    x = flow.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    y = flow.arange(n)
    return TensorDataset(x, y)


def _batches(loader):
    return [tuple(t.numpy().tolist() for t in batch) for batch in loader]


def _gen(seed):
    g = flow.Generator()
    g.manual_seed(seed)
    return g


@pytest.mark.parametrize("drop_last", [False, True])
def test_two_workers_yield_the_batches_of_zero_workers(drop_last):
    ds = _dataset()
    single = _batches(DataLoader(ds, batch_size=4, shuffle=True, generator=_gen(7), drop_last=drop_last))
    multi = _batches(DataLoader(ds, batch_size=4, shuffle=True, generator=_gen(7), drop_last=drop_last,
                                num_workers=2))
    assert single == multi
    assert len(single) == (5 if drop_last else 6) and all(len(b[1]) == 4 for b in single[:5])
    again = _batches(DataLoader(ds, batch_size=4, shuffle=True, generator=_gen(7), drop_last=drop_last))
    assert again == single  # one generator seed, one order
    if not drop_last:
        assert sorted(v for b in single for v in b[1]) == list(range(23))


def test_sequential_batches_and_collation():
    loader = DataLoader(_dataset(5), batch_size=2)
    assert len(loader) == 3
    x, y = next(iter(loader))
    assert tuple(x.shape) == (2, 3) and x.dtype is flow.float32 and y.dtype is flow.int64
    assert [b[1] for b in _batches(loader)] == [[0, 1], [2, 3], [4]]

    class Mixed(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return {"a": np.full((2,), i, np.float32), "f": float(i), "i": i, "s": "n%d" % i}

    batch = next(iter(DataLoader(Mixed(), batch_size=3)))
    assert batch["a"].dtype is flow.float32 and tuple(batch["a"].shape) == (3, 2)
    assert batch["f"].dtype is flow.float64 and batch["i"].dtype is flow.int64 and batch["s"] == ["n0", "n1", "n2"]
    custom = next(iter(DataLoader(Mixed(), batch_size=2, collate_fn=lambda items: len(items))))
    assert custom == 2


def test_worker_seeds_init_fn_and_worker_info():
    class Info(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = get_worker_info()
            return np.array([info.id, info.num_workers, os.getpid(), int(os.environ.get("DL_INIT", "-1"))])

    def init(worker_id):
        os.environ["DL_INIT"] = str(worker_id * 10)

    rows = [b.numpy()[0] for b in DataLoader(Info(), batch_size=1, num_workers=2, worker_init_fn=init)]
    assert [int(r[0]) for r in rows] == [0, 1, 0, 1]  # batch i goes to worker i % 2
    assert all(int(r[1]) == 2 for r in rows)
    assert [int(r[3]) for r in rows] == [0, 10, 0, 10]
    assert os.getpid() not in {int(r[2]) for r in rows}  # real processes
    assert get_worker_info() is None


def test_iterable_dataset_split_by_worker_info():
    class Stream(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, 10, step))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=2, num_workers=2)] == \
        [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_errors_in_workers_and_bad_arguments():
    class Bad(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError("sample 2 is broken")
            return i

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(DataLoader(Bad(), batch_size=1, num_workers=2))

    class Dies(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            os._exit(3)

    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3"):
        list(DataLoader(Dies(), batch_size=1, num_workers=1))
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(_dataset(), num_workers=-1)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(_dataset(), sampler=SequentialSampler(range(3)), shuffle=True)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(SequentialSampler(range(3)), 0, False)
    loader = DataLoader(_dataset())
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3


def test_samplers_subsets_and_splits():
    assert list(BatchSampler(SequentialSampler(range(10)), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(SequentialSampler(range(10)), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    perm = list(RandomSampler(range(10), generator=_gen(1)))
    assert sorted(perm) == list(range(10)) and perm == list(RandomSampler(range(10), generator=_gen(1)))
    drawn = list(RandomSampler(range(5), replacement=True, num_samples=40, generator=_gen(2)))
    assert len(drawn) == 40 and set(drawn) <= set(range(5))
    a, b = random_split(range(10), [7, 3], generator=_gen(3))
    assert len(a) == 7 and sorted(list(a) + list(b)) == list(range(10))
    halves = random_split(range(10), [0.5, 0.5], generator=_gen(3))
    assert [len(h) for h in halves] == [5, 5]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(range(10), [3, 3])
    assert list(Subset(range(10), [9, 1])) == [9, 1]
    assert len(ConcatDataset([range(3), range(4)])) == 7 and ConcatDataset([range(3), range(4)])[4] == 1


def test_distributed_sampler_partitions_one_permutation():
    ds = list(range(10))
    parts = [list(DistributedSampler(ds, num_replicas=3, rank=r, seed=5)) for r in range(3)]
    assert all(len(p) == 4 for p in parts)  # ceil(10 / 3), padded with the first samples
    interleaved = [parts[i % 3][i // 3] for i in range(12)]
    g = flow.Generator()
    g.manual_seed(5)
    perm = flow.randperm(10, generator=g).tolist()
    assert interleaved == perm + perm[:2]
    s = DistributedSampler(ds, num_replicas=3, rank=1, drop_last=True, shuffle=False)
    assert list(s) == [1, 4, 7]
    s.set_epoch(1)
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(ds, num_replicas=3, rank=3)
    assert list(DistributedSampler(ds)) and DistributedSampler(ds).num_replicas == 1  # one process: world of 1


def test_tensors_pickle_as_their_values():
    import pickle

    t = flow.tensor([[1.5, 2.0]], requires_grad=True)
    u = pickle.loads(pickle.dumps(t))
    # OneFlow 0.9's tensor_getstate (framework/check_point_v2.py) keeps data, dtype and device, not requires_grad
    assert not u.requires_grad and u.dtype is flow.float32 and u.numpy().tolist() == [[1.5, 2.0]]
