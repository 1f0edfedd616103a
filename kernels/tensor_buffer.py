"""Kernels on tensor buffers (1-d object arrays holding one ndarray per batch row, on the host): the image ops of
`flow.image` (flip, normalize, batch_align), the detection ops on boxes and polygons, and the conversions between
tensors and tensor buffers.

Rules as OneFlow v0.3.4's CPU kernels (`oneflow/user/kernels/image_object_preprocess_kernels.cpp`,
`image_batch_align_kernel.cpp`, `tensor_buffer_kernels.cpp`):

* flip codes: 0x01 horizontal, 0x10 vertical, 0x11 both, 0 none; a box (xmin, ymin, xmax, ymax) flips to
  (W - xmax - 1, …, W - xmin - 1, …), a polygon point x to W - x; image_size rows are (width, height) int32 and
  scale rows (scale_w, scale_h) float32;
* normalize: (x - mean[c]) / std[c] per channel of an HWC float image;
* batch_align: every image copied to the top-left of a zero batch (n, H, W, c), H and W the largest height and
  width rounded up to `alignment`;
* polygon_to_mask: per image, one (im_h, im_w) int8 mask per segment, its polygons filled (points rounded to the
  nearest pixel). OneFlow fills them with OpenCV's fillPoly; here each polygon is filled by Pillow's polygon
  drawing (rows and columns on the outline included, as OpenCV does) and the polygons of a segment are OR-ed.
"""
import numpy

from .array import object_array

HORIZONTAL, VERTICAL = 0x01, 0x10


def _host(a):
    return a.get() if hasattr(a, "get") else numpy.asarray(a)


def image_flip(xp, images, flip_code, *, vertical=VERTICAL):
    """Each image flipped by its code's bits: horizontal 0x01, vertical `vertical` (0x10 in OneFlow v0.3.4/v0.4.0,
    0x02 in v0.9.0: `FlipCode` of oneflow/user/kernels/image_object_preprocess_kernels.cpp)."""
    codes = _host(flip_code).reshape(-1)
    out = []
    for image, code in zip(images, codes):
        img = image
        if code & HORIZONTAL:
            img = img[:, ::-1]
        if code & vertical:
            img = img[::-1]
        out.append(numpy.ascontiguousarray(img))
    return object_array(out)


def image_normalize(xp, images, *, std, mean):
    out = []
    for image in images:
        if image.ndim != 3 or image.shape[2] != len(std) or image.shape[2] != len(mean):
            raise ValueError("image_normalize: an HWC image with %d channels (one mean and std each) expected, got "
                             "shape %s" % (len(std), image.shape))
        out.append(((image - numpy.asarray(mean, image.dtype)) / numpy.asarray(std, image.dtype)).astype(image.dtype))
    return object_array(out)


