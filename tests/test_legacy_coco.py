"""`flow.data.coco_reader` (OneFlow v0.3.4 COCOReader) on a small COCO dataset written here: every output against a
reference computed from the annotation file by the rules of OneFlow's own test (test_coco_reader.py, which used
pycocotools and OpenCV), the shard order of stride partition on 1 and 2 devices, aspect-ratio grouping, and the
removal of crowd annotations and images without valid annotations."""
import json
import os

import numpy as np
import pytest

import oneflow_compat as flow

PIL = pytest.importorskip("PIL.Image")

SIZES = {1: (20, 30), 2: (30, 20), 3: (16, 16), 4: (24, 40), 5: (10, 12), 6: (28, 18)}


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("coco"))
    os.makedirs(os.path.join(d, "img"))
    rng = np.random.default_rng(0)
    images, annos, pixels = [], [], {}
    for i, (h, w) in SIZES.items():
        pixels[i] = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
        PIL.fromarray(pixels[i]).save(os.path.join(d, "img", "%d.png" % i))
        images.append({"id": i, "height": h, "width": w, "file_name": "%d.png" % i})
    aid = 100
    for i, (h, w) in SIZES.items():
        if i == 5:  # its only box is at most 1 pixel high: the image is removed
            annos.append({"id": aid, "image_id": i, "iscrowd": 0, "category_id": 3, "bbox": [1, 1, 1, 0.5],
                          "segmentation": [[1, 1, 2, 1, 2, 2, 1, 2]]})
            aid += 1
            continue
        for k in range(1 + i % 3):
            annos.append({"id": aid, "image_id": i, "iscrowd": 0, "category_id": [3, 7, 11][k],
                          "bbox": [float(k) - 0.5, 2.0, w - 3.0 + k, 5.0 + k],
                          "segmentation": [[0, 0, 4, 0, 4, 4, 0, 4], [1, 1, 3, 1, 3, 3, 1, 3]] if k == 0
                          else [[2, 2, 5, 2, 5, 5.5, 2, 5]]})
            aid += 1
        annos.append({"id": aid, "image_id": i, "iscrowd": 1, "category_id": 3, "bbox": [0, 0, 5, 5],
                      "segmentation": {"counts": [1], "size": [h, w]}})  # crowd: skipped
        aid += 1
    anno_file = os.path.join(d, "anno.json")
    with open(anno_file, "w") as f:
        json.dump({"images": images, "annotations": annos, "categories": [{"id": 11}, {"id": 3}, {"id": 7}]}, f)
    return anno_file, os.path.join(d, "img"), pixels, annos


def _reference(image_id, annos):
    """The outputs for one image, by the rules of OneFlow's test (xyxy boxes of width - 1, clipped; labels of the
    sorted category ids from 1; polygon points with (point, polygon, annotation) indices)."""
    h, w = SIZES[image_id]
    mine = [a for a in annos if a["image_id"] == image_id and not a["iscrowd"]]
    boxes = []
    for a in mine:
        x, y, bw, bh = a["bbox"]
        x1, y1 = x + max(bw - 1, 0), y + max(bh - 1, 0)
        x, x1 = (min(max(v, 0), w - 1) for v in (x, x1))
        y, y1 = (min(max(v, 0), h - 1) for v in (y, y1))
        if x1 > x and y1 > y:
            boxes.append([x, y, x1, y1])
    labels = [{3: 1, 7: 2, 11: 3}[a["category_id"]] for a in mine]
    points, index = [], []
    for s, a in enumerate(mine):
        for p, poly in enumerate(a["segmentation"]):
            for k in range(len(poly) // 2):
                points.append(poly[2 * k: 2 * k + 2])
                index.append([k, p, s])
    return (np.array(boxes, np.float32).reshape(-1, 4), np.array(labels, np.int32),
            np.array(points, np.float32).reshape(-1, 2), np.array(index, np.int32).reshape(-1, 3))


def _load_fn(coco, devices, batch_size, group, stride=True):
    anno_file, image_dir, _, _ = coco
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)

    @flow.global_function()
    def load():
        image, image_id, image_size, bbox, label, segm, segm_index = flow.data.coco_reader(
            anno_file, image_dir, batch_size=batch_size, shuffle=False, group_by_aspect_ratio=group,
            stride_partition=stride, name="COCOReader")
        assert image.dtype is flow.tensor_buffer and image_size.shape == (batch_size, 2)
        return (image_id, image_size,
                flow.tensor_buffer_to_tensor_list(flow.image_decode(image, dtype=flow.float), shape=(40, 40, 3),
                                                  dtype=flow.float),
                flow.tensor_buffer_to_tensor_list(bbox, shape=(8, 4), dtype=flow.float),
                flow.tensor_buffer_to_tensor_list(label, shape=(8,), dtype=flow.int32),
                flow.tensor_buffer_to_tensor_list(segm, shape=(64, 2), dtype=flow.float),
                flow.tensor_buffer_to_tensor_list(segm_index, shape=(64, 3), dtype=flow.int32))

    return load


