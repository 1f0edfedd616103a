"""`oneflow.nn.modules.fold`: `Fold` and `Unfold` (implemented in `_global/nn_fold.py`; OneFlow v0.9.0's
python/oneflow/nn/modules/fold.py)."""
from oneflow_compat._global.nn_fold import Fold, Unfold  # noqa: F401
