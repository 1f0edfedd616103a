"""The sharing strategies of `oneflow.multiprocessing` (kept in `_global/shared_storage.py`, which applies them)."""
from oneflow_compat._global import shared_storage


def set_sharing_strategy(new_strategy):
    """Sets the strategy for sharing CPU tensors: one of `get_all_sharing_strategies()`."""
    shared_storage.set_sharing_strategy(new_strategy)


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors ('file_descriptor' on Linux unless set)."""
    return shared_storage.get_sharing_strategy()


def get_all_sharing_strategies():
    """The set of sharing strategies of this system."""
    return shared_storage.get_all_sharing_strategies()


def unlink_all_shared_memory():
    """Unlinks the 'file_system' segments this process created (`shared_storage.unlink_all_shared_memory`)."""
    shared_storage.unlink_all_shared_memory()
