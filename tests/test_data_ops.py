"""The OFRecord data-pipeline ops in jobs: reader + raw decoder batch after batch (1 and 2 devices), training from
decoded features, CoinFlip statistics, crop-mirror-normalize against an independent reference, and (with Pillow)
the image decode -> resize -> normalize pipelines of the legacy scripts. The image kernels themselves (resize, crop
windows) are tested in test_kernels_image.py."""
import io
from typing import Tuple

import numpy as np
import pytest

import oneflow_compat as flow
import oneflow_compat.typing as tp
from oneflow_compat._api import data_api as D
from oneflow_compat.tools import validate
from oneflow_compat.core.record import record_pb2 as pb
from oneflow_compat.datasets import ofrecord_io


def _feature_record(x, y):
    return pb.OFRecord(feature={"x": pb.Feature(float_list=pb.FloatList(value=[float(v) for v in x])),
                                "y": pb.Feature(int64_list=pb.Int64List(value=[int(y)]))})


def _numeric_dataset(folder, parts, per_part, width, seed=0):
    """Part files of records {x: width floats, y: int}; returns (x, y) of all records in file order."""
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((parts * per_part, width)).astype(np.float32)
    ys = np.arange(parts * per_part, dtype=np.int32)
    for p in range(parts):
        rows = range(p * per_part, (p + 1) * per_part)
        ofrecord_io.write_part(str(folder / ("part-%d" % p)), [_feature_record(xs[i], ys[i]) for i in rows])
    return xs, ys


def _reader_job(folder, batch, parts, width, **reader_kw):
    @flow.global_function(type="predict")
    def read() -> Tuple[tp.Numpy, tp.Numpy]:
        records = D.ofrecord_reader(str(folder), batch_size=batch, data_part_num=parts, **reader_kw)
        x = D.OFRecordRawDecoder(records, "x", shape=(width,), dtype=flow.float)
        y = D.OFRecordRawDecoder(records, "y", shape=(), dtype=flow.int32)
        return x, y

    return read


# --- reader + raw decoder ----------------------------------------------------------------------------------------
def test_reader_returns_the_written_records_batch_after_batch(tmp_path):
    xs, ys = _numeric_dataset(tmp_path, parts=2, per_part=3, width=3)
    read = _reader_job(tmp_path, batch=4, parts=2, width=3)
    stream = np.arange(12) % 6  # one stream over part-0 then part-1, wrapping into the next epoch mid-batch
    for call in range(3):
        x, y = read()
        rows = stream[4 * call:4 * call + 4]
        assert x.dtype == np.float32 and x.shape == (4, 3) and y.dtype == np.int32 and y.shape == (4,)
        np.testing.assert_array_equal(x, xs[rows])
        np.testing.assert_array_equal(y, ys[rows])


def test_two_devices_read_their_share_of_the_parts(tmp_path):
    flow.config.gpu_device_num(2)
    xs, ys = _numeric_dataset(tmp_path, parts=2, per_part=3, width=2)
    read = _reader_job(tmp_path, batch=4, parts=2, width=2)
    # device 0 cycles over part-0 (records 0-2), device 1 over part-1 (3-5), two records each per call
    expected = [[0, 1, 3, 4], [2, 0, 5, 3], [1, 2, 4, 5]]
    for rows in expected:
        x, y = read()
        np.testing.assert_array_equal(y, ys[rows])
        np.testing.assert_array_equal(x, xs[rows])


def test_one_and_two_devices_see_the_same_records(tmp_path):
    xs, ys = _numeric_dataset(tmp_path, parts=2, per_part=3, width=2)
    seen = {}
    for n in (1, 2):
        flow.clear_default_session()
        flow.config.gpu_device_num(n)
        x, y = _reader_job(tmp_path, batch=6, parts=2, width=2)()
        seen[n] = y
        np.testing.assert_array_equal(x, xs[y])  # every row is a whole record
    assert sorted(seen[1]) == sorted(seen[2]) == list(range(6))


def test_shuffled_reader_yields_whole_records_reproducibly(tmp_path):
    xs, ys = _numeric_dataset(tmp_path, parts=2, per_part=4, width=2)
    runs = []
    for _ in range(2):
        flow.clear_default_session()
        read = _reader_job(tmp_path, batch=8, parts=2, width=2, random_shuffle=True, shuffle_buffer_size=16,
                           shuffle_after_epoch=True)
        ys_seen = []
        for _ in range(3):
            x, y = read()
            np.testing.assert_array_equal(x, xs[y])
            ys_seen.append(y)
        runs.append(np.concatenate(ys_seen))
    np.testing.assert_array_equal(runs[0], runs[1])  # ONEFLOW_COMPAT_SEED (conftest) fixes the shuffle
    assert not np.array_equal(runs[0], np.arange(24) % 8)


