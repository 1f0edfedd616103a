"""Tensor-buffer ops of OneFlow v0.3.4/v0.4.0 (`flow.image.flip/normalize/batch_align`, `flow.detection.*`,
`flow.tensor_buffer_to_tensor` / `tensor_to_tensor_buffer`, `flow.gen_tensor_buffer`) against numpy written here
from OneFlow's kernel rules, on 1 and 2 devices (buffers split along the batch)."""
import os
import sys
import typing

import numpy as np
import pytest

import oneflow_compat as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_legacy_array import _list_job  # noqa: E402
from test_legacy_math import _build_error  # noqa: E402


def _buffers(x, dims):
    return flow.tensor_to_tensor_buffer(x, instance_dims=dims)


@pytest.mark.parametrize("devices", [1, 2])
def test_tensor_buffer_round_trip_flip_and_normalize(devices):
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 255, (4, 3, 5, 3)).astype(np.float32)
    codes = np.array([0, 1, 16, 17], np.int8)

    def body(x, c):
        buf = _buffers(x, 3)
        same = flow.tensor_buffer_to_tensor(buf, flow.float32, (3, 5, 3))
        flipped = flow.tensor_buffer_to_tensor(flow.image.flip(buf, c), flow.float32, (3, 5, 3))
        all_h = flow.tensor_buffer_to_tensor(flow.image_flip(buf, 1), flow.float32, (3, 5, 3))
        normed = flow.tensor_buffer_to_tensor(flow.image.normalize(buf, std=[2.0, 4.0, 8.0], mean=[1.0, 2.0, 3.0]),
                                              flow.float32, (3, 5, 3))
        return [same, flipped, all_h, normed]

    same, flipped, all_h, normed = _list_job(body, [images, codes], devices)
    np.testing.assert_array_equal(same, images)
    want = np.stack([images[0], images[1][:, ::-1], images[2][::-1], images[3][::-1, ::-1]])
    np.testing.assert_array_equal(flipped, want)
    np.testing.assert_array_equal(all_h, images[:, :, ::-1])
    np.testing.assert_allclose(normed, (images - [1.0, 2.0, 3.0]) / [2.0, 4.0, 8.0], rtol=1e-6)


def test_image_batch_align_pads_to_the_aligned_largest_image():
    def body(x):
        buf = flow.gen_tensor_buffer((3,), [(5, 7, 3), (9, 4, 3), (2, 2, 3)], [1.0, 2.0, 3.0])
        return flow.image.batch_align(buf, shape=(32, 32, 3), dtype=flow.float32, alignment=8)

    (got,) = _list_job(body, [np.zeros(1, np.float32)])
    assert got.shape == (3, 16, 8, 3) and got.dtype == np.float32
    want = np.zeros((3, 16, 8, 3), np.float32)
    want[0, :5, :7], want[1, :9, :4], want[2, :2, :2] = 1.0, 2.0, 3.0
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="alignment must be 0 or a power of 2"):
        _build_error(lambda x: flow.image_batch_align(flow.gen_tensor_buffer((1,), [(2, 2, 3)], [1.0]), (4, 4, 3),
                                                      flow.float32, 3), [np.zeros(1)])()


