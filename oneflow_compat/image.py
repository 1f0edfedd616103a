"""`flow.image.*`: image ops of the OFRecord pipeline (ops in `ops/data_ops.py`)."""
from oneflow_compat._api.data_api import (
    CropMirrorNormalize, Resize, crop_mirror_normalize, decode, random_crop, resize, target_resize)