def test_raw_decoder_pads_short_lists_only_when_asked(tmp_path):
    ofrecord_io.write_part(str(tmp_path / "part-0"), [_feature_record([1, 2], 0), _feature_record([3, 4, 5], 1)])

    def job(truncate):
        @flow.global_function(type="predict")
        def decode() -> tp.Numpy:
            records = D.ofrecord_reader(str(tmp_path), batch_size=2)
            return D.OFRecordRawDecoder(records, "x", shape=(3,), dtype=flow.double, truncate=truncate)
        return decode

    np.testing.assert_array_equal(job(True)(), [[1, 2, 0], [3, 4, 5]])
    flow.clear_default_session()
    with pytest.raises(ValueError, match="has 2 values but shape"):
        job(False)()


def test_decode_ofrecord_with_blob_confs(tmp_path):
    xs, ys = _numeric_dataset(tmp_path, parts=1, per_part=5, width=4)

    @flow.global_function(type="predict")
    def decode() -> Tuple[tp.Numpy, tp.Numpy]:
        x = D.BlobConf("x", shape=(2, 2), dtype=flow.float, codec=D.RawCodec())
        y = D.BlobConf("y", shape=(1, 1), dtype=flow.int32, codec=D.RawCodec())
        return D.decode_ofrecord(str(tmp_path), (x, y), data_part_num=1, batch_size=3)

    x, y = decode()
    np.testing.assert_array_equal(x, xs[:3].reshape(3, 2, 2))
    np.testing.assert_array_equal(y, ys[:3].reshape(3, 1, 1))
    x, y = decode()
    np.testing.assert_array_equal(y.ravel(), [3, 4, 0])


def test_reader_and_decoder_errors(tmp_path):
    _numeric_dataset(tmp_path, parts=1, per_part=2, width=1)

    @flow.global_function(type="predict")
    def missing_part() -> tp.Numpy:
        records = D.ofrecord_reader(str(tmp_path), batch_size=2, data_part_num=2)
        return D.OFRecordRawDecoder(records, "x", shape=(1,), dtype=flow.float)

    with pytest.raises(FileNotFoundError, match="part-1"):
        missing_part()

    flow.clear_default_session()

    @flow.global_function(type="predict")
    def not_records(x: tp.Numpy.Placeholder((2, 1))) -> tp.Numpy:
        return D.OFRecordRawDecoder(x, "x", shape=(1,), dtype=flow.float)

    with pytest.raises(TypeError, match="must have dtype record"):
        not_records(np.zeros((2, 1), np.float32))


def test_split_reader_needs_a_batch_divisible_by_the_devices(tmp_path):
    flow.config.gpu_device_num(2)
    _numeric_dataset(tmp_path, parts=2, per_part=3, width=1)
    with pytest.raises(ValueError, match="batch_size 5 is not divisible by the 2 devices"):
        _reader_job(tmp_path, batch=5, parts=2, width=1)()


# --- training from decoded features ------------------------------------------------------------------------------
@pytest.mark.parametrize("devices", [1, 2])
def test_dense_layer_trains_on_decoded_features(tmp_path, devices):
    """A tiny version of the docs' img_to_ofrecord/lenet_train: reader -> raw decoders -> dense -> mean loss."""
    flow.config.gpu_device_num(devices)
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((32, 6)).astype(np.float32)
    labels = (xs @ rng.standard_normal(6) > 0).astype(np.int32)
    for p in range(2):
        ofrecord_io.write_part(str(tmp_path / ("part-%d" % p)),
                               [pb.OFRecord(feature={"x": pb.Feature(float_list=pb.FloatList(value=xs[i].tolist())),
                                                     "labels": pb.Feature(int32_list=pb.Int32List(value=[labels[i]]))})
                                for i in range(16 * p, 16 * p + 16)])

    @flow.global_function(type="train")
    def train_job() -> tp.Numpy:
        records = D.ofrecord_reader(str(tmp_path), batch_size=8, data_part_num=2, random_shuffle=True)
        x = D.OFRecordRawDecoder(records, "x", shape=(6,), dtype=flow.float)
        y = D.OFRecordRawDecoder(records, "labels", shape=(1,), dtype=flow.int32)
        logits = flow.layers.dense(x, 2, kernel_initializer=flow.zeros_initializer(), name="dense")
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.05])).minimize(loss)
        return loss

    losses = [float(train_job()[0]) for _ in range(40)]
    assert losses[0] == pytest.approx(np.log(2.0), rel=1e-6)  # zero weights: uniform over 2 classes
    assert np.mean(losses[-5:]) < 0.5 * losses[0]