@pytest.mark.parametrize("devices", [1, 2])
def test_coco_reader_outputs_and_stride_partition(coco, devices):
    _, _, pixels, annos = coco
    load = _load_fn(coco, devices, 4, group=False)
    order = [1, 2, 3, 4, 6]  # image 5 removed; ids sorted
    # stride partition, 4 images a call: each device takes every `devices`-th image of its stride, wrapping
    # around the epoch with pos %= size (OneFlow's DistributedTrainingDataset)
    want_ids = {1: [[0, 1, 2, 3], [4, 0, 1, 2]], 2: [[0, 2, 1, 3], [4, 1, 0, 2]]}[devices]
    for call in range(2):
        image_id, image_size, images, bbox, label, segm, segm_index = load().get()
        ids = [order[i] for i in want_ids[call]]
        np.testing.assert_array_equal(image_id.numpy(), ids)
        np.testing.assert_array_equal(image_size.numpy(), [SIZES[i] for i in ids])
        for row, i in enumerate(ids):
            b, lab, pts, idx = _reference(i, annos)
            np.testing.assert_array_equal(images.numpy_lists()[0][row][0], pixels[i][:, :, ::-1])  # BGR
            np.testing.assert_array_equal(bbox.numpy_lists()[0][row][0], b)
            np.testing.assert_array_equal(label.numpy_lists()[0][row][0], lab)
            np.testing.assert_array_equal(segm.numpy_lists()[0][row][0], pts)
            np.testing.assert_array_equal(segm_index.numpy_lists()[0][row][0], idx)


def test_coco_reader_groups_batches_by_aspect_ratio(coco):
    load = _load_fn(coco, 1, 2, group=True)
    # height // width: 1 -> 0, 2 -> 1, 3 -> 1, 4 -> 0, 6 -> 1 (OneFlow's GroupBatchDataset)
    got = [load().get()[0].numpy().tolist() for _ in range(4)]
    assert got == [[1, 4], [2, 3], [6, 2], [1, 4]]


def test_coco_reader_contiguous_partition_and_errors(coco, tmp_path):
    load = _load_fn(coco, 2, 2, group=False, stride=False)
    # shard size ceil(5 / 2) = 3: device 0 reads images 0, 1, 2, …; device 1 reads 3, 4, then wraps
    assert [load().get()[0].numpy().tolist() for _ in range(3)] == [[1, 4], [2, 6], [3, 1]]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"images": [{"id": 1, "height": 4, "width": 4, "file_name": "x"}],
                               "annotations": [{"id": 1, "image_id": 1, "iscrowd": 0, "category_id": 1,
                                                "bbox": [0, 0, 3, 3], "segmentation": [[0, 0, 1, 0, 1, 1]]}],
                               "categories": [{"id": 1}]}))
    flow.clear_default_session()

    @flow.global_function()
    def load_bad():
        return flow.data.coco_reader(str(bad), str(tmp_path), batch_size=1, name="bad")[1]

    with pytest.raises(ValueError, match="at least 3 points"):
        load_bad()
    with pytest.raises(AssertionError):
        flow.data.coco_reader(str(bad), str(tmp_path), batch_size=1)
