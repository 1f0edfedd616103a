"""OneFlow 0.9's data-pipeline modules (nn.OFRecordReader, nn.OFRecordRawDecoder, nn.OFRecordBytesDecoder,
nn.OFRecordImageDecoder, nn.OFRecordImageDecoderRandomCrop, nn.CoinFlip, nn.CropMirrorNormalize, nn.COCOReader,
nn.OneRecReader, flow.decode_onerec) and nn.image (Resize, batch_align, decode, flip, normalize) on real files:
OFRecord part files of JPEG images written here and read back, decoded pixels against Pillow's own decoding,
resizes / crops / normalization against numpy written here; the global readers on one rank and (under mpiexec)
split over two ranks, each reading its share; nn.Graph; OneFlow's errors."""
import io
import os
import re
import sys

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat.core.record import record_pb2 as pb
from oneflow_compat.datasets import ofrecord_io
from oneflow_compat.datasets import onerec_io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_legacy_coco's dataset, test_global_mpi's mpi
nn = flow.nn
PIL = pytest.importorskip("PIL.Image")
SIZES = [(8, 12), (10, 6), (12, 12), (6, 8)]


def _jpeg(pixels):
    buf = io.BytesIO()
    PIL.fromarray(pixels).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _pil_decode(data, color_space="BGR"):
    """The reference decoding: Pillow's own, channels reordered (BGR) or converted (GRAY) as OneFlow's."""
    image = PIL.open(io.BytesIO(data))
    if color_space == "GRAY":
        return np.asarray(image.convert("L"))[:, :, None]
    rgb = np.asarray(image.convert("RGB"))
    return rgb[:, :, ::-1] if color_space == "BGR" else rgb


@pytest.fixture
def jpeg_dataset(tmp_path):
    """One part file of records {encoded: JPEG bytes, class/label: int32, x: 3 floats}; returns (dir, jpegs, xs)."""
    rng = np.random.default_rng(0)
    jpegs = [_jpeg(rng.integers(0, 256, (h, w, 3)).astype(np.uint8)) for h, w in SIZES]
    xs = rng.standard_normal((len(SIZES), 3)).astype(np.float32)
    records = [pb.OFRecord(feature={"encoded": pb.Feature(bytes_list=pb.BytesList(value=[b])),
                                    "class/label": pb.Feature(int32_list=pb.Int32List(value=[i])),
                                    "x": pb.Feature(float_list=pb.FloatList(value=xs[i].tolist()))})
               for i, b in enumerate(jpegs)]
    ofrecord_io.write_part(str(tmp_path / "part-00000"), records)
    return str(tmp_path), jpegs, xs


def _numeric_parts(folder, parts=2, per_part=3):
    for p in range(parts):
        ofrecord_io.write_part(str(folder / ("part-%d" % p)), [
            pb.OFRecord(feature={"y": pb.Feature(int64_list=pb.Int64List(value=[p * per_part + i]))})
            for i in range(per_part)])


# --- reader and decoders -------------------------------------------------------------------------------------------
def test_reader_and_raw_decoder_read_the_records_batch_after_batch(jpeg_dataset):
    folder, _, xs = jpeg_dataset
    reader = nn.OFRecordReader(folder, batch_size=3, part_name_suffix_length=5)
    other = nn.OFRecordReader(folder, batch_size=2, part_name_suffix_length=5)  # a stream of its own
    label = nn.OFRecordRawDecoder("class/label", shape=(1,), dtype=flow.int32)
    x = nn.OFRecordRawDecoder("x", shape=(3,), dtype=flow.float)
    stream = [0, 1, 2, 3, 0, 1, 2, 3, 0]
    assert other().shape == (2,)
    for call in range(3):
        records = reader()
        assert records.shape == (3,) and not records.is_global
        got = label(records)
        assert got.dtype == flow.int32 and tuple(got.shape) == (3, 1)
        rows = stream[3 * call:3 * call + 3]
        np.testing.assert_array_equal(got.numpy().ravel(), rows)
        np.testing.assert_array_equal(x(records).numpy(), xs[rows])
    # a shorter list with truncate (zero padding), as OneFlow's raw decoder
    padded = nn.OFRecordRawDecoder("x", shape=(5,), dtype=flow.float, truncate=True)(reader())
    np.testing.assert_array_equal(padded.numpy()[:, 3:], 0)


