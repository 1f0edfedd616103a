"""`flow.image.flip/normalize/batch_align`, `flow.detection.*` and the tensor-buffer conversions of OneFlow
v0.3.4/v0.4.0 (signatures, defaults, names and assertions after `oneflow/python/ops/user_data_ops.py` and
`tensor_buffer_ops.py`)."""
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops.registry import apply


def _name(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def _flip_code_blob(flip_code, n, name):
    if isinstance(flip_code, LazyBlob):
        assert flip_code.shape[0] == n
        return flip_code
    assert isinstance(flip_code, int)
    return apply("constant", [], {"value": flip_code, "dtype": dtypes.int8, "shape": (n,)}, name=name)


def image_flip(image, flip_code, name=None):
    """Each image flipped by its code (0x01 horizontal, 0x10 vertical, 0x11 both; an int flips every image)."""
    assert isinstance(image, LazyBlob)
    name = _name(name, "ImageFlip_", "flow.image.flip")
    code = _flip_code_blob(flip_code, image.shape[0], "{}_FlipCode_".format(name))
    return apply("image_flip", [image, code], name=name)


def image_normalize(image, std, mean, name=None):
    """(image - mean) / std per channel of each float HWC image."""
    assert isinstance(std, (list, tuple))
    assert isinstance(mean, (list, tuple))
    return apply("image_normalize", [image], {"std": [float(v) for v in std], "mean": [float(v) for v in mean]},
                 name=_name(name, "ImageNormalize_", "flow.image.normalize"))


def image_batch_align(images, shape, dtype, alignment, name=None):
    """The images as one (n, H, W, c) batch, zero-padded to the largest height and width rounded up to `alignment`
    (a dynamic blob of static shape (n,) + shape)."""
    return apply("image_batch_align", [images], {"shape": tuple(shape), "data_type": dtypes.as_dtype(dtype),
                                                 "alignment": int(alignment)},
                 name=_name(name, "ImageBatchAlign_", "flow.image.batch_align"))


def object_bbox_flip(bbox, image_size, flip_code, name=None):
    """Boxes (xmin, ymin, xmax, ymax) flipped with their images (image_size rows: width, height)."""
    assert isinstance(bbox, LazyBlob) and isinstance(image_size, LazyBlob)
    assert bbox.shape[0] == image_size.shape[0]
    name = _name(name, "ObjectBboxFlip_", "flow.detection.object_bbox_flip")
    code = _flip_code_blob(flip_code, bbox.shape[0], "{}_FlipCode".format(name))
    return apply("object_bbox_flip", [bbox, image_size, code], name=name)


def object_bbox_scale(bbox, scale, name=None):
    """Boxes scaled by their image's (scale_w, scale_h)."""
    assert isinstance(bbox, LazyBlob) and isinstance(scale, LazyBlob)
    assert bbox.shape[0] == scale.shape[0]
    return apply("object_bbox_scale", [bbox, scale], name=_name(name, "ObjectBboxScale_",
                                                                "flow.detection.object_bbox_scale"))


def object_segmentation_polygon_flip(poly, image_size, flip_code, name=None):
    """Polygon points flipped with their images."""
    assert isinstance(poly, LazyBlob) and isinstance(image_size, LazyBlob)
    assert poly.shape[0] == image_size.shape[0]
    name = _name(name, "ObjectSegmPolyFilp_", "flow.detection.object_segmentation_polygon_flip")
    code = _flip_code_blob(flip_code, poly.shape[0], "{}_FlipCode".format(name))
    return apply("object_segmentation_polygon_flip", [poly, image_size, code], name=name)


def object_segmentation_polygon_scale(poly, scale, name=None):
    """Polygon points scaled by their image's (scale_w, scale_h)."""
    assert isinstance(poly, LazyBlob) and isinstance(scale, LazyBlob)
    assert poly.shape[0] == scale.shape[0]
    return apply("object_segmentation_polygon_scale", [poly, scale],
                 name=_name(name, "ObjectSegmPolyFilp_", "flow.detection.object_segmentation_polygon_scale"))


def object_segmentation_polygon_to_mask(poly, poly_index, image_size, name=None):
    """Per image, one (height, width) int8 mask per segment, its polygons filled."""
    assert isinstance(poly, LazyBlob) and isinstance(poly_index, LazyBlob) and isinstance(image_size, LazyBlob)
    assert poly.shape[0] == poly_index.shape[0]
    assert poly.shape[0] == image_size.shape[0]
    return apply("object_segmentation_polygon_to_mask", [poly, poly_index, image_size],
                 name=_name(name, "ObjectSegmPolyToMask_", "flow.detection.object_segmentation_polygon_to_mask"))


def tensor_buffer_to_tensor(x, dtype, instance_shape, name=None):
    """The buffers' arrays (each of instance_shape) as one tensor of shape x.shape + instance_shape."""
    return apply("tensor_buffer_to_tensor", [x], {"dtype": dtypes.as_dtype(dtype),
                                                  "instance_shape": tuple(instance_shape)},
                 name=_name(name, "TensorBufferToTensor_", "flow.tensor_buffer_to_tensor"))


def tensor_to_tensor_buffer(x, instance_dims, name=None):
    """A tensor buffer over x's leading axes, each buffer holding the last `instance_dims` axes."""
    return apply("tensor_to_tensor_buffer", [x], {"instance_dims": int(instance_dims)},
                 name=_name(name, "TensorToTensorBuffer_", "flow.tensor_to_tensor_buffer"))


def gen_tensor_buffer(shape, shape_list, value_list, data_type=dtypes.float32, dynamic_out=False, name=None):
    """(v0.4.0) A tensor buffer of `shape`: buffer i an array of shape_list[i] filled with value_list[i]."""
    return apply("gen_tensor_buffer", [], {"shape": tuple(shape), "shape_list": [tuple(s) for s in shape_list],
                                           "value_list": [float(v) for v in value_list],
                                           "data_type": dtypes.as_dtype(data_type), "dynamic_out": bool(dynamic_out)},
                 name=_name(name, "GenTensorBuffer_", "flow.gen_tensor_buffer"))


# --- tensor lists (OneFlow v0.3.4 `oneflow/python/ops/tensor_list_ops.py`; removed in v0.4.0) --------------------
def tensor_list_to_tensor_buffer(input, name=None):
    """A tensor buffer with one buffer per tensor of the list (each tensor's leading dimension, 1, dropped)."""
    return apply("tensor_list_to_tensor_buffer", [input],
                 name=_name(name, "TensorListToBuffer_", "flow.tensor_list_to_tensor_buffer"))


def tensor_buffer_to_tensor_list(input, shape, dtype, name=None):
    """A tensor list of static shape input.shape + shape: one tensor (1,) + buffer shape per buffer."""
    return apply("tensor_buffer_to_tensor_list", [input], {"shape": tuple(int(d) for d in shape),
                                                          "dtype": dtypes.as_dtype(dtype), "tensor_list": True},
                 name=_name(name, "TensorBufferToList_", "flow.tensor_buffer_to_tensor_list"))


def tensor_list_split(input_tensor_list, name=None):
    """The list's tensors as separate blobs (as many as the list's static first dimension), each without its
    leading dimension."""
    name = _name(name, "TensorListSplit_", "flow.tensor_list_split")
    output_size = input_tensor_list.shape[0]
    outs = apply("tensor_list_split", [input_tensor_list], name=name)
    if output_size == 1 and not isinstance(outs, (tuple, list)):
        outs = [outs]
    return tuple(outs)
