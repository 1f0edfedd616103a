"""`oneflow.nn.qat.conv`: `QatConv1d`, `QatConv2d`, `QatConv3d` (implemented in `_global/nn_quantization.py`; OneFlow
v0.9.0's python/oneflow/nn/qat/conv.py)."""
from oneflow_compat._global.nn_quantization import QatConv1d, QatConv2d, QatConv3d  # noqa: F401