def test_bytes_and_image_decoders_give_the_encoded_and_decoded_images(jpeg_dataset):
    folder, jpegs, _ = jpeg_dataset
    records = nn.OFRecordReader(folder, batch_size=4, part_name_suffix_length=5)()
    raw = nn.OFRecordBytesDecoder("encoded")(records)
    assert raw.dtype == flow.tensor_buffer and raw.shape == (4,)
    assert raw.numpy()[0].dtype == np.uint8 and raw.numpy()[0][:2].tolist() == [255, 216]  # as OneFlow's example
    assert [b.tobytes() for b in raw.numpy()] == jpegs
    assert repr(raw) == "tensor([...], size=(4,), dtype=oneflow.tensor_buffer)"  # one array per row: no numbers
    for color_space in ("BGR", "RGB", "GRAY"):
        images = nn.OFRecordImageDecoder("encoded", color_space=color_space)(records).numpy()
        for got, data in zip(images, jpegs):
            assert got.dtype == np.uint8
            np.testing.assert_array_equal(got, _pil_decode(data, color_space))
        decoded = nn.image.decode(color_space=color_space)(raw).numpy()
        for got, want in zip(decoded, images):
            np.testing.assert_array_equal(got, want)
    as_float = nn.image.decode(dtype=flow.float)(raw).numpy()
    assert as_float[1].dtype == np.float32
    np.testing.assert_array_equal(as_float[1], _pil_decode(jpegs[1]).astype(np.float32))


def _windows_of(crop, image):
    """Whether `crop` is a window of `image` (a random crop keeps the pixels)."""
    h, w = crop.shape[:2]
    return any(np.array_equal(image[y:y + h, x:x + w], crop)
               for y in range(image.shape[0] - h + 1) for x in range(image.shape[1] - w + 1))


def test_random_crop_decoder_cuts_windows_with_its_seed(jpeg_dataset):
    folder, jpegs, _ = jpeg_dataset
    records = nn.OFRecordReader(folder, batch_size=4, part_name_suffix_length=5)()
    crop = nn.OFRecordImageDecoderRandomCrop("encoded", random_seed=3, random_area=[0.3, 0.6])
    first, second = crop(records).numpy(), crop(records).numpy()
    for got, data in zip(first, jpegs):
        image = _pil_decode(data)
        assert 0.2 <= got.shape[0] * got.shape[1] / (image.shape[0] * image.shape[1]) <= 0.7
        assert _windows_of(got, image)
    same = nn.OFRecordImageDecoderRandomCrop("encoded", random_seed=3, random_area=[0.3, 0.6])(records).numpy()
    assert all(np.array_equal(a, b) for a, b in zip(first, same))  # the seed replays the windows
    assert not all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(first, second))  # new draws


def test_coin_flip_draws_with_its_probability_and_seed():
    flips = nn.CoinFlip(batch_size=4000, random_seed=1, probability=0.3)()
    assert flips.dtype == flow.int8 and tuple(flips.shape) == (4000,)
    assert set(np.unique(flips.numpy())) <= {0, 1} and abs(flips.numpy().mean() - 0.3) < 0.03
    a, b = nn.CoinFlip(batch_size=16, random_seed=9), nn.CoinFlip(batch_size=16, random_seed=9)
    np.testing.assert_array_equal(a().numpy(), b().numpy())
    np.testing.assert_array_equal(nn.CoinFlip(batch_size=5, probability=1.0)().numpy(), 1)


def _cmn_reference(images, flips, crop_h, crop_w, pos_y, pos_x, mean, std):
    out = []
    for image, flip in zip(images, flips):
        h, w = image.shape[:2]
        y0, x0 = int(np.float32(h - crop_h) * np.float32(pos_y)), int(np.float32(w - crop_w) * np.float32(pos_x))
        crop = image[y0:y0 + crop_h, x0:x0 + crop_w].astype(np.float32)
        if flip:
            crop = crop[:, ::-1]
        out.append(((crop - np.float32(mean)) / np.float32(std)).transpose(2, 0, 1))
    return np.stack(out)