@pytest.mark.parametrize("devices", [1, 2])
def test_bbox_and_polygon_flip_and_scale(devices):
    rng = np.random.default_rng(1)
    boxes = rng.uniform(0, 50, (4, 3, 4)).astype(np.float32)
    polys = rng.uniform(0, 50, (4, 5, 2)).astype(np.float32)
    size = np.array([[64, 48], [32, 80], [100, 10], [7, 9]], np.int32)
    scale = rng.uniform(0.5, 2, (4, 2)).astype(np.float32)
    codes = np.array([1, 16, 17, 0], np.int8)

    def body(b, p, s, sc, c):
        fb = flow.detection.object_bbox_flip(_buffers(b, 2), s, c)
        sb = flow.object_bbox_scale(_buffers(b, 2), sc)
        fp = flow.detection.object_segmentation_polygon_flip(_buffers(p, 2), s, c)
        sp = flow.object_segmentation_polygon_scale(_buffers(p, 2), sc)
        return [flow.tensor_buffer_to_tensor(fb, flow.float32, (3, 4)),
                flow.tensor_buffer_to_tensor(sb, flow.float32, (3, 4)),
                flow.tensor_buffer_to_tensor(fp, flow.float32, (5, 2)),
                flow.tensor_buffer_to_tensor(sp, flow.float32, (5, 2))]

    fb, sb, fp, sp = _list_job(body, [boxes, polys, size, scale, codes], devices)
    want_b, want_p = boxes.copy(), polys.copy()
    for i, (w, h) in enumerate(size):
        if codes[i] & 1:
            want_b[i, :, 0], want_b[i, :, 2] = w - boxes[i, :, 2] - 1, w - boxes[i, :, 0] - 1
            want_p[i, :, 0] = w - polys[i, :, 0]
        if codes[i] & 16:
            want_b[i, :, 1], want_b[i, :, 3] = h - boxes[i, :, 3] - 1, h - boxes[i, :, 1] - 1
            want_p[i, :, 1] = h - polys[i, :, 1]
    np.testing.assert_allclose(fb, want_b, rtol=1e-6)
    np.testing.assert_allclose(fp, want_p, rtol=1e-6)
    np.testing.assert_allclose(sb, boxes * np.tile(scale, 2)[:, None, :], rtol=1e-6)
    np.testing.assert_allclose(sp, polys * scale[:, None, :], rtol=1e-6)


