"""`oneflow.distributed`: starting the processes of a global-tensor program (`python -m oneflow.distributed.launch`).

The launcher is `launch.py`; the processes find their place in the job through `oneflow_compat.comm`.
"""
