"""OneFlow 0.9's op type names: the table lives with the op declarations (`ops/op_names.py`), where the
auto-mixed-precision lists (`ops/amp_lists.py`) read it too; the surface's modules import it from here."""
from oneflow_compat.ops.op_names import ONEFLOW_OP_NAMES, oneflow_op_type  # noqa: F401

__all__ = ["ONEFLOW_OP_NAMES", "oneflow_op_type"]
