"""The `flow.nn` names of OneFlow v0.3.4's math family (`math_ops.py` exports them under both `math.` and `nn.`):
tril, fused_scale_tril, moments (`nn_ops.py`), softmax_grad; v0.4.0: fused_scale_tril_softmax_dropout and
fused_self_attention_query_mul_key_and_value (`domain_ops.py`)."""
from oneflow_compat._api.legacy_math import (  # noqa: F401
    fused_scale_tril, fused_scale_tril_softmax_dropout, fused_self_attention_query_mul_key_and_value, softmax_grad,
    tril)
from oneflow_compat.math import moments  # noqa: F401

__all__ = ["fused_scale_tril", "fused_scale_tril_softmax_dropout", "fused_self_attention_query_mul_key_and_value",
           "moments", "softmax_grad", "tril"]
