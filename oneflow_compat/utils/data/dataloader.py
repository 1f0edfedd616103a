"""`DataLoader` (OneFlow 0.9, `utils/data/dataloader.py`): batches of a dataset, in this process or in worker
processes.

* Map-style datasets are read in the order of `sampler` (`SequentialSampler`, or `RandomSampler(generator=...)`
  with `shuffle=True`), cut into lists of indices by `BatchSampler(batch_size, drop_last)` (or the user's
  `batch_sampler`), each list fetched and turned into a batch by `collate_fn` (`default_collate`).
* Iterable datasets are read in their own order, `batch_size` samples at a time.
* `num_workers > 0` starts that many worker processes (`fork` unless `multiprocessing_context` says otherwise)
  for each iteration (kept between epochs with `persistent_workers`). Batch i goes to worker i % num_workers, up
  to `prefetch_factor` batches per worker in flight, and the batches come back in order: the same batches as with
  `num_workers=0`. Each worker seeds Python's `random` and the default generators with `base_seed + worker_id`
  (base_seed is drawn from the loader's generator per iteration, as OneFlow does) and then runs
  `worker_init_fn(worker_id)`; `get_worker_info()` tells the dataset which worker runs it. An exception in a
  worker is raised in the main process with the worker's traceback; a worker that dies ends the iteration with
  an error naming its pid and exit code; `timeout` bounds the wait for one batch. The batches' tensors come back
  in shared memory (`oneflow.multiprocessing`'s reductions, as in OneFlow 0.9): the main process maps what the
  worker wrote instead of unpickling a copy.
"""
import itertools
import multiprocessing
import os
import queue
import random
import sys
import traceback
import warnings

import numpy as np

from oneflow_compat import multiprocessing as multiprocessing_reductions  # batches travel in shared memory
from oneflow_compat._global import creation, generators
from oneflow_compat.utils.data import collate as _collate
from oneflow_compat.utils.data.dataset import IterableDataset
from oneflow_compat.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

_POLL_S = 5.0  # how often a waiting main process checks that its workers are alive


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _MapFetcher(dataset, auto_collation, collate_fn)
        return _IterableFetcher(dataset, auto_collation, collate_fn, drop_last)


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            return self.collate_fn([self.dataset[i] for i in index])
        return self.collate_fn(self.dataset[index])


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last

    def fetch(self, index):
        if self.auto_collation:
            data = list(itertools.islice(self.iterator, len(index)))
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
            return self.collate_fn(data)
        return self.collate_fn(next(self.iterator))


class _InfiniteConstantSampler(Sampler):
    def __iter__(self):
        while True:
            yield None


class WorkerInfo:
    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __repr__(self):
        return "WorkerInfo(id=%d, num_workers=%d, seed=%d, dataset=%r)" % (self.id, self.num_workers, self.seed,
                                                                          self.dataset)


_worker_info = None


def get_worker_info():
    """In a worker process: its `WorkerInfo` (id, num_workers, seed, dataset); in the main process: None."""
    return _worker_info


def _default_generator():
    # OneFlow's default argument `generator=flow.Generator("cpu")`: one generator of the process shared by the
    # loaders that are given none, seeded from the system (a simulated rank has its own, as a process)
    return generators.process_generator("data loaders", lambda: generators.Generator("cpu", seed=generators.DRAWN))


