"""`flow.data.*`: MNIST loading and the OFRecord readers/decoders (ops in `ops/data_ops.py`)."""
from oneflow_compat._api.data_api import (
    BlobConf, OFRecordBytesDecoder, OFRecordImageDecoder, OFRecordImageDecoderRandomCrop, OFRecordRawDecoder,
    RawCodec, decode_ofrecord, ofrecord_bytes_decoder, ofrecord_image_decoder, ofrecord_image_decoder_random_crop,
    ofrecord_loader, ofrecord_raw_decoder, ofrecord_reader)


def load_mnist(train_batch_size=100, test_batch_size=100, data_format="NCHW",
               url="https://oneflow-public.oss-cn-beijing.aliyuncs.com/datasets/mnist.npz",
               hash_check="63d4344077849053dc3036b247fa012b2b381de53fd055a66b539dffd76cf08e", out_dir="."):
    from oneflow_compat.datasets import mnist

    return mnist.load_mnist(train_batch_size, test_batch_size, data_format, url, hash_check, out_dir)
