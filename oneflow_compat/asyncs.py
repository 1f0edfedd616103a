"""`oneflow.asyncs` (OneFlow 0.9, python/oneflow/asyncs/thread.py): `Thread()` makes a worker thread, and
`with flow.asyncs.thread(worker):` launches the eager ops of this Python thread on that worker instead of worker 0
(OneFlow's StreamSet / StreamGuard: each op's kernels go to the chosen worker's streams, so work launched from
several Python threads need not queue behind one worker). It changes where kernels are launched, never what they
compute.

Here an eager op runs to completion in the calling Python thread (there is no launch queue to pick), so the
context keeps OneFlow's bookkeeping without the queue: each `Thread` has its own id, the choice is per Python
thread and nests (`current_worker_id()`, not OneFlow's, reads it), and the values are exactly those computed
outside it. Also usable as a decorator (`@flow.asyncs.thread(worker)`), as OneFlow documents.
"""
import functools
import itertools
import threading

__all__ = ["Thread", "thread"]

_IDS = itertools.count(1)  # worker 0 is the default one
_CURRENT = threading.local()


class Thread:
    """A worker thread to launch eager ops on (OneFlow's `_oneflow_internal.AsyncThread`)."""

    def __init__(self):
        self.thread_global_id = next(_IDS)

    def __repr__(self):
        return "<oneflow.asyncs.Thread %d>" % self.thread_global_id


def _stack():
    stack = getattr(_CURRENT, "stack", None)
    if stack is None:
        stack = _CURRENT.stack = []
    return stack


def current_worker_id():
    """The worker this Python thread launches on now: 0 outside any `thread` context."""
    stack = _stack()
    return stack[-1].thread_global_id if stack else 0


class thread:  # noqa: N801 - OneFlow's name
    def __init__(self, worker_thread):
        if not isinstance(worker_thread, Thread):
            raise TypeError("oneflow.asyncs.thread: worker_thread must be made by oneflow.asyncs.Thread(), got %s"
                            % type(worker_thread).__name__)
        self.worker_thread_ = worker_thread

    def __enter__(self):
        _stack().append(self.worker_thread_)
        return self

    def __exit__(self, type, value, traceback):  # noqa: A002
        _stack().pop()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with thread(self.worker_thread_):
                return fn(*args, **kwargs)

        return wrapper
