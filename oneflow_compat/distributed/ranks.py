"""`flow.distributed.get_rank` / `get_world_size` of OneFlow v0.4.0 (`oneflow/python/framework/distribute.py`): this
process's rank and the number of processes (ranks of the MPI world or the launcher's, 0 and 1 in a single process)."""
from oneflow_compat import env as _env


def get_rank():
    """The rank of this process."""
    return _env.get_rank()


def get_world_size():
    """The number of processes."""
    return _env.get_world_size()