def test_crop_mirror_normalize_on_tensor_buffers_and_uint8_batches(jpeg_dataset, monkeypatch, capsys):
    folder, jpegs, _ = jpeg_dataset
    records = nn.OFRecordReader(folder, batch_size=4, part_name_suffix_length=5)()
    images = nn.OFRecordImageDecoder("encoded")(records)
    flips = flow.tensor(np.array([1, 0, 1, 0], np.int8))
    mean, std = [100.0, 110.0, 120.0], [50.0, 60.0, 70.0]
    cmn = nn.CropMirrorNormalize(crop_h=5, crop_w=4, crop_pos_y=0.25, crop_pos_x=0.75, mean=mean, std=std)
    out = cmn(images, flips)
    assert out.dtype == flow.float32 and tuple(out.shape) == (4, 3, 5, 4)
    want = _cmn_reference([_pil_decode(j) for j in jpegs], [1, 0, 1, 0], 5, 4, 0.25, 0.75, mean, std)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    # a static uint8 NHWC batch (nn.image.Resize's), without mirror; the whole image when no crop is given
    fixed, _, _ = nn.image.Resize(target_size=(6, 4))(images)
    whole = nn.CropMirrorNormalize(mean=mean, std=std)(fixed)
    np.testing.assert_allclose(whole.numpy(), ((fixed.numpy().astype(np.float32) - mean) / std).transpose(0, 3, 1, 2),
                               rtol=1e-5, atol=1e-5)
    # OneFlow 0.9: output_layout is deprecated (a warning), ONEFLOW_ENABLE_NHWC=1 chooses NHWC
    nn.CropMirrorNormalize(output_layout="NHWC")
    assert "output_layout has been deprecated" in capsys.readouterr().out
    monkeypatch.setenv("ONEFLOW_ENABLE_NHWC", "1")
    assert tuple(nn.CropMirrorNormalize(crop_h=2, crop_w=3)(fixed).shape) == (4, 2, 3, 3)
    with pytest.raises(NotImplementedError, match="^oneflow.nn.CropMirrorNormalize: input must be a tensor buffer or "
                                                  "uint8, got dtype oneflow.float32$"):
        cmn(flow.randn(2, 4, 4, 3))
    assert "NOT support input dtype" in capsys.readouterr().out


# --- nn.image --------------------------------------------------------------------------------------------------------
def test_image_resize_fixed_and_keeping_the_aspect_ratio(jpeg_dataset):
    folder, jpegs, _ = jpeg_dataset
    images = nn.OFRecordImageDecoder("encoded")(nn.OFRecordReader(folder, batch_size=4,
                                                                  part_name_suffix_length=5)())
    ref = [_pil_decode(j).astype(np.float64) for j in jpegs]
    # SIZES[2] (12, 12) -> (6, 6) and SIZES[0] (8, 12) -> (4, 6): exact 2x shrinks, area means of 2x2 blocks
    out, scale, new_size = nn.image.Resize(target_size=(6, 4))(images)
    assert new_size is None and out.dtype == flow.uint8 and tuple(out.shape) == (4, 4, 6, 3)
    np.testing.assert_array_equal(out.numpy()[0], np.rint(ref[0].reshape(4, 2, 6, 2, 3).mean(axis=(1, 3))))
    np.testing.assert_allclose(scale.numpy(), [[6 / w, 4 / h] for h, w in SIZES], rtol=1e-6)
    out, scale, new_size = nn.image.Resize(target_size=6, keep_aspect_ratio=True)(images)
    assert out.dtype == flow.tensor_buffer and new_size.dtype == flow.int32
    # the shorter side becomes 6: (w, h) of (12, 8) -> (9, 6), (6, 10) -> (6, 10), (12, 12) -> (6, 6), (8, 6) -> (8, 6)
    want = [(9, 6), (6, 10), (6, 6), (8, 6)]
    np.testing.assert_array_equal(new_size.numpy(), want)
    assert [a.shape[:2] for a in out.numpy()] == [(h, w) for w, h in want]
    np.testing.assert_allclose(scale.numpy(), [[nw / w, nh / h] for (nw, nh), (h, w) in zip(want, SIZES)],
                               rtol=1e-6)
    np.testing.assert_array_equal(out.numpy()[2], np.rint(ref[2].reshape(6, 2, 6, 2, 3).mean(axis=(1, 3))))
    with pytest.raises(ValueError, match="target_size must be an int when keep_aspect_ratio is True"):
        nn.image.Resize(target_size=(4, 4), keep_aspect_ratio=True)
    with pytest.raises(ValueError, match="target_size must be a form like \\(width, height\\)"):
        nn.image.Resize(target_size=4)


