"""kernels/image.py: resizing against PyTorch's interpolate and exact area averages, OneFlow's size rules, crop
windows inside their ranges, random crops reproducible per (seed, call, logical row), and crop-mirror-normalize
against a float64 reference, from uint8 batches and from tensor buffers."""
import os
import sys

import numpy as np
import pytest

from oneflow_compat.kernels import image as image_k
from oneflow_compat.kernels.array import object_array

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_testing import host, xp  # noqa: E402,F401  (xp: fixture)


# --- resize ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method, size", [("bilinear", (9, 13)), ("bilinear", (4, 3)), ("nearest_neighbor", (9, 5)),
                                          ("bicubic", (11, 7)), ("area", (3, 4))])
def test_resize_matches_torch_interpolate(method, size):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    image = rng.uniform(0, 255, (6, 8, 3)).astype(np.float32)
    out = image_k.resize_image(image, size[0], size[1], method)
    modes = {"bilinear": "bilinear", "nearest_neighbor": "nearest", "bicubic": "bicubic", "area": "area"}
    kwargs = {"align_corners": False} if method in ("bilinear", "bicubic") else {}
    ref = torch.nn.functional.interpolate(torch.from_numpy(image).permute(2, 0, 1)[None], size=size,
                                          mode=modes[method], **kwargs)[0].permute(1, 2, 0).numpy()
    assert out.shape == size + (3,) and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)


def test_resize_uint8_rounds_and_auto_picks_area_when_shrinking():
    image = np.arange(16, dtype=np.uint8).reshape(4, 4, 1) * 10
    out = image_k.resize_image(image, 2, 2)  # auto -> area: 2x2 block means
    blocks = image.reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(2, 2, 4).astype(np.float64).mean(-1)
    np.testing.assert_array_equal(out[..., 0], np.rint(blocks))
    assert out.dtype == np.uint8
    assert image_k.resolve_interpolation("auto", 4, 4, 8, 8) == "bilinear"
    assert image_k.resolve_interpolation("auto", 4, 4, 2, 8) == "bilinear"  # same area: not shrinking
    assert image_k.resolve_interpolation("auto", 4, 4, 2, 7) == "area"


def test_area_shrink_by_a_fractional_factor_averages_pixel_overlaps():
    # 3 -> 2 pixels: each destination pixel covers 1.5 source pixels, the middle one shared by half
    x = np.array([2.0, 4.0, 8.0], np.float32)
    image = x[:, None, None] * x[None, :, None]  # separable, so the 2-d result is the outer product
    line = np.array([(x[0] + 0.5 * x[1]) / 1.5, (0.5 * x[1] + x[2]) / 1.5])
    np.testing.assert_allclose(image_k.resize_image(image, 2, 2, "area")[..., 0], np.outer(line, line), rtol=1e-6)


def test_keep_aspect_ratio_size():
    # legacy docs: a 349x367 image, shorter side to 256 -> 256 x 269
    assert image_k.keep_aspect_ratio_size(349, 367, 256, max_size=512) == (269, 256)
    assert image_k.keep_aspect_ratio_size(367, 349, 256, max_size=260) == (247, 260)  # longer side capped
    assert image_k.keep_aspect_ratio_size(100, 400, 200, resize_longer=True, min_size=80) == (320, 80)


def test_crop_window_samples_inside_the_ranges():
    rng = np.random.default_rng(1)
    areas, ratios = [], []
    for _ in range(300):
        y, x, h, w = image_k.crop_window(rng, 40, 60, (0.2, 0.7), (0.75, 1.333333))
        assert 0 <= y and y + h <= 40 and 0 <= x and x + w <= 60
        areas.append(h * w / 2400.0)
        ratios.append(w / h)
    assert 0.18 < min(areas) and max(areas) < 0.72 and np.mean(areas) == pytest.approx(0.45, abs=0.05)
    assert 0.75 <= min(ratios) and max(ratios) <= 1.333333
    # no attempt left: the whole image narrowed to the widest allowed ratio (40 * 1.333333 = 53 columns)
    y, x, h, w = image_k.crop_window(rng, 40, 60, (0.08, 1.0), (0.75, 1.333333), num_attempts=0)
    assert (h, w) == (40, 53) and y == 0 and 0 <= x <= 7
    assert image_k.crop_window(rng, 40, 60, (1.0, 1.0), (1.5, 1.5)) == (0, 0, 40, 60)


