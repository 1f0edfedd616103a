"""`flow.tensorrt`: refused (see `_api/refusals.py`)."""
from oneflow_compat._api.refusals import TENSORRT, refused

write_int8_calibration = refused("tensorrt.write_int8_calibration", TENSORRT)
cache_int8_calibration = refused("tensorrt.cache_int8_calibration", TENSORRT)
