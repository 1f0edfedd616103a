"""`flow.data.*`: MNIST loading, the OFRecord readers/decoders (ops in `ops/data_ops.py`) the COCO reader and
the Megatron GPT loader."""
from oneflow_compat._api.data_api import (
    BlobConf, OFRecordBytesDecoder, OFRecordImageDecoder, OFRecordImageDecoderRandomCrop, OFRecordRawDecoder,
    RawCodec, decode_ofrecord, ofrecord_bytes_decoder, ofrecord_image_classification_reader, ofrecord_image_decoder, ofrecord_image_decoder_random_crop,
    ofrecord_loader, ofrecord_raw_decoder, ofrecord_reader)
from oneflow_compat._api.legacy_data_api import (  # noqa: F401 (the rest of OneFlow v0.3.4's flow.data)
    BytesListCodec, ImageCodec, ImagePreprocessor, ImageResizePreprocessor, MegatronGPTMMapDataLoader,
    NormByChannelPreprocessor, coco_reader, decode_random, image_decoder_random_crop_resize,
    megatron_gpt_mmap_data_loader)
from oneflow_compat._api.onerec_api import OneRecDecoder, onerec_decoder, onerec_reader  # noqa: F401 (v0.4.0)

ImageDecoderRandomCropResize = image_decoder_random_crop_resize


def load_mnist(train_batch_size=100, test_batch_size=100, data_format="NCHW",
               url="https://oneflow-public.oss-cn-beijing.aliyuncs.com/datasets/mnist.npz",
               hash_check="63d4344077849053dc3036b247fa012b2b381de53fd055a66b539dffd76cf08e", out_dir="."):
    from oneflow_compat.datasets import mnist

    return mnist.load_mnist(train_batch_size, test_batch_size, data_format, url, hash_check, out_dir)
