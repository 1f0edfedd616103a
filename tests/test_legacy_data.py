"""`flow.data` names of OneFlow v0.3.4 beyond the basic pipeline: decode_random, ofrecord_image_classification_reader,
image_decoder_random_crop_resize, and the old decode_ofrecord API's ImageCodec / BytesListCodec / preprocessors;
values against numpy and Pillow written here, on 1 and 2 devices."""
import io
from typing import Tuple

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat.core.record import record_pb2 as pb
from oneflow_compat.datasets import ofrecord_io

PIL = pytest.importorskip("PIL.Image")


def test_decode_random_draws_from_the_initializer_every_call():
    draws = {}
    for devices in (1, 2):
        flow.clear_default_session()
        flow.config.cpu_device_num(devices)

        @flow.global_function()
        def job() -> Tuple[tp.Numpy, tp.Numpy]:
            a = flow.data.decode_random(shape=(3, 2), dtype=flow.float, batch_size=6)
            b = flow.data.decode_random(shape=(5,), dtype=flow.int32, batch_size=4,
                                        initializer=flow.random_uniform_initializer(2, 9, dtype=flow.int32))
            return a, b

        a1, b1 = job()
        a2, _ = job()
        assert a1.shape == (6, 3, 2) and a1.dtype == np.float32 and b1.shape == (4, 5) and b1.dtype == np.int32
        # integer bounds are both included (OneFlow's RngIntUniform, core/kernel/kernel_util.cpp v0.4.0)
        assert a1.min() >= 0 and a1.max() < 1 and b1.min() >= 2 and b1.max() <= 9
        assert not np.array_equal(a1, a2)
        draws[devices] = (a1, a2)
    np.testing.assert_array_equal(draws[1][0], draws[2][0])  # the same batch however it is split
    np.testing.assert_array_equal(draws[1][1], draws[2][1])


def _png(array):
    buf = io.BytesIO()
    PIL.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def _image_dataset(folder, n=5, seed=0):
    rng = np.random.default_rng(seed)
    images = [rng.integers(0, 256, (4 + i % 3, 6, 3)).astype(np.uint8) for i in range(n)]
    records = [pb.OFRecord(feature={
        "encoded": pb.Feature(bytes_list=pb.BytesList(value=[_png(im)])),
        "class/label": pb.Feature(int32_list=pb.Int32List(value=[10 + i])),
        "text": pb.Feature(bytes_list=pb.BytesList(value=[b"ab" * (i + 1)]))}) for i, im in enumerate(images)]
    ofrecord_io.write_part(str(folder / "part-0"), records)
    return images  # RGB


def test_ofrecord_image_classification_reader_values(tmp_path):
    images = _image_dataset(tmp_path)
    flow.clear_default_session()

    @flow.global_function()
    def job() -> Tuple[tp.ListNumpy, tp.Numpy]:
        image, label = flow.data.ofrecord_image_classification_reader(
            str(tmp_path), "encoded", "class/label", batch_size=4, color_space="RGB")
        return flow.image_batch_align(image, shape=(6, 6, 3), dtype=flow.uint8, alignment=0), label

    (batch,), label = job()
    assert label.dtype == np.int32 and label.tolist() == [10, 11, 12, 13]
    for i in range(4):
        h = images[i].shape[0]
        np.testing.assert_array_equal(batch[i, :h], images[i])
        np.testing.assert_array_equal(batch[i, h:], 0)


def test_image_decoder_random_crop_resize(tmp_path):
    images = _image_dataset(tmp_path)
    flow.clear_default_session()

    @flow.global_function()
    def job() -> Tuple[tp.Numpy, tp.Numpy]:
        records = flow.data.ofrecord_reader(str(tmp_path), batch_size=3)
        encoded = flow.data.OFRecordBytesDecoder(records, "encoded")
        # the whole image (area 1, the image's own aspect ratio) resized to its own size: the image itself, RGB
        whole = flow.data.image_decoder_random_crop_resize(encoded, target_width=6, target_height=4,
                                                           random_area=(1.0, 1.0), random_aspect_ratio=(1.5, 1.5),
                                                           seed=3)
        crops = flow.data.ImageDecoderRandomCropResize(encoded, target_width=8, target_height=8, seed=4)
        return whole, crops

    whole, crops = job()
    assert whole.dtype == np.uint8 and whole.shape == (3, 4, 6, 3) and crops.shape == (3, 8, 8, 3)
    np.testing.assert_array_equal(whole[0], images[0])
    # a crop of image i resized: its values are within the image's range of values
    for i in range(3):
        assert crops[i].min() >= images[i].min() and crops[i].max() <= images[i].max()


def test_decode_ofrecord_image_codec_preprocessors_and_bytes_list(tmp_path):
    images = _image_dataset(tmp_path)
    flow.clear_default_session()

    @flow.global_function()
    def job() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy]:
        image = flow.data.BlobConf("encoded", shape=(4, 6, 3), dtype=flow.float, codec=flow.data.ImageCodec([
            flow.data.ImageResizePreprocessor(6, 4), flow.data.ImagePreprocessor("bgr2rgb")]),
            preprocessors=[flow.data.NormByChannelPreprocessor((1.0, 2.0, 3.0), (2.0, 2.0, 4.0))])
        gray = flow.data.BlobConf("encoded", shape=(4, 6, 1), dtype=flow.uint8, codec=flow.data.ImageCodec(
            [flow.data.ImageResizePreprocessor(6, 4)]))
        text = flow.data.BlobConf("text", shape=(1, 12), dtype=flow.int8, codec=flow.data.BytesListCodec())
        image, text = flow.data.decode_ofrecord(str(tmp_path), (image, text), batch_size=2)
        (gray,) = flow.data.decode_ofrecord(str(tmp_path), (gray,), batch_size=2)
        return image, gray, text

    image, gray, text = job()
    # image 0 is 4x6 already: the resize keeps it, bgr2rgb turns OpenCV's BGR decoding back into RGB
    np.testing.assert_allclose(image[0], (images[0] - [1.0, 2.0, 3.0]) / [2.0, 2.0, 4.0], rtol=1e-6)
    bgr = images[0][:, :, ::-1].astype(np.float64)
    want_gray = np.rint(bgr[:, :, 0] * 0.114 + bgr[:, :, 1] * 0.587 + bgr[:, :, 2] * 0.299)
    np.testing.assert_array_equal(gray[0, :, :, 0], want_gray)
    assert bytes(text[1, 0, :4].tobytes()) == b"abab" and text[1, 0, 4:].tolist() == [0] * 8
    with pytest.raises(ValueError, match='preprocessor must be "bgr2rgb" or "mirror"'):
        flow.data.ImagePreprocessor("blur")

# flow.data.onerec_reader / onerec_decoder (no longer refused) are tested in tests/test_onerec.py