def _round_up(v, alignment):
    return v if alignment == 0 else -(-v // alignment) * alignment


def image_batch_align(xp, images, *, channels, np_dtype, alignment, max_hw, static_out=False):
    """The images zero-padded (at the bottom and right) to one batch: the largest height and width rounded up to
    `alignment`, or, with `static_out` (OneFlow 0.9's dynamic_out=False), the static shape `max_hw` itself. (OneFlow
    0.9's kernel then still lays the images out with the aligned row strides inside the static buffer; here each
    image sits at the top left of its static (H, W) slot.)"""
    if len(images) == 0:
        raise ValueError("image_batch_align: an empty batch")
    h = _round_up(max(int(im.shape[0]) for im in images), alignment)
    w = _round_up(max(int(im.shape[1]) for im in images), alignment)
    if h * w > max_hw[0] * max_hw[1] or (static_out and (h > max_hw[0] or w > max_hw[1])):
        raise ValueError("image_batch_align: the batch's images need %dx%d, the static shape allows %dx%d" % (
            h, w, max_hw[0], max_hw[1]))
    if static_out:
        h, w = max_hw
    out = numpy.zeros((len(images), h, w, channels), dtype=np_dtype)
    for i, im in enumerate(images):
        if im.ndim != 3 or im.shape[2] != channels:
            raise ValueError("image_batch_align: image %d has shape %s, %d channels expected" % (i, im.shape,
                                                                                                channels))
        out[i, :im.shape[0], :im.shape[1]] = im
    return xp.asarray(out)


def object_bbox_flip(xp, bbox, image_size, flip_code):
    sizes, codes = _host(image_size).reshape(-1, 2), _host(flip_code).reshape(-1)
    out = []
    for boxes, (width, height), code in zip(bbox, sizes, codes):
        b = numpy.array(boxes, copy=True)
        one = b.dtype.type(1)
        if code & HORIZONTAL:
            b[:, 0], b[:, 2] = width - boxes[:, 2] - one, width - boxes[:, 0] - one
        if code & VERTICAL:
            b[:, 1], b[:, 3] = height - boxes[:, 3] - one, height - boxes[:, 1] - one
        out.append(b)
    return object_array(out)


def object_bbox_scale(xp, bbox, scale):
    scales = _host(scale).reshape(-1, 2)
    out = []
    for boxes, (sw, sh) in zip(bbox, scales):
        b = numpy.array(boxes, copy=True)
        b[:, 0::2] *= b.dtype.type(sw)
        b[:, 1::2] *= b.dtype.type(sh)
        out.append(b)
    return object_array(out)


def object_segmentation_polygon_flip(xp, poly, image_size, flip_code):
    sizes, codes = _host(image_size).reshape(-1, 2), _host(flip_code).reshape(-1)
    out = []
    for points, (width, height), code in zip(poly, sizes, codes):
        p = numpy.array(points, copy=True)
        if code & HORIZONTAL:
            p[:, 0] = width - points[:, 0]
        if code & VERTICAL:
            p[:, 1] = height - points[:, 1]
        out.append(p)
    return object_array(out)


def object_segmentation_polygon_scale(xp, poly, scale):
    scales = _host(scale).reshape(-1, 2)
    out = []
    for points, (sw, sh) in zip(poly, scales):
        p = numpy.array(points, copy=True)
        p[:, 0] *= p.dtype.type(sw)
        p[:, 1] *= p.dtype.type(sh)
        out.append(p)
    return object_array(out)


def _fill_polygon(mask, points):
    from PIL import Image, ImageDraw

    canvas = Image.new("L", (mask.shape[1], mask.shape[0]), 0)
    pts = [(int(numpy.rint(x)), int(numpy.rint(y))) for x, y in points]
    if len(pts) == 1:
        ImageDraw.Draw(canvas).point(pts, fill=1)
    else:
        ImageDraw.Draw(canvas).polygon(pts, fill=1, outline=1)
    mask |= numpy.asarray(canvas, dtype=numpy.int8)


def object_segmentation_polygon_to_mask(xp, poly, poly_index, image_size):
    """poly: per image (k, 2) points; poly_index: per image (k, 3) rows (point, polygon, segment) numbering each
    point within its polygon and each polygon within its segment, in order."""
    sizes = _host(image_size).reshape(-1, 2)
    out = []
    for points, index, (width, height) in zip(poly, poly_index, sizes):
        index = numpy.asarray(index)
        if points.shape[0] != index.shape[0] or index.ndim != 2 or index.shape[1] != 3:
            raise ValueError("object_segmentation_polygon_to_mask: %d points but a poly_index of shape %s" % (
                points.shape[0], index.shape))
        n_segments = int(index[:, 2].max()) + 1 if index.size else 0
        masks = numpy.zeros((n_segments, int(height), int(width)), dtype=numpy.int8)
        for seg in range(n_segments):
            in_seg = index[:, 2] == seg
            for p in numpy.unique(index[in_seg, 1]):
                rows = in_seg & (index[:, 1] == p)
                order = numpy.argsort(index[rows, 0], kind="stable")
                _fill_polygon(masks[seg], points[rows][order])
        out.append(masks)
    return object_array(out)


# --- tensors <-> tensor buffers ------------------------------------------------------------------------------------
def tensor_buffer_to_tensor(xp, x, *, np_dtype, instance_shape):
    """x.shape + instance_shape: each buffer's array, which must have instance_shape, as one tensor (a buffer of
    any rank: OneFlow's op appends instance_shape to the buffer's whole shape)."""
    shape = tuple(instance_shape)
    flat = numpy.asarray(x, dtype=object).reshape(-1)
    out = numpy.zeros((len(flat),) + shape, dtype=np_dtype)
    for i, item in enumerate(flat):
        if tuple(item.shape) != shape:
            raise ValueError("tensor_buffer_to_tensor: buffer %d holds shape %s, instance_shape is %s" % (
                i, tuple(item.shape), shape))
        out[i] = item
    return xp.asarray(out.reshape(tuple(numpy.shape(x)) + shape))


def tensor_to_tensor_buffer(xp, x, *, instance_dims):
    """A buffer per index of the leading axes: x's last `instance_dims` axes."""
    host = _host(x)
    lead = host.shape[:host.ndim - instance_dims]
    flat = host.reshape((-1,) + host.shape[host.ndim - instance_dims:])
    return object_array([numpy.array(item, copy=True) for item in flat]).reshape(lead)


def gen_tensor_buffer(xp, *, shape, shape_list, value_list, np_dtype):
    """A tensor buffer of `shape` whose i-th buffer is an array of shape_list[i] filled with value_list[i]."""
    items = [numpy.full(tuple(s), v, dtype=np_dtype) for s, v in zip(shape_list, value_list)]
    return object_array(items).reshape(tuple(shape))



# --- tensor lists -------------------------------------------------------------------------------------------------
# A tensor-list blob (OneFlow v0.3.4's `is_tensor_list` blobs, fed through tp.ListListNumpy) is, per device, a 1-d
# object array of ndarrays: the tensors of the list, each of the blob's rank. Rules as
# `oneflow/core/kernel/tensor_list_to_tensor_buffer_kernel.cpp`, `tensor_buffer_to_tensor_list_kernel.cpp` and
# `tensor_list_split_kernel.cpp`.
def tensor_list_to_tensor_buffer(xp, x):
    """One buffer per tensor of the list, its leading dimension (which must be 1) dropped."""
    out = []
    for i, t in enumerate(x):
        t = _host(t)
        if t.ndim == 0 or t.shape[0] != 1:
            raise ValueError("tensor_list_to_tensor_buffer: tensor %d of the list has shape %s; each tensor must "
                             "have a leading dimension of 1 (Check failed: in_tensor_view.shape().At(0) == 1)"
                             % (i, t.shape))
        out.append(numpy.array(t[0]))
    return object_array(out)


def tensor_buffer_to_tensor_list(xp, x, *, shape, np_dtype):
    """One tensor per buffer, shaped (1,) + the buffer's shape and converted to `np_dtype`; a buffer must have
    the rank of `shape` and at most as many elements."""
    out = []
    limit = int(numpy.prod(shape)) if shape else 1
    for i, b in enumerate(x.reshape(-1)):
        b = _host(b)
        if b.ndim != len(shape) or b.size > limit:
            raise ValueError("tensor_buffer_to_tensor_list: buffer %d has shape %s, which does not fit the list's "
                             "instance shape %s (same rank, at most as many elements)" % (i, b.shape, tuple(shape)))
        out.append(b.astype(np_dtype)[None])
    return object_array(out)


def tensor_list_split(xp, x, *, n):
    """The list's n tensors as n tensors, each without its leading dimension."""
    if len(x) != n:
        raise ValueError("tensor_list_split: the list holds %d tensors, the op has %d outputs (its static shape's "
                         "first dimension)" % (len(x), n))
    out = []
    for i, t in enumerate(x):
        t = _host(t)
        if t.ndim == 0 or t.shape[0] != 1:
            raise ValueError("tensor_list_split: tensor %d of the list has shape %s; each tensor must have a leading "
                             "dimension of 1" % (i, t.shape))
        out.append(xp.asarray(t[0]))
    return tuple(out)


# --- api-misc1: tensor_buffer_to_list_of_tensors_v2 (OneFlow v0.9.0 oneflow/user/kernels/tensor_buffer_kernels.cpp)
def tensor_buffer_to_list_of_tensors(xp, x, *, out_shapes, np_dtypes, dynamic_out):
    """One array per buffer of x (row-major order): buffer i as out_shapes[i] of np_dtypes[i]. Each buffer's dtype
    must be its output's; its element count must equal the output's (dynamic_out: at most, and the output takes the
    buffer's own shape)."""
    items = numpy.asarray(x, dtype=object).reshape(-1)
    outs = []
    for i, item in enumerate(items):
        item = numpy.asarray(item)
        shape, dtype = tuple(out_shapes[i]), numpy.dtype(np_dtypes[i])
        if item.dtype != dtype:
            raise ValueError("tensor_buffer_to_list_of_tensors: buffer %d holds %s, out_dtypes[%d] is %s"
                             % (i, item.dtype, i, dtype))
        count = int(numpy.prod(shape, dtype=numpy.int64))
        if (item.size > count) if dynamic_out else (item.size != count):
            raise ValueError("tensor_buffer_to_list_of_tensors: buffer %d holds %d elements %s, out_shapes[%d] %s "
                             "holds %d" % (i, item.size, tuple(item.shape), i, shape, count))
        outs.append(xp.asarray(numpy.ascontiguousarray(item if dynamic_out else item.reshape(shape))))
    return tuple(outs)
