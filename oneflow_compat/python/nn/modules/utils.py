"""`oneflow.python.nn.modules.utils` (v0.4.0 `oneflow/python/nn/modules/utils.py`): `_single`, `_pair`,
`_triple`, `_quadruple`, `_reverse_repeat_tuple` — the helpers of `oneflow.nn.modules.utils`, which kept them."""
from oneflow_compat.nn.modules.utils import (  # noqa: F401
    _ntuple, _pair, _quadruple, _reverse_repeat_tuple, _single, _triple)
