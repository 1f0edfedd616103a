"""`oneflow.distributed`: starting the processes of a global-tensor program (`python -m oneflow.distributed.launch`).

The launcher is `launch.py`; the processes find their place in the job through `oneflow_compat.comm`.
"""
from oneflow_compat.distributed.ranks import get_rank, get_world_size  # noqa: F401,E402 (OneFlow v0.4.0)