def test_random_crop_depends_on_seed_call_and_logical_row_only():
    rng = np.random.default_rng(2)
    images = [rng.integers(0, 256, (20 + i, 30, 3)).astype(np.uint8) for i in range(4)]
    window = dict(random_area=(0.2, 0.7), random_aspect_ratio=(0.75, 1.333333), num_attempts=10)
    whole = image_k.random_crop(np, object_array(images), seed=9, call=3, first_row=0, device=0, **window)
    assert whole.dtype == object and len(whole) == 4
    for i, crop in enumerate(whole):
        y, x, h, w = image_k.crop_window(np.random.default_rng([9, 3, 0, i]), 20 + i, 30, **window)
        np.testing.assert_array_equal(crop, images[i][y:y + h, x:x + w])
        assert crop.flags.c_contiguous
    # the second half of the batch on its own device gets the same crops
    half = image_k.random_crop(np, object_array(images[2:]), seed=9, call=3, first_row=2, device=0, **window)
    for a, b in zip(half, whole[2:]):
        np.testing.assert_array_equal(a, b)
    other_call = image_k.random_crop(np, object_array(images), seed=9, call=4, first_row=0, device=0, **window)
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(other_call, whole))


def test_resize_to_fixed_and_keep_aspect_ratio(xp):
    rng = np.random.default_rng(3)
    images = object_array([rng.integers(0, 256, (6, 8, 3)).astype(np.uint8),
                           rng.integers(0, 256, (9, 3, 3)).astype(np.uint8)])
    out, scale = image_k.resize_to_fixed(xp, images, target_width=4, target_height=5, channels=3,
                                         np_dtype=np.float32, interpolation_type="bilinear")
    assert out.shape == (2, 5, 4, 3) and out.dtype == np.float32
    for i, image in enumerate(images):
        np.testing.assert_array_equal(host(out)[i], image_k.resize_image(image, 5, 4, "bilinear"))
    np.testing.assert_allclose(host(scale), [[4 / 8, 5 / 6], [4 / 3, 5 / 9]], rtol=1e-6)
    with pytest.raises(ValueError, match="HxWx3"):
        image_k.resize_to_fixed(xp, object_array([np.zeros((4, 4, 1), np.uint8)]), target_width=2, target_height=2,
                                channels=3, np_dtype=np.float32, interpolation_type="auto")
    resized, sizes, scales = image_k.resize_keep_aspect_ratio(xp, images, target_size=6, min_size=0, max_size=0,
                                                              resize_longer=False, interpolation_type="auto")
    assert [r.shape for r in resized] == [(6, 8, 3), (18, 6, 3)]
    assert host(sizes).tolist() == [[8, 6], [6, 18]]
    np.testing.assert_allclose(host(scales), [[1.0, 1.0], [2.0, 2.0]])


def _cmn_reference(images, flips, crop_h, crop_w, pos_y, pos_x, mean, std, layout):
    out = []
    for image, flip in zip(images, flips):
        h, w = image.shape[:2]
        y0, x0 = int((h - crop_h) * pos_y), int((w - crop_w) * pos_x)
        crop = image[y0:y0 + crop_h, x0:x0 + crop_w].astype(np.float64)
        if flip:
            crop = crop[:, ::-1]
        out.append((crop - np.asarray(mean)) / np.asarray(std))
    out = np.stack(out)
    return out.transpose(0, 3, 1, 2) if layout == "NCHW" else out


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_crop_mirror_normalize_from_uint8_and_from_buffers(xp, layout):
    rng = np.random.default_rng(5)
    batch = rng.integers(0, 256, (3, 6, 7, 3)).astype(np.uint8)
    flips = np.array([1, 0, 1], np.int8)
    attrs = dict(crop_h=4, crop_w=5, crop_pos_y=0.5, crop_pos_x=0.25, mean=(10.0, 20.0, 30.0), std=(2.0, 4.0, 5.0),
                 output_layout=layout)
    expected = _cmn_reference(batch, flips, 4, 5, 0.5, 0.25, attrs["mean"], attrs["std"], layout)
    out = image_k.crop_mirror_normalize_from_uint8(xp, xp.asarray(batch), xp.asarray(flips), **attrs)
    assert out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_allclose(host(out), expected, rtol=1e-6)
    unflipped = image_k.crop_mirror_normalize_from_uint8(xp, xp.asarray(batch), **attrs)
    np.testing.assert_allclose(host(unflipped), _cmn_reference(batch, [0, 0, 0], 4, 5, 0.5, 0.25, attrs["mean"],
                                                               attrs["std"], layout), rtol=1e-6)
    images = [batch[0], batch[1, :5], batch[2, :, :6]]  # different sizes, each holding the crop
    out = image_k.crop_mirror_normalize_from_tensorbuffer(xp, object_array(images), flips, channels=3, **attrs)
    np.testing.assert_allclose(host(out), _cmn_reference(images, flips, 4, 5, 0.5, 0.25, attrs["mean"],
                                                         attrs["std"], layout), rtol=1e-6)
    with pytest.raises(ValueError, match="does not fit"):
        image_k.crop_mirror_normalize_from_tensorbuffer(xp, object_array([batch[0, :3]]), channels=3, **attrs)
