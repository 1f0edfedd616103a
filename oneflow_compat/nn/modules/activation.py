"""`oneflow.nn.modules.activation`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/activation.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`): every
activation class of v0.9.0's file."""
from oneflow_compat.nn import (  # noqa: F401
    ELU, GELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, SiLU,
    Sigmoid, Softmax, Softplus, Tanh)
from oneflow_compat.nn import (  # noqa: F401,E402 (nnextra helper)
    CELU, GLU, Hardshrink, QuickGELU, SELU, Softshrink, Softsign, Threshold)
