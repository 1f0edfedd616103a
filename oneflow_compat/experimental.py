"""`flow.experimental`: of OneFlow's experimental legacy names, `custom_op_module` (refused: it compiles C++ ops)."""
from oneflow_compat.custom_ops import CustomOpModule as custom_op_module  # noqa: F401
