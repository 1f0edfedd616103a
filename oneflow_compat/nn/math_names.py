"""The `flow.nn` names of OneFlow v0.3.4's math family (`math_ops.py` exports them under both `math.` and `nn.`):
tril, fused_scale_tril, moments (`nn_ops.py`), softmax_grad."""
from oneflow_compat._api.legacy_math import fused_scale_tril, softmax_grad, tril  # noqa: F401
from oneflow_compat.math import moments  # noqa: F401

__all__ = ["fused_scale_tril", "moments", "softmax_grad", "tril"]
