"""`oneflow.nn.image` (OneFlow 0.9's python/oneflow/nn/image.py): the image modules on tensor buffers, in
_global/nn_data.py."""
from oneflow_compat._global.nn_data import ImageBatchAlign as batch_align  # noqa: F401
from oneflow_compat._global.nn_data import ImageDecode as decode  # noqa: F401
from oneflow_compat._global.nn_data import ImageFlip as flip  # noqa: F401
from oneflow_compat._global.nn_data import ImageNormalize as normalize  # noqa: F401
from oneflow_compat._global.nn_data import ImageResize as Resize  # noqa: F401
