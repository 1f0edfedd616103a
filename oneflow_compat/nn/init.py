"""`oneflow.nn.init`: parameter initialisers of the global-tensor API (implemented in `_global/nn_init.py`)."""
from oneflow_compat._global.nn_init import *  # noqa: F401,F403
from oneflow_compat._global.nn_init import _calculate_fan_in_and_fan_out  # noqa: F401,E402 (models import it)
