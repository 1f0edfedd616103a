"""`oneflow.nn.modules.moving_average_min_max_observer`: `MovingAverageMinMaxObserver` (implemented in `_global/nn_quantization.py`; OneFlow v0.9.0's
python/oneflow/nn/modules/moving_average_min_max_observer.py)."""
from oneflow_compat._global.nn_quantization import MovingAverageMinMaxObserver  # noqa: F401
