"""`oneflow.nn.modules.dataset`: the data-pipeline modules (implemented in `_global/nn_data.py`; OneFlow v0.9.0's
python/oneflow/nn/modules/dataset.py)."""
from oneflow_compat._global.nn_data import (  # noqa: F401
    COCOReader, CoinFlip, CropMirrorNormalize, ImageBatchAlign, ImageDecode, ImageFlip, ImageNormalize, ImageResize,
    OFRecordBytesDecoder, OFRecordImageDecoder, OFRecordImageDecoderRandomCrop, OFRecordRawDecoder, OFRecordReader,
    OneRecReader)
