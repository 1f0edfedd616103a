"""Image kernels of the OFRecord pipeline: random crops, resizing (OpenCV's conventions), crop-mirror-normalize.

Images are HWC numpy arrays, held one per batch row in tensor buffers (object arrays) because their sizes differ;
the work is done on the host, and numeric batch outputs are handed to `xp`.
"""
import math

import numpy as np

from .array import object_array


# --- random crop -----------------------------------------------------------------------------------------------
def _round_half_away(v):
    return int(math.floor(v + 0.5))


def crop_window(rng, height, width, random_area=(0.08, 1.0), random_aspect_ratio=(0.75, 1.333333), num_attempts=10):
    """An Inception-style crop window (y, x, h, w) of a height x width image, as OneFlow's RandomCropGenerator:
    up to `num_attempts` draws of an area fraction (uniform in `random_area`) and a width/height ratio (log-uniform in
    `random_aspect_ratio`) until the window fits; else the whole image narrowed to the allowed ratio range and shrunk
    to the largest allowed area. The anchor is uniform over the positions where the window fits."""
    area_lo, area_hi = float(random_area[0]), float(random_area[1])
    min_ratio, max_ratio = float(random_aspect_ratio[0]), float(random_aspect_ratio[1])
    max_w = max(1, int(height * max_ratio))  # widest window of full height
    max_h = max(1, int(width / min_ratio))  # tallest window of full width
    min_area = width * height * area_lo
    if height * max_w < min_area:
        h, w = height, max_w
    elif width * max_h < min_area:
        h, w = max_h, width
    else:
        found = False
        log_lo, log_hi = math.log(min_ratio), math.log(max_ratio)
        for _ in range(int(num_attempts)):
            target_area = rng.uniform(area_lo, area_hi) * height * width
            ratio = math.exp(rng.uniform(log_lo, log_hi))
            w = max(1, _round_half_away(math.sqrt(target_area * ratio)))
            h = max(1, _round_half_away(math.sqrt(target_area / ratio)))
            if w <= width and h <= height and min_ratio <= w / h <= max_ratio:
                found = True
                break
        if not found:
            ratio = width / height
            if ratio > max_ratio:
                h, w = height, max_w
            elif ratio < min_ratio:
                h, w = max_h, width
            else:
                h, w = height, width
            shrink = math.sqrt(min(1.0, area_hi * width * height / (h * w)))
            h, w = max(1, int(h * shrink)), max(1, int(w * shrink))
    y = int(rng.integers(0, height - h + 1))
    x = int(rng.integers(0, width - w + 1))
    return y, x, h, w


def _row_rng(seed, call, row, device):
    # one independent stream per (op seed, call, logical row): the draws do not depend on how the batch is split
    return np.random.default_rng([int(seed), int(call), int(device), int(row)])


def random_crop(xp, images, *, seed, call, first_row, device, random_area, random_aspect_ratio, num_attempts):
    """Each image cut to its `crop_window`, drawn from the stream of (seed, call, device, logical row), the rows
    of this piece starting at logical row `first_row`; -> a tensor buffer of the crops."""
    out = []
    for i, image in enumerate(images):
        y, x, h, w = crop_window(_row_rng(seed, call, first_row + i, device), image.shape[0], image.shape[1],
                                 random_area, random_aspect_ratio, num_attempts)
        out.append(np.ascontiguousarray(image[y:y + h, x:x + w]))
    return object_array(out)


# --- resize ----------------------------------------------------------------------------------------------------
_CUBIC_A = -0.75  # OpenCV's (and torch's) bicubic kernel parameter


def _cubic_weights(f):
    a = _CUBIC_A
    w0 = ((a * (f + 1) - 5 * a) * (f + 1) + 8 * a) * (f + 1) - 4 * a
    w1 = ((a + 2) * f - (a + 3)) * f * f + 1
    w2 = ((a + 2) * (1 - f) - (a + 3)) * (1 - f) * (1 - f) + 1
    return [w0, w1, w2, 1 - w0 - w1 - w2]