# --- CoinFlip ----------------------------------------------------------------------------------------------------
def _coin_job(batch, probability, seed):
    @flow.global_function(type="predict")
    def flip() -> tp.Numpy:
        return D.CoinFlip(batch_size=batch, probability=probability, seed=seed)

    return flip


def test_coin_flip_statistics():
    flip = _coin_job(4000, 0.3, None)
    draws = [flip() for _ in range(3)]
    for d in draws:
        assert d.dtype == np.int8 and d.shape == (4000,)
        assert set(np.unique(d)) <= {0, 1}
        assert abs(d.mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 4000)
    assert not np.array_equal(draws[0], draws[1])  # fresh draws every call
    joined = np.concatenate(draws).astype(np.float64)
    # independent draws: neighbouring flips uncorrelated
    assert abs(np.corrcoef(joined[:-1], joined[1:])[0, 1]) < 4 / np.sqrt(joined.size)


def test_coin_flip_is_seeded_and_independent_of_the_device_count():
    runs = []
    for devices in (1, 2, 3):
        flow.clear_default_session()
        flow.config.gpu_device_num(devices)
        flip = _coin_job(7, 0.5, seed=11)
        runs.append(np.stack([flip() for _ in range(3)]))
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])


# --- crop, mirror, normalize ---------------------------------------------------------------------------------
def _cmn_reference(images, mirror, crop_h, crop_w, pos_y, pos_x, mean, std, layout):
    n, h, w, c = images.shape
    y0, x0 = int((h - crop_h) * pos_y), int((w - crop_w) * pos_x)
    out = images[:, y0:y0 + crop_h, x0:x0 + crop_w, :].astype(np.float64)
    out[mirror == 1] = out[mirror == 1][:, :, ::-1, :]
    out = (out - np.asarray(mean)) / np.asarray(std)
    return out.transpose(0, 3, 1, 2) if layout == "NCHW" else out


@pytest.mark.parametrize("devices", [1, 2])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_crop_mirror_normalize_from_uint8(devices, layout):
    flow.config.gpu_device_num(devices)
    rng = np.random.default_rng(5)
    images = rng.integers(0, 256, (3, 6, 7, 3)).astype(np.uint8)
    mirror = np.array([1, 0, 1], np.int8)
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 5.0]

    @flow.global_function(type="predict")
    def cmn(x: tp.Numpy.Placeholder((3, 6, 7, 3), dtype=flow.uint8),
            m: tp.Numpy.Placeholder((3,), dtype=flow.int8)) -> tp.Numpy:
        return D.CropMirrorNormalize(x, mirror_blob=m, color_space="RGB", output_layout=layout, crop_h=4, crop_w=5,
                                     crop_pos_y=0.5, crop_pos_x=0.3, mean=mean, std=std)

    out = cmn(images, mirror)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _cmn_reference(images, mirror, 4, 5, 0.5, 0.3, mean, std, layout), rtol=1e-6)


def test_crop_mirror_normalize_arguments_are_checked():
    @flow.global_function(type="predict")
    def bad(x: tp.Numpy.Placeholder((2, 4, 4, 1), dtype=flow.uint8)) -> tp.Numpy:
        return D.CropMirrorNormalize(x, color_space="RGB")

    with pytest.raises(ValueError, match=r"must be \(N, H, W, 3\)"):
        bad(np.zeros((2, 4, 4, 1), np.uint8))


# --- the SBP validator's cases for these ops ------------------------------------------------------------------
def test_validation_cases_pass_and_cover_every_data_op():
    data_types = {"ofrecord_reader", "ofrecord_raw_decoder", "ofrecord_bytes_decoder", "ofrecord_image_decoder",
                  "ofrecord_image_decoder_random_crop", "image_decode", "image_random_crop", "image_resize_to_fixed",
                  "image_resize_keep_aspect_ratio", "crop_mirror_normalize_from_uint8",
                  "crop_mirror_normalize_from_tensorbuffer", "coin_flip"}
    assert data_types <= set(validate.EXAMPLES) | set(validate.WITHOUT_EXAMPLES)
    for op_type in sorted(data_types & set(validate.EXAMPLES)):
        checks = validate.check_examples(op_type)
        assert all(c.ok for c in checks), "\n".join(str(c) for c in checks if not c.ok)
        assert any(c.devices > 1 for c in checks)