def test_image_flip_normalize_and_batch_align():
    arr = np.array([[[[1, 2, 3], [3, 2, 1]], [[2, 3, 4], [4, 3, 2]]],
                    [[[3, 4, 5], [5, 4, 3]], [[4, 5, 6], [6, 5, 4]]]])
    buffers = flow.tensor_to_tensor_buffer(flow.Tensor(arr, device=flow.device("cpu")), instance_dims=3)
    assert buffers.dtype == flow.tensor_buffer and buffers.shape == (2,)
    # OneFlow's example: flip code 1 mirrors each row
    output = nn.image.flip()(buffers, flow.ones(2, dtype=flow.int8)).numpy()
    np.testing.assert_array_equal(output[0], arr[0][:, ::-1].astype(np.float32))
    np.testing.assert_array_equal(output[1], arr[1][:, ::-1].astype(np.float32))
    codes = nn.image.flip()(buffers, flow.tensor(np.array([2, 3], np.int8))).numpy()
    np.testing.assert_array_equal(codes[0], arr[0][::-1])
    np.testing.assert_array_equal(codes[1], arr[1][::-1, ::-1])
    np.testing.assert_array_equal(flow._C.image_flip(buffers, flow.zeros(2, dtype=flow.int8)).numpy()[1], arr[1])
    std, mean = [2.0, 4.0, 5.0], [1.0, 2.0, 3.0]
    normal = nn.image.normalize(std, mean)(buffers).numpy()
    np.testing.assert_allclose(normal[1], (arr[1] - np.float32(mean)) / np.float32(std), rtol=1e-6)
    back = flow.tensor_buffer_to_tensor(buffers, dtype=flow.float32, instance_shape=(2, 2, 3))
    np.testing.assert_array_equal(back.numpy(), arr.astype(np.float32))
    assert flow._C.tensor_to_tensor_buffer is flow.tensor_to_tensor_buffer.modern


def test_image_batch_align_pads_images_of_several_sizes(jpeg_dataset):
    folder, jpegs, _ = jpeg_dataset
    images = nn.OFRecordImageDecoder("encoded")(nn.OFRecordReader(folder, batch_size=4,
                                                                  part_name_suffix_length=5)())
    aligned = nn.image.batch_align(shape=(16, 16, 3), dtype=flow.float, alignment=8)(images)
    assert aligned.dtype == flow.float32 and tuple(aligned.shape) == (4, 16, 16, 3)
    want = np.zeros((4, 16, 16, 3), np.float32)
    for i, data in enumerate(jpegs):
        image = _pil_decode(data)
        want[i, :image.shape[0], :image.shape[1]] = image
    np.testing.assert_array_equal(aligned.numpy(), want)
    # the static shape stays, whatever the alignment
    assert tuple(nn.image.batch_align(shape=(16, 16, 3), dtype=flow.uint8, alignment=4)(images).shape) == \
        (4, 16, 16, 3)
    with pytest.raises(ValueError, match="the batch's images need 16x16, the static shape allows 12x16"):
        nn.image.batch_align(shape=(12, 16, 3), dtype=flow.uint8, alignment=8)(images).numpy()
    with pytest.raises(ValueError, match="alignment must be 0 or a power of 2, got 3"):
        nn.image.batch_align(shape=(16, 16, 3), dtype=flow.uint8, alignment=3)(images)


# --- OneRec and COCO -------------------------------------------------------------------------------------------------
def _onerec_files(tmp_path, n_files=2, per_file=4):
    files = []
    for f in range(n_files):
        path = str(tmp_path / ("part-%d.onerec" % f))
        onerec_io.write_onerec(path, [{"labels": np.array([f * 100 + i], np.int32),
                                       "dense_fields": np.full(3, f + i / 10, np.float32)} for i in range(per_file)])
        files.append(path)
    return files


