"""`flow.env.all_device_placement` (OneFlow 0.9 `python/oneflow/framework/env_util.py`, tensor_attributes.rst).

It lives here, not in `env.py`, because `flow.placement` reads `flow.env` (processes per node): the package's
`__init__` binds it onto `flow.env`."""
from oneflow_compat._global.placement import placement

__all__ = ["all_device_placement"]


def all_device_placement(device_type):
    """A placement of every rank of the job on `device_type` ("cuda" or "cpu"); `flow.placement.all(device_type)`,
    which OneFlow 0.9 recommends instead."""
    return placement.all(device_type)