# --- images (Pillow) -------------------------------------------------------------------------------------------
def _png(pixels):
    image_mod = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    image_mod.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def _image_dataset(folder, images, labels=None):
    records = []
    for i, pixels in enumerate(images):
        feature = {"images": pb.Feature(bytes_list=pb.BytesList(value=[_png(pixels)])),
                   "labels": pb.Feature(int32_list=pb.Int32List(value=[labels[i] if labels is not None else i]))}
        records.append(pb.OFRecord(feature=feature))
    ofrecord_io.write_part(str(folder / "part-0"), records)


def test_image_decode_resize_crop_mirror_normalize(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.default_rng(2)
    images = [rng.integers(0, 256, (8, 12, 3)).astype(np.uint8) for _ in range(3)]
    _image_dataset(tmp_path, images)
    mean, std = [100.0, 110.0, 120.0], [50.0, 60.0, 70.0]

    @flow.global_function(type="predict")
    def pipeline() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        records = D.ofrecord_reader(str(tmp_path), batch_size=3)
        decoded = D.OFRecordImageDecoder(records, "images", color_space="BGR")
        resized, scale, new_size = D.Resize(decoded, target_size=(6, 4))
        assert new_size is None
        flips = D.CoinFlip(batch_size=3, seed=4)
        normal = D.CropMirrorNormalize(resized, mirror_blob=flips, color_space="BGR", crop_h=3, crop_w=4,
                                       mean=mean, std=std)
        return decoded, resized, scale, flips, normal

    decoded, resized, scale, flips, normal = pipeline()
    assert decoded.dtype == object and decoded.shape == (3,)
    for got, want in zip(decoded, images):
        np.testing.assert_array_equal(got, want[:, :, ::-1])  # PNG is lossless; BGR order
    bgr = np.stack([im[:, :, ::-1] for im in images]).astype(np.float64)
    halves = np.rint(bgr.reshape(3, 4, 2, 6, 2, 3).mean(axis=(2, 4)))  # exact 2x shrink: area = 2x2 block means
    assert resized.dtype == np.uint8 and resized.shape == (3, 4, 6, 3)
    np.testing.assert_array_equal(resized, halves)
    np.testing.assert_array_equal(scale, np.full((3, 2), 0.5, np.float32))
    assert normal.shape == (3, 3, 3, 4)
    np.testing.assert_allclose(normal, _cmn_reference(resized, flips, 3, 4, 0.5, 0.5, mean, std, "NCHW"), rtol=1e-6)


def test_random_crop_decoder_cuts_windows_of_the_images(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 256, (10, 14)).astype(np.uint8) for _ in range(4)]
    _image_dataset(tmp_path, images)

    def run():
        @flow.global_function(type="predict")
        def crops() -> tp.Numpy:
            records = D.ofrecord_reader(str(tmp_path), batch_size=4)
            return D.OFRecordImageDecoderRandomCrop(records, "images", color_space="GRAY", seed=9,
                                                    random_area=(0.3, 0.6), name="crop")
        return [crops() for _ in range(2)]

    first = run()
    for batch in first:
        for crop, image in zip(batch, images):
            h, w = crop.shape[:2]
            assert crop.shape[2] == 1 and 0.25 < h * w / image.size < 0.65
            windows = [image[y:y + h, x:x + w] for y in range(11 - h) for x in range(15 - w)]
            assert any(np.array_equal(crop[:, :, 0], win) for win in windows)
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(first[0], first[1]))
    flow.clear_default_session()
    for a, b in zip(first, run()):  # seeded: the same windows in a new session
        assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_resize_keep_aspect_ratio_and_the_deprecated_form(tmp_path, capsys):
    pytest.importorskip("PIL")
    images = [np.full((6, 9, 3), 40, np.uint8), np.full((10, 5, 3), 200, np.uint8)]
    _image_dataset(tmp_path, images)

    @flow.global_function(type="predict")
    def resize() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        decoded = D.OFRecordImageDecoder(D.ofrecord_reader(str(tmp_path), batch_size=2), "images",
                                         color_space="RGB")
        kept, scale, new_size = D.Resize(decoded, target_size=4, keep_aspect_ratio=True)
        fixed = D.Resize(decoded, resize_x=7, resize_y=3, color_space="RGB")
        return kept, scale, new_size, fixed

    kept, scale, new_size, fixed = resize()
    np.testing.assert_array_equal(new_size, [[6, 4], [4, 8]])  # (w, h): shorter side 4
    np.testing.assert_allclose(scale, [[6 / 9, 4 / 6], [4 / 5, 8 / 10]], rtol=1e-6)
    assert [k.shape for k in kept] == [(4, 6, 3), (8, 4, 3)]
    assert np.all(kept[0] == 40) and np.all(kept[1] == 200)
    assert fixed.shape == (2, 3, 7, 3) and np.all(fixed[0] == 40) and np.all(fixed[1] == 200)
    assert "resize_x and resize_y has been deprecated" in capsys.readouterr().out