def axis_taps(in_size, out_size, method, box_area=False):
    """How one axis is resampled, as (index, weight) arrays of shape (out_size, taps): destination pixel j is
    sum_k weight[j, k] * source[index[j, k]]. OpenCV's cv::resize conventions: pixel centres at +0.5, taps outside
    the image clamped to the border. `method`: 'nearest', 'bilinear', 'bicubic' or 'area'. INTER_AREA averages
    exact pixel overlaps when the image shrinks along both axes (`box_area`), and otherwise interpolates linearly
    between the two pixels a destination pixel's area spans."""
    scale = in_size / out_size
    dst = np.arange(out_size)
    last = in_size - 1
    if method == "nearest":
        return np.minimum(np.floor(dst * scale).astype(np.int64), last)[:, None], np.ones((out_size, 1))
    if method == "area" and box_area:
        start, stop = dst * scale, (dst + 1) * scale
        index = np.floor(start).astype(np.int64)[:, None] + np.arange(int(math.ceil(scale)) + 1)
        overlap = np.minimum(stop[:, None], index + 1) - np.maximum(start[:, None], index)
        return np.minimum(index, last), np.clip(overlap, 0.0, None) / scale
    if method == "area":
        sx = np.floor(dst * scale).astype(np.int64)
        f = (dst + 1) - (sx + 1) / scale
        f = np.where(f <= 0, 0.0, f - np.floor(f))
        taps, weights = [sx, sx + 1], [1 - f, f]
    else:
        fx = (dst + 0.5) * scale - 0.5
        sx = np.floor(fx).astype(np.int64)
        f = fx - sx
        if method == "bilinear":
            # left of the first pixel centre reads the first pixel, right of the last centre the last one
            f = np.where(sx < 0, 0.0, f)
            sx = np.maximum(sx, 0)
            f = np.where(sx >= last, 0.0, f)
            sx = np.minimum(sx, last)
            taps, weights = [sx, sx + 1], [1 - f, f]
        elif method == "bicubic":
            taps, weights = [sx - 1, sx, sx + 1, sx + 2], _cubic_weights(f)
        else:
            raise ValueError("unknown interpolation %r" % (method,))
    return np.clip(np.stack(taps, axis=1), 0, last), np.stack(weights, axis=1)


def _resample(values, axis, index, weights):
    """`values` resampled along `axis` (0 or 1 of an HWC array) with the taps of `axis_taps`."""
    shape = [1, 1, 1]
    shape[axis] = index.shape[0]
    out = 0.0
    for k in range(index.shape[1]):
        out = out + weights[:, k].reshape(shape) * np.take(values, index[:, k], axis=axis)
    return out


_INTERPOLATIONS = ("bilinear", "nearest_neighbor", "nn", "bicubic", "area", "auto")


def resolve_interpolation(interpolation_type, in_h, in_w, out_h, out_w):
    """OneFlow's choice for 'auto': bilinear when the image does not shrink in area, else area."""
    if interpolation_type == "auto":
        return "bilinear" if out_w * out_h >= in_w * in_h else "area"
    if interpolation_type in ("nearest_neighbor", "nn"):
        return "nearest"
    if interpolation_type not in _INTERPOLATIONS:
        raise ValueError("interpolation_type must be one of %s, got %r" % (", ".join(_INTERPOLATIONS),
                                                                          interpolation_type))
    return interpolation_type


