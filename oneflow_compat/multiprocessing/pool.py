"""`Pool` (OneFlow 0.9's `multiprocessing/pool.py`): tasks and results travel through the ForkingPickler queues, so
tensors go through shared memory; each worker collects garbage after its tasks, so the segments of the tensors it
received are released."""
import multiprocessing.pool
import multiprocessing.util as util

from oneflow_compat.multiprocessing.queue import SimpleQueue


def clean_worker(*args, **kwargs):
    import gc

    multiprocessing.pool.worker(*args, **kwargs)
    gc.collect()  # a pool worker ends without collecting: the shared tensors it still holds are released here


class Pool(multiprocessing.pool.Pool):
    def _setup_queues(self):
        self._inqueue = SimpleQueue(ctx=self._ctx)
        self._outqueue = SimpleQueue(ctx=self._ctx)
        self._quick_put = self._inqueue._writer.send
        self._quick_get = self._outqueue._reader.recv

    @staticmethod
    def _repopulate_pool_static(ctx, Process, processes, pool, inqueue, outqueue, initializer, initargs,
                                maxtasksperchild, wrap_exception):
        for _ in range(processes - len(pool)):
            w = Process(ctx, target=clean_worker, args=(inqueue, outqueue, initializer, initargs, maxtasksperchild,
                                                        wrap_exception))
            w.name = w.name.replace("Process", "PoolWorker")
            w.daemon = True
            w.start()
            pool.append(w)
            util.debug("added worker")