def test_lenet_style_training_from_png_records(tmp_path):
    """The docs' img_to_ofrecord/lenet_train pipeline (GRAY decode with random crop, Resize to a fixed size with
    channels=1, normalize by 255) feeding a tiny conv net whose loss falls."""
    pytest.importorskip("PIL")
    rng = np.random.default_rng(0)
    labels = np.arange(12) % 2
    images = [(rng.integers(0, 60, (14, 16)) + 150 * lab).astype(np.uint8) for lab in labels]
    _image_dataset(tmp_path, images, labels)

    @flow.global_function(type="train")
    def train_job() -> tp.Numpy:
        records = D.ofrecord_reader(str(tmp_path), batch_size=4, random_shuffle=True, shuffle_after_epoch=True)
        image = D.OFRecordImageDecoderRandomCrop(records, "images", color_space="GRAY", random_area=(0.95, 1.0),
                                                 random_aspect_ratio=(0.99, 1.0))
        label = D.OFRecordRawDecoder(records, "labels", shape=(1,), dtype=flow.int32)
        rsz, scale, new_size = D.Resize(image, target_size=(8, 8), channels=1)
        normal = D.CropMirrorNormalize(rsz, color_space="GRAY", mean=[0.0], std=[255.0], output_dtype=flow.float)
        conv = flow.layers.conv2d(normal, 2, 3, padding="SAME", activation=flow.nn.relu, name="conv1")
        logits = flow.layers.dense(flow.reshape(conv, [conv.shape[0], -1]), 2, name="dense")
        loss = flow.math.reduce_mean(flow.nn.sparse_softmax_cross_entropy_with_logits(label, logits))
        flow.optimizer.Adam(flow.optimizer.PiecewiseConstantScheduler([], [0.02])).minimize(loss)
        return loss

    losses = [float(train_job()[0]) for _ in range(30)]
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def test_bytes_decoder_image_decode_random_crop_and_target_resize(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.default_rng(4)
    images = [rng.integers(0, 256, (9, 6, 3)).astype(np.uint8), rng.integers(0, 256, (5, 10, 3)).astype(np.uint8)]
    _image_dataset(tmp_path, images)

    @flow.global_function(type="predict")
    def pipeline() -> Tuple[tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy, tp.Numpy]:
        raw = D.OFRecordBytesDecoder(D.ofrecord_reader(str(tmp_path), batch_size=2), "images")
        decoded = D.decode(raw, color_space="RGB")
        cropped = D.random_crop(decoded, random_area=(1.0, 1.0), random_aspect_ratio=(0.5, 2.0))
        resized, new_size, scale = D.target_resize(decoded, target_size=3)
        return raw, decoded, cropped, resized, new_size

    raw, decoded, cropped, resized, new_size = pipeline()
    assert raw[0].dtype == np.uint8 and raw[0].tobytes() == _png(images[0])
    for got, want in zip(decoded, images):
        np.testing.assert_array_equal(got, want)
    # all of the area: a window of (nearly, after rounding) the whole image
    h, w = cropped[0].shape[:2]
    assert h * w >= 0.85 * 54 and any(np.array_equal(cropped[0], images[0][y:y + h, x:x + w])
                                      for y in range(10 - h) for x in range(7 - w))
    # 5x10 (ratio 2.0, the top of the range): a fitting draw of area 50 and the fallback are both the whole image
    np.testing.assert_array_equal(cropped[1], images[1])
    np.testing.assert_array_equal(new_size, [[3, 4], [6, 3]])  # shorter side 3: 9x6 -> 4.5 rounds to even 4
    assert [r.shape for r in resized] == [(4, 3, 3), (3, 6, 3)]