class DataLoader:
    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=2, persistent_workers=False):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor != 2:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing.")
        if prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be positive")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.num_workers = num_workers
        self.dataset = dataset
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        if generator is None:
            generator = _default_generator()
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle is not False:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 "shuffle={}".format(shuffle))
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 "sampler={}".format(sampler))
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 "got batch_sampler={}".format(batch_sampler))
        else:
            self._dataset_kind = _DatasetKind.Map
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = _collate.default_collate if self._auto_collation else _collate.default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None

    def __setattr__(self, attr, val):
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError("{} attribute should not be set after {} is initialized"
                             .format(attr, type(self).__name__))
        super().__setattr__(attr, val)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        self._check_worker_number()
        return _MultiProcessingIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self):
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def _check_worker_number(self):
        try:
            suggest = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            suggest = os.cpu_count()
        if suggest is not None and self.num_workers > suggest:
            warnings.warn("This DataLoader will create {} worker processes in total. Our suggested max number of "
                          "worker in current system is {}, which is smaller than what this DataLoader is going to "
                          "create. Please be aware that excessive worker creation might get DataLoader running "
                          "slow or even freeze, lower the worker number to avoid potential slowness/freeze if "
                          "necessary.".format(self.num_workers, suggest))


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(creation.randint(0, np.iinfo(np.int64).max, (), generator=loader.generator).item())
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    next = __next__

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled".format(type(self).__name__))


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _DatasetKind.create_fetcher(self._dataset_kind, self._dataset, self._auto_collation,
                                                    self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


# --- worker processes ---------------------------------------------------------------------------------------
class _WorkerError:
    """An exception of a worker, carried to the main process with its traceback text."""

    def __init__(self, worker_id, exc):
        self.exc_type = type(exc)
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.where = "in DataLoader worker process %d" % worker_id

    def reraise(self):
        msg = "Caught %s %s.\nOriginal %s" % (self.exc_type.__name__, self.where, self.text)
        try:
            err = self.exc_type(msg)
        except Exception:  # an exception type that takes other arguments
            err = RuntimeError(msg)
        raise err


class _IterableEnd:
    def __init__(self, worker_id):
        self.worker_id = worker_id


def _worker_loop(dataset_kind, dataset, index_queue, result_queue, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers):
    global _worker_info
    try:
        seed = base_seed + worker_id
        random.seed(seed)
        generators.manual_seed(seed % (1 << 63))
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception as e:  # reported with the first batch asked for
            init_error = _WorkerError(worker_id, e)
        ended = False
        while True:
            job = index_queue.get()
            if job is None:
                break
            idx, index = job
            if init_error is not None:
                result_queue.put((idx, init_error))
                init_error = None
                ended = True
                continue
            if ended:
                result_queue.put((idx, _IterableEnd(worker_id)))
                continue
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                ended = dataset_kind == _DatasetKind.Iterable
                data = _IterableEnd(worker_id)
            except Exception as e:
                data = _WorkerError(worker_id, e)
            result_queue.put((idx, data))
    except KeyboardInterrupt:
        pass
    finally:
        result_queue.close()
        result_queue.join_thread()
        # as OneFlow 0.9's worker does (utils/data/_utils/worker.py): the 'file_system' segments of batches still in
        # the queue when the loader shut this worker down lose their names (the main process reads no more of them)
        multiprocessing_reductions.unlink_all_shared_memory()


class _MultiProcessingIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context("fork")
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._result_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        sys.stdout.flush()
        sys.stderr.flush()
        for i in range(self._num_workers):
            q = ctx.Queue()
            w = ctx.Process(target=_worker_loop, args=(
                self._dataset_kind, self._dataset, q, self._result_queue, self._auto_collation, self._collate_fn,
                self._drop_last, self._base_seed, loader.worker_init_fn, i, self._num_workers), daemon=True)
            w.start()
            self._index_queues.append(q)
            self._workers.append(w)
        self._shutdown = False
        self._reset(loader, first=True)

    def _reset(self, loader, first=False):
        if not first:
            super()._reset(loader)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # batch index -> worker id (or (worker id, data) once received)
        self._workers_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._worker_cycle)
            if self._workers_active[worker]:
                break
        else:
            return
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._send_idx += 1

    def _get(self):
        waited = 0.0
        while True:
            limit = self._timeout if self._timeout > 0 else _POLL_S
            try:
                return self._result_queue.get(timeout=min(limit, _POLL_S))
            except queue.Empty:
                waited += min(limit, _POLL_S)
                if self._timeout > 0 and waited >= self._timeout:
                    self._shutdown_workers()
                    raise RuntimeError("DataLoader timed out after {} seconds".format(self._timeout)) from None
                dead = [w for w in self._workers if not w.is_alive()]
                if dead:
                    w = dead[0]
                    self._shutdown_workers()
                    raise RuntimeError("DataLoader worker (pid {}) exited unexpectedly with exit code {}"
                                       .format(w.pid, w.exitcode)) from None

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]  # its worker ended (iterable dataset): nothing will come
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                result = self._process(info[1])
                if result is not _SKIP:
                    return result
                continue
            idx, data = self._get()
            if isinstance(data, _IterableEnd):
                self._workers_active[data.worker_id] = False
                self._task_info[idx] = (data.worker_id, _SKIP)
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] = (self._task_info[idx][0], data)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            result = self._process(data)
            if result is not _SKIP:
                return result

    def _process(self, data):
        if data is _SKIP:
            return _SKIP
        self._try_put_index()
        if isinstance(data, _WorkerError):
            self._shutdown_workers()
            data.reraise()
        return data

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        for q in self._index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
                w.join(timeout=5)
        for q in self._index_queues + [self._result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass


_SKIP = object()
