"""`flow.image.*`: image ops of the OFRecord pipeline (ops in `ops/data_ops.py`)."""
from oneflow_compat._api.data_api import (
    CropMirrorNormalize, Resize, crop_mirror_normalize, decode, random_crop, resize, target_resize)
from oneflow_compat._api.tensor_buffer_api import (  # noqa: F401,E402
    image_batch_align as batch_align, image_flip as flip, image_normalize as normalize)
