"""`oneflow.nn.modules.distance`: the classes OneFlow 0.9 defines in `python/oneflow/nn/modules/distance.py`, the
very objects `oneflow.nn` binds (in `_global/nn_functional_extra.py`)."""
from oneflow_compat._global.nn_functional_extra import CosineSimilarity, PairwiseDistance  # noqa: F401