def test_polygon_to_mask_fills_each_segment():
    # one image 8 x 6: segment 0 = the rectangle (1,1)-(4,3); segment 1 = two triangles
    pts = np.array([[[1, 1], [4, 1], [4, 3], [1, 3], [0, 5], [2, 5], [0, 7], [5, 5], [5, 7], [3, 7]]], np.float32)
    index = np.array([[[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [0, 0, 1], [1, 0, 1], [2, 0, 1],
                       [0, 1, 1], [1, 1, 1], [2, 1, 1]]], np.int32)
    size = np.array([[6, 8]], np.int32)

    def body(p, i, s):
        masks = flow.detection.object_segmentation_polygon_to_mask(_buffers(p, 2), _buffers(i, 2), s)
        return flow.tensor_buffer_to_tensor(masks, flow.int8, (2, 8, 6))

    (got,) = _list_job(body, [pts, index, size])
    rect = np.zeros((8, 6), np.int8)
    rect[1:4, 1:5] = 1
    np.testing.assert_array_equal(got[0, 0], rect)
    # the triangles: their vertices and the inside of their bounding hulls are set, nothing outside
    seg = got[0, 1]
    for x, y in ((0, 5), (2, 5), (0, 7), (5, 5), (5, 7), (3, 7), (1, 6), (4, 6)):
        assert seg[y, x] == 1, (x, y)
    assert seg[:5].sum() == 0 and seg[5:, :].sum() < 16


def test_tensor_buffer_errors():
    with pytest.raises(ValueError, match="instance_dims must be in 1..1"):
        _build_error(lambda x: flow.tensor_buffer_to_tensor(flow.tensor_to_tensor_buffer(x, 2), flow.float32, (2,)),
                     [np.zeros((3, 2), np.float32)])()
    with pytest.raises(ValueError, match="buffer 0 holds shape \\(2,\\), instance_shape is \\(3,\\)"):
        _list_job(lambda x: flow.tensor_buffer_to_tensor(flow.tensor_to_tensor_buffer(x, 1), flow.float32, (3,)),
                  [np.zeros((3, 2), np.float32)])


# --- tensor lists (tp.ListListNumpy / MirroredTensorListDef, tensor_list_* ops of v0.3.4) ----------------------------
def _mirrored_config(devices):
    flow.clear_default_session()
    flow.config.cpu_device_num(devices)
    cfg = flow.FunctionConfig()
    cfg.default_data_type(flow.float)
    cfg.default_logical_view(flow.scope.mirrored_view())
    return cfg


def test_tensor_list_round_trip_as_oneflows_own_test():
    # OneFlow v0.3.4 oneflow/python/test/ops/test_tensor_list_and_tensor_buffer.py
    cfg = _mirrored_config(1)

    @flow.global_function(function_config=cfg)
    def job_fn(x_def: flow.typing.ListListNumpy.Placeholder(shape=(2, 5, 4), dtype=flow.float)):
        x = flow.tensor_list_to_tensor_buffer(x_def)
        assert x.shape == (2,) and x.dtype is flow.tensor_buffer and not x.is_tensor_list
        out = flow.tensor_buffer_to_tensor_list(x, shape=(5, 4), dtype=flow.float)
        assert out.is_tensor_list and out.shape == (2, 5, 4) and x_def.is_tensor_list
        return out

    rng = np.random.default_rng(0)
    input_1 = rng.random((1, 3, 4)).astype(np.float32)
    input_2 = rng.random((1, 2, 4)).astype(np.float32)
    ret = job_fn([[input_1, input_2]]).get()
    lists = ret.numpy_lists()
    assert len(lists) == 1 and len(lists[0]) == 2
    np.testing.assert_array_equal(lists[0][0], input_1)
    np.testing.assert_array_equal(lists[0][1], input_2)


@pytest.mark.parametrize("devices", [1, 2])
def test_tensor_list_split_flip_and_list_list_return(devices):
    cfg = _mirrored_config(devices)

    @flow.global_function(function_config=cfg)
    def job(images: flow.MirroredTensorListDef((3, 4, 5, 2), dtype=flow.float64)) \
            -> typing.Tuple[flow.typing.ListListNumpy, flow.typing.ListNumpy, flow.typing.ListNumpy]:
        buf = flow.tensor_list_to_tensor_buffer(images)
        flipped = flow.tensor_buffer_to_tensor_list(flow.image.flip(buf, 1), shape=(4, 5, 2), dtype=flow.float32)
        first, second, third = flow.tensor_list_split(images)
        assert first.shape == (4, 5, 2) and first.is_dynamic
        return flipped, first, third

    rng = np.random.default_rng(1)
    shapes = [[(1, 2, 5, 2), (1, 4, 3, 2), (1, 1, 1, 2)], [(1, 3, 3, 2), (1, 4, 5, 2), (1, 2, 2, 2)]][:devices]
    fed = [[rng.random(s) for s in per_dev] for per_dev in shapes]
    flipped, first, third = job(fed)
    assert len(flipped) == devices
    for d in range(devices):
        assert [t.shape for t in flipped[d]] == [s for s in shapes[d]]
        for got, x in zip(flipped[d], fed[d]):
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, x[:, :, ::-1].astype(np.float32))
        np.testing.assert_array_equal(first[d], fed[d][0][0])
        np.testing.assert_array_equal(third[d], fed[d][2][0])


def test_tensor_list_errors():
    cfg = _mirrored_config(1)

    @flow.global_function(function_config=cfg)
    def to_buffer(x: flow.typing.ListListNumpy.Placeholder((2, 3))):
        return flow.tensor_buffer_to_tensor_list(flow.tensor_list_to_tensor_buffer(x), shape=(3,), dtype=flow.float)

    with pytest.raises(AssertionError, match="more than the placeholder's first dimension 2"):
        to_buffer([[np.ones((1, 3), np.float32)] * 3])
    with pytest.raises(AssertionError, match="does not fit the placeholder's static shape"):
        to_buffer([[np.ones((1, 4), np.float32)]])
    with pytest.raises(ValueError, match="leading dimension of 1"):
        to_buffer([[np.ones((2, 3), np.float32)]])

    with pytest.raises(ValueError, match="must be a tensor list"):
        _build_error(lambda x: flow.tensor_list_to_tensor_buffer(x), [np.ones((2, 3), np.float32)])()
    cfg = _mirrored_config(1)
    cfg.default_logical_view(flow.scope.consistent_view())
    with pytest.raises(AssertionError, match="only valid in mirrored view"):
        @flow.global_function(function_config=cfg)
        def consistent(x: flow.typing.ListListNumpy.Placeholder((2, 3))):
            return flow.tensor_list_to_tensor_buffer(x)

        consistent([[np.ones((1, 3), np.float32)]])
