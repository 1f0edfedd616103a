"""`oneflow.nn.modules.quantization`: `Quantization` (implemented in `_global/nn_quantization.py`; OneFlow v0.9.0's
python/oneflow/nn/modules/quantization.py)."""
from oneflow_compat._global.nn_quantization import Quantization  # noqa: F401