def test_onerec_reader_and_decode_onerec(tmp_path):
    files = _onerec_files(tmp_path)
    reader = nn.OneRecReader(files, batch_size=3, shuffle=False, shuffle_mode="batch")
    data = reader()
    assert data.dtype == flow.tensor_buffer and data.shape == (3,)
    labels = flow.decode_onerec(data, key="labels", dtype=flow.int32, shape=(1,))
    dense = flow.decode_onerec(data, key="dense_fields", dtype=flow.float, shape=(3,))
    assert labels.dtype == flow.int32 and tuple(labels.shape) == (3, 1)
    np.testing.assert_array_equal(labels.numpy().ravel(), [0, 1, 2])
    np.testing.assert_allclose(dense.numpy(), np.repeat([[0.0], [0.1], [0.2]], 3, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(flow._C.decode_onerec(reader(), "labels", flow.int32, (1,)).numpy().ravel(),
                                  [3, 100, 101])
    with pytest.raises(ValueError, match="shuffle_mode should be 'batch' or 'instance'"):
        nn.OneRecReader(files, batch_size=3, shuffle=True, shuffle_mode="global")
    with pytest.raises(TypeError, match="decode_onerec: the input must have dtype oneflow.tensor_buffer"):
        flow.decode_onerec(labels, key="labels", dtype=flow.int32, shape=(1,))


def test_coco_reader_reuses_the_legacy_reader(tmp_path_factory):
    from test_legacy_coco import SIZES as COCO_SIZES, _reference, coco

    anno_file, image_dir, pixels, annos = coco.__wrapped__(tmp_path_factory)
    reader = nn.COCOReader(anno_file, image_dir, batch_size=2, shuffle=False, group_by_aspect_ratio=False)
    order = [1, 2, 3, 4, 6]  # image 5 has no usable box: removed
    for call, rows in enumerate([[0, 1], [2, 3], [4, 0]]):
        image, image_id, image_size, bbox, label, segm, segm_index = reader()
        ids = [order[i] for i in rows]
        assert image.dtype == flow.tensor_buffer and image_id.dtype == flow.int64
        np.testing.assert_array_equal(image_id.numpy(), ids)
        np.testing.assert_array_equal(image_size.numpy(), [COCO_SIZES[i] for i in ids])
        decoded = nn.image.decode()(image).numpy()
        for row, i in enumerate(ids):
            b, lab, pts, idx = _reference(i, annos)
            np.testing.assert_array_equal(decoded[row], pixels[i][:, :, ::-1])
            np.testing.assert_array_equal(bbox.numpy()[row], b)
            np.testing.assert_array_equal(label.numpy()[row], lab)
            np.testing.assert_array_equal(segm.numpy()[row], pts)
            np.testing.assert_array_equal(segm_index.numpy()[row], idx)
    with pytest.raises(FileNotFoundError, match="COCOReader: annotation_file .*missing.json not found"):
        nn.COCOReader(str(tmp_path_factory.getbasetemp() / "missing.json"), image_dir, batch_size=2)


# --- global tensors, nn.Graph, errors --------------------------------------------------------------------------------
def test_global_readers_on_one_rank_give_the_local_batches(tmp_path):
    _numeric_parts(tmp_path)
    p = flow.placement("cpu", ranks=[0])
    decode = nn.OFRecordRawDecoder("y", shape=(), dtype=flow.int64)
    for sbp in (flow.sbp.split(0), [flow.sbp.broadcast]):
        reader = nn.OFRecordReader(str(tmp_path), batch_size=4, data_part_num=2, placement=p, sbp=sbp)
        records = reader()
        assert records.is_global and records.placement == p
        assert records.sbp == ((sbp if not isinstance(sbp, list) else sbp[0]),)
        y = decode(records)
        assert y.is_global and y.placement == p
        np.testing.assert_array_equal(y.numpy(), [0, 1, 2, 3])
        np.testing.assert_array_equal(decode(reader()).numpy(), [4, 5, 0, 1])
    flips = nn.CoinFlip(batch_size=6, random_seed=2, placement=p, sbp=flow.sbp.split(0))()
    assert flips.is_global
    np.testing.assert_array_equal(flips.numpy(), nn.CoinFlip(batch_size=6, random_seed=2)().numpy())


def test_readers_in_a_graph_continue_their_stream(tmp_path):
    _numeric_parts(tmp_path)

    class Pipeline(nn.Graph):
        def __init__(self):
            super().__init__()
            self.reader = nn.OFRecordReader(str(tmp_path), batch_size=4, data_part_num=2)
            self.decode = nn.OFRecordRawDecoder("y", shape=(), dtype=flow.int64)
            self.flip = nn.CoinFlip(batch_size=4, random_seed=7)

        def build(self):
            return self.decode(self.reader()), self.flip()

    graph = Pipeline()
    (y0, f0), (y1, _) = graph(), graph()
    np.testing.assert_array_equal(y0.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(y1.numpy(), [4, 5, 0, 1])
    np.testing.assert_array_equal(f0.numpy(), nn.CoinFlip(batch_size=4, random_seed=7)().numpy())


def test_bad_arguments_are_named(tmp_path, capsys):
    _numeric_parts(tmp_path, parts=1)
    with pytest.raises(Exception, match=re.escape(str(tmp_path / "part-1"))):
        nn.OFRecordReader(str(tmp_path), data_part_num=2)
    p = flow.placement("cpu", ranks=[0])
    with pytest.raises(ValueError, match="The 'device' and 'placement' arguments can't be specified at the same"):
        nn.OFRecordReader(str(tmp_path), placement=p, sbp=flow.sbp.split(0), device="cpu")
    with pytest.raises(ValueError, match="invalid 'sbp' argument: None"):
        nn.CoinFlip(placement=p)
    with pytest.raises(ValueError, match="sbp must be flow.sbp.split\\(0\\) or flow.sbp.broadcast"):
        nn.CoinFlip(placement=p, sbp=flow.sbp.split(1))
    with pytest.raises(ValueError, match="Number of SBP's dimensions of sbp and number of placement ranks'"):
        nn.CoinFlip(placement=p, sbp=[flow.sbp.split(0), flow.sbp.broadcast])
    records = nn.OFRecordReader(str(tmp_path), batch_size=2, name="old")()
    assert "WARNING: name has been deprecated and has NO effect." in capsys.readouterr().out
    with pytest.raises(TypeError, match="OFRecordRawDecoder: the input must have dtype oneflow.record, got "
                                        "oneflow.float32"):
        nn.OFRecordRawDecoder("y", shape=(), dtype=flow.int64)(flow.randn(2))
    with pytest.raises(ValueError, match="color_space must be 'BGR', 'RGB' or 'GRAY', got 'YUV'"):
        nn.OFRecordImageDecoder("encoded", color_space="YUV")
    with pytest.raises(Exception, match="feature 'nope'|nope"):
        nn.OFRecordRawDecoder("nope", shape=(), dtype=flow.int64)(records).numpy()


def test_two_ranks_each_read_their_share(tmp_path_factory):
    pytest.importorskip("mpi4py")
    from test_global_mpi import MPIEXEC, SCRIPTS, mpi

    if not MPIEXEC.exists():
        pytest.skip("no mpiexec beside %s" % sys.executable)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        _numeric_parts(folder)
        files = _onerec_files(folder)
        from test_legacy_coco import coco

        anno_file, image_dir, _, _ = coco.__wrapped__(tmp_path_factory)
        done = mpi(2, SCRIPTS / "nn_data_global.py", str(folder), anno_file, image_dir, *files, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert done.stdout.rstrip().endswith("DONE"), done.stdout[-2000:]
    assert set(re.findall(r"^OK (\S+)$", done.stdout, re.M)) == {
        "reader_split_call0", "reader_split_call1", "reader_broadcast", "coin_flip_call0", "coin_flip_call1",
        "onerec_split", "coco_split", "fake_quantization_split"}


def test_module_paths_of_oneflow_0_9():
    import oneflow_compat.nn.modules.dataset as dataset

    assert dataset.OFRecordReader is nn.OFRecordReader and dataset.COCOReader is nn.COCOReader
    assert (nn.image.Resize, nn.image.batch_align, nn.image.decode, nn.image.flip, nn.image.normalize) == (
        dataset.ImageResize, dataset.ImageBatchAlign, dataset.ImageDecode, dataset.ImageFlip, dataset.ImageNormalize)


def test_an_image_pipeline_in_a_graph_gives_the_eager_batch(jpeg_dataset):
    folder = jpeg_dataset[0]

    def modules():
        return (nn.OFRecordReader(folder, batch_size=4, part_name_suffix_length=5),
                nn.OFRecordImageDecoderRandomCrop("encoded", random_seed=11, random_area=[0.5, 1.0]),
                nn.image.Resize(target_size=(5, 4), dtype=flow.float), nn.CoinFlip(batch_size=4, random_seed=3),
                nn.CropMirrorNormalize(mean=[10.0, 20.0, 30.0], std=[2.0, 3.0, 4.0]),
                nn.OFRecordRawDecoder("class/label", shape=(), dtype=flow.int32))

    class Pipeline(nn.Graph):
        def __init__(self):
            super().__init__()
            self.reader, self.crop, self.resize, self.flip, self.cmn, self.label = modules()

        def build(self):
            records = self.reader()
            image = self.resize(self.crop(records))[0]
            return self.cmn(flow.cast(image, flow.uint8), self.flip()), self.label(records)

    reader, crop, resize, flip, cmn, label = modules()
    records = reader()
    want = cmn(flow.cast(resize(crop(records))[0], flow.uint8), flip()).numpy()
    got, labels = Pipeline()()
    assert tuple(got.shape) == (4, 3, 4, 5)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(labels.numpy(), [0, 1, 2, 3])
