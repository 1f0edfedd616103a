"""`flow.detection`: box and polygon ops of the detection data pipeline (OneFlow v0.3.4 `user_data_ops.py`; ops in
`ops/tensor_buffer_ops.py`)."""
from oneflow_compat._api.tensor_buffer_api import (  # noqa: F401
    object_bbox_flip, object_bbox_scale, object_segmentation_polygon_flip, object_segmentation_polygon_scale,
    object_segmentation_polygon_to_mask)
