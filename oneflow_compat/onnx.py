"""`flow.onnx`: refused (see `_api/refusals.py`)."""
from oneflow_compat._api.refusals import ONNX, refused

export = refused("onnx.export", ONNX)
