"""`oneflow.nn.modules.loss`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/loss.py`,
for code that imports them by this path: the very objects `oneflow.nn` binds (implemented in `_global/`)."""
from oneflow_compat.nn import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CombinedMarginLoss, CrossEntropyLoss, CTCLoss, KLDivLoss, L1Loss, MSELoss,
    MarginRankingLoss, NLLLoss, SmoothL1Loss, TripletMarginLoss)
