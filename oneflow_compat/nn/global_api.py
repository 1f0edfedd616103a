"""The global-tensor API's `flow.nn` classes (OneFlow 0.5-0.9), implemented in `_global/`: modules, losses,
`nn.Graph` (`oneflow_compat/nn/__init__.py` binds them as `flow.nn.*`)."""
from oneflow_compat._global.losses import CrossEntropyLoss, MSELoss  # noqa: F401
from oneflow_compat._global.modules import (  # noqa: F401
    Dropout, Flatten, Identity, Linear, Module, ModuleList, Parameter, ReLU, Sequential)
from oneflow_compat._global import graph  # noqa: F401 (`flow.nn.graph.GraphModule`)
from oneflow_compat._global.graph import Graph  # noqa: F401
# global API: containers (ModuleDict, ParameterList, ParameterDict)
from oneflow_compat._global.containers import ModuleDict, ParameterDict, ParameterList  # noqa: F401,E402
