"""`register_after_fork(func)` (OneFlow 0.9's `multiprocessing/_atfork.py`): `func()` runs in a child after a fork,
`os.fork()` included."""
import os

__all__ = ["register_after_fork"]


def register_after_fork(func):
    os.register_at_fork(after_in_child=func)
