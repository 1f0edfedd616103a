"""`oneflow.nn.modules.activation`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/activation.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`).
Not provided (absent from `oneflow.nn` too): CELU, QuickGELU, Hardshrink, SELU, Softshrink, Softsign, GLU, Threshold."""
from oneflow_compat.nn import (  # noqa: F401
    ELU, GELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, SiLU,
    Sigmoid, Softmax, Softplus, Tanh)
