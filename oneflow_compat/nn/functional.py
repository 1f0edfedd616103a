"""`oneflow.nn.functional`: the global-tensor API's functional forms (implemented in `_global/nn_functional.py`)."""
from oneflow_compat._global.nn_functional import *  # noqa: F401,F403
