"""`oneflow.nn.modules.min_max_observer`: `MinMaxObserver` (implemented in `_global/nn_quantization.py`; OneFlow v0.9.0's
python/oneflow/nn/modules/min_max_observer.py)."""
from oneflow_compat._global.nn_quantization import MinMaxObserver  # noqa: F401
