"""`oneflow.nn.modules.container`: the containers (implemented in `_global/modules.py` and `_global/containers.py`)."""
from oneflow_compat._global.containers import ModuleDict, ParameterDict, ParameterList  # noqa: F401
from oneflow_compat._global.modules import ModuleList, Sequential  # noqa: F401