def resize_image(image, out_h, out_w, interpolation_type="auto"):
    """An HWC image resized to out_h x out_w in its own dtype (uint8: rounded to nearest and saturated)."""
    in_h, in_w = image.shape[0], image.shape[1]
    method = resolve_interpolation(interpolation_type, in_h, in_w, out_h, out_w)
    box = method == "area" and in_h >= out_h and in_w >= out_w
    rows = _resample(image.astype(np.float64), 0, *axis_taps(in_h, out_h, method, box))
    out = _resample(rows, 1, *axis_taps(in_w, out_w, method, box))
    if image.dtype.kind in "iu":
        info = np.iinfo(image.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(image.dtype)
    return out.astype(image.dtype)


def _check_image(image, channels, what):
    if image.ndim != 3 or (channels is not None and image.shape[2] != channels):
        raise ValueError("%s: images must be HxWx%s arrays, got one of shape %s"
                         % (what, channels if channels is not None else "C", image.shape))


def resize_to_fixed(xp, images, *, target_width, target_height, channels, np_dtype, interpolation_type):
    """-> (batch of images resized to target_height x target_width, as np_dtype; per-image (w, h) scale)."""
    out = np.empty((len(images), target_height, target_width, channels), dtype=np_dtype)
    scale = np.empty((len(images), 2), dtype=np.float32)
    for i, image in enumerate(images):
        _check_image(image, channels, "image_resize_to_fixed")
        # as OpenCV: resized in the image's own dtype, then converted (uint8 -> float keeps whole values)
        out[i] = resize_image(image, target_height, target_width, interpolation_type)
        scale[i] = (np.float32(target_width) / np.float32(image.shape[1]),
                    np.float32(target_height) / np.float32(image.shape[0]))
    return xp.asarray(out), xp.asarray(scale)


def keep_aspect_ratio_size(height, width, target_size, min_size=0, max_size=0, resize_longer=False):
    """(new_width, new_height) of an image whose shorter (or longer) side becomes `target_size`, the other side
    keeping the aspect ratio, limited by `max_size` (longer side) / `min_size` (shorter side); 0 = no limit.
    Rounding is half-to-even, as OneFlow's."""
    short, long_ = min(height, width), max(height, width)
    ratio = short / long_
    if resize_longer:
        res_long, res_short = float(target_size), float(round(target_size * ratio))
        if min_size > 0 and res_short < min_size:
            res_short = float(min_size)
            res_long = float(round(res_short / ratio))
    else:
        res_short, res_long = float(target_size), float(round(target_size / ratio))
        if max_size > 0 and res_long > max_size:
            res_long = float(max_size)
            res_short = float(round(res_long * ratio))
    if width < height:
        return int(res_short), int(res_long)
    return int(res_long), int(res_short)


def resize_keep_aspect_ratio(xp, images, *, target_size, min_size, max_size, resize_longer, interpolation_type):
    """-> (tensor buffer of the resized images, per-image new (w, h) as int32, per-image (w, h) scale)."""
    out, sizes, scales = [], np.empty((len(images), 2), np.int32), np.empty((len(images), 2), np.float32)
    for i, image in enumerate(images):
        _check_image(image, None, "image_resize_keep_aspect_ratio")
        h, w = image.shape[0], image.shape[1]
        new_w, new_h = keep_aspect_ratio_size(h, w, target_size, min_size, max_size, resize_longer)
        out.append(resize_image(image, new_h, new_w, interpolation_type))
        sizes[i] = (new_w, new_h)
        scales[i] = (np.float32(new_w) / np.float32(w), np.float32(new_h) / np.float32(h))
    return object_array(out), xp.asarray(sizes), xp.asarray(scales)


# --- crop, mirror, normalize -----------------------------------------------------------------------------------
def _crop_offset(in_size, out_size, pos):
    # OneFlow computes the offset in float32 and truncates it
    return int(np.float32(in_size - out_size) * np.float32(pos))


def _normalize_constants(mean, std, channels):
    mean = np.asarray(mean, dtype=np.float32)
    inv_std = np.float32(1.0) / np.asarray(std, dtype=np.float32)
    return np.broadcast_to(mean, (channels,)), np.broadcast_to(inv_std, (channels,))


def crop_mirror_normalize_from_uint8(xp, images, *mirror, crop_h, crop_w, crop_pos_y, crop_pos_x, mean, std,
                                     output_layout):
    """Static uint8 NHWC batch -> float32: crop (a crop_h/crop_w of 0 keeps the image), flip rows whose mirror
    flag is set, then (x - mean[c]) * (1 / std[c]), in NCHW or NHWC."""
    n, h, w, c = images.shape
    out_h, out_w = (h, w) if crop_h == 0 or crop_w == 0 else (min(crop_h, h), min(crop_w, w))
    y0, x0 = _crop_offset(h, out_h, crop_pos_y), _crop_offset(w, out_w, crop_pos_x)
    crop = images[:, y0:y0 + out_h, x0:x0 + out_w, :]
    if mirror:
        flip = xp.reshape(mirror[0] != 0, (n, 1, 1, 1))
        crop = xp.where(flip, crop[:, :, ::-1, :], crop)
    mean_c, inv_std_c = _normalize_constants(mean, std, c)
    out = (crop.astype(xp.float32) - xp.asarray(mean_c)) * xp.asarray(inv_std_c)
    if output_layout == "NCHW":
        out = xp.transpose(out, (0, 3, 1, 2))
    return xp.ascontiguousarray(out)


def crop_mirror_normalize_from_tensorbuffer(xp, images, *mirror, crop_h, crop_w, crop_pos_y, crop_pos_x, mean,
                                            std, output_layout, channels):
    """Tensor-buffer images (any sizes, each at least crop_h x crop_w) -> one float32 batch."""
    flips = np.asarray(mirror[0]).reshape(-1) if mirror else np.zeros(len(images), np.int8)
    mean_c, inv_std_c = _normalize_constants(mean, std, channels)
    out = np.empty((len(images), crop_h, crop_w, channels), dtype=np.float32)
    for i, image in enumerate(images):
        _check_image(image, channels, "crop_mirror_normalize_from_tensorbuffer")
        h, w = image.shape[0], image.shape[1]
        if crop_h > h or crop_w > w:
            raise ValueError("crop_mirror_normalize: crop %dx%d does not fit image #%d of %dx%d"
                             % (crop_h, crop_w, i, h, w))
        y0, x0 = _crop_offset(h, crop_h, crop_pos_y), _crop_offset(w, crop_w, crop_pos_x)
        crop = image[y0:y0 + crop_h, x0:x0 + crop_w, :]
        if flips[i]:
            crop = crop[:, ::-1, :]
        out[i] = (crop.astype(np.float32) - mean_c) * inv_std_c
    if output_layout == "NCHW":
        out = out.transpose(0, 3, 1, 2)
    return xp.asarray(np.ascontiguousarray(out))
