"""`oneflow.nn.qat` (OneFlow 0.9): the quantization-aware training convolutions by module path
(`oneflow.nn.qat.conv`); the classes are `oneflow.nn.QatConv1d/2d/3d`."""
from oneflow_compat.nn.qat import conv  # noqa: F401
