"""`oneflow.nn.modules.fake_quantization`: `FakeQuantization` (implemented in `_global/nn_quantization.py`; OneFlow v0.9.0's
python/oneflow/nn/modules/fake_quantization.py)."""
from oneflow_compat._global.nn_quantization import FakeQuantization  # noqa: F401
