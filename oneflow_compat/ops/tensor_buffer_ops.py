"""Ops on tensor buffers (object arrays of per-row ndarrays, kept on the host as the data pipeline's): the image ops
of `flow.image` (image_flip, image_normalize, image_batch_align), the detection ops on boxes and polygons, and the
conversions tensor_buffer_to_tensor / tensor_to_tensor_buffer / gen_tensor_buffer.

Shapes and checks as OneFlow v0.3.4's CPU-only ops declare them (`oneflow/user/ops/image_object_preprocess_ops.cpp`,
`image_batch_align_op.cpp`, `tensor_buffer_ops.cpp`; gen_tensor_buffer: v0.4.0). Every op works row by row along
the batch: S(0) -> S(0) and B -> B.
"""
from oneflow_compat.backend import devices
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, S
from oneflow_compat.kernels import tensor_buffer as K
from oneflow_compat.ops.registry import OpDef, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _rows_sbp(op):
    n_in, n_out = len(op.inputs), len(op.outputs)
    return [_sig([S(0)] * n_in, [S(0)] * n_out), _sig([B] * n_in, [B] * n_out)]


def _check(op, cond, message):
    if not cond:
        raise ValueError("%s '%s': %s" % (op.type, op.name, message))


def _buffer_rows(op, index=0):
    x = op.inputs[index]
    _check(op, x.dtype is dtypes.tensor_buffer and len(x.shape) == 1,
           "input %d must be a 1-d tensor buffer, got %s %s" % (index, x.dtype.name, x.shape))
    return x.shape[0]


def _check_rows(op, n, index, dtype, per_row):
    x = op.inputs[index]
    count = 1
    for d in x.shape:
        count *= d
    _check(op, x.dtype is dtype and count == n * per_row,
           "input %d must be %s with %d entries per image (%d images), got %s %s" % (
               index, dtype.name, per_row, n, x.dtype.name, x.shape))


def _on_host(kernel, attrs):
    """A builder running a tensor-buffer kernel on the host, numeric inputs brought down from the device."""
    def build(op, dev):
        def run(*arrays):
            return kernel(dev.xp, *[a if a.dtype == object else devices.to_host(a) for a in arrays], **attrs(op))
        return run
    return build


def _flip_meta(op):
    n = _buffer_rows(op)
    _check_rows(op, n, len(op.inputs) - 1, dtypes.int8, 1)
    if len(op.inputs) == 3:
        _check_rows(op, n, 1, dtypes.int32, 2)
    return [TensorMeta((n,), dtypes.tensor_buffer)]


def _scale_meta(op):
    n = _buffer_rows(op)
    _check_rows(op, n, 1, dtypes.float32, 2)
    return [TensorMeta((n,), dtypes.tensor_buffer)]


def _no_attrs(op):
    return {}


# vertical_flip_code: OneFlow 0.9's vertical bit (0x02; its nn.image.flip), the legacy 0x10 otherwise
register(OpDef("image_flip", infer=_flip_meta, sbp=_rows_sbp, build=_on_host(
    K.image_flip, lambda op: {"vertical": op.attrs.get("vertical_flip_code", K.VERTICAL)})))
register(OpDef("object_bbox_flip", infer=_flip_meta, build=_on_host(K.object_bbox_flip, _no_attrs), sbp=_rows_sbp))
register(OpDef("object_segmentation_polygon_flip", infer=_flip_meta,
               build=_on_host(K.object_segmentation_polygon_flip, _no_attrs), sbp=_rows_sbp))
register(OpDef("object_bbox_scale", infer=_scale_meta, build=_on_host(K.object_bbox_scale, _no_attrs),
               sbp=_rows_sbp))
register(OpDef("object_segmentation_polygon_scale", infer=_scale_meta,
               build=_on_host(K.object_segmentation_polygon_scale, _no_attrs), sbp=_rows_sbp))


def _normalize_meta(op):
    n = _buffer_rows(op)
    _check(op, len(op.attrs["std"]) == len(op.attrs["mean"]), "std and mean must have one length")
    return [TensorMeta((n,), dtypes.tensor_buffer)]


register(OpDef("image_normalize", infer=_normalize_meta,
               build=_on_host(K.image_normalize, lambda op: {"std": tuple(op.attrs["std"]),
                                                              "mean": tuple(op.attrs["mean"])}),
               sbp=_rows_sbp))


def _to_mask_meta(op):
    n = _buffer_rows(op)
    _check(op, _buffer_rows(op, 1) == n, "poly_index must have one buffer per image")
    _check_rows(op, n, 2, dtypes.int32, 2)
    return [TensorMeta((n,), dtypes.tensor_buffer)]


register(OpDef("object_segmentation_polygon_to_mask", infer=_to_mask_meta,
               build=_on_host(K.object_segmentation_polygon_to_mask, _no_attrs), sbp=_rows_sbp))


def _batch_align_meta(op):
    n = _buffer_rows(op)
    shape, dt, alignment = tuple(op.attrs["shape"]), op.attrs["data_type"], op.attrs["alignment"]
    _check(op, len(shape) == 3, "shape must have 3 axes (image shape), got %s" % (shape,))
    _check(op, dt in (dtypes.uint8, dtypes.float32), "data_type must be uint8 or float32, got %s" % dt.name)
    _check(op, alignment >= 0 and (alignment == 0 or alignment & (alignment - 1) == 0),
           "alignment must be 0 or a power of 2, got %d" % alignment)
    # dynamic_out (OneFlow 0.9's attribute; the legacy op is always dynamic): False keeps the static shape
    return [TensorMeta((n,) + shape, dt, op.attrs.get("dynamic_out", True))]


register(OpDef("image_batch_align", infer=_batch_align_meta,
               build=_on_host(K.image_batch_align, lambda op: {
                   "channels": op.attrs["shape"][2], "np_dtype": op.attrs["data_type"].np,
                   "alignment": op.attrs["alignment"], "max_hw": tuple(op.attrs["shape"][:2]),
                   "static_out": op.attrs.get("dynamic_out", True) is False}),
               sbp=lambda op: [_sig([S(0)], [S(0)])] + [_sig([B], [B])]))


def _to_tensor_meta(op):
    x = op.inputs[0]
    _check(op, x.dtype is dtypes.tensor_buffer, "the input must be a tensor buffer, got %s" % x.dtype.name)
    return [TensorMeta(tuple(x.shape) + tuple(op.attrs["instance_shape"]), op.attrs["dtype"], x.is_dynamic)]


def _leading_sbp(op, nd):
    return [_sig([S(i)], [S(i)]) for i in range(nd)] + [_sig([B], [B])]


register(OpDef("tensor_buffer_to_tensor", infer=_to_tensor_meta,
               build=_on_host(K.tensor_buffer_to_tensor, lambda op: {
                   "np_dtype": op.attrs["dtype"].np, "instance_shape": tuple(op.attrs["instance_shape"])}),
               sbp=lambda op: _leading_sbp(op, len(op.inputs[0].shape))))


def _to_buffer_meta(op):
    x, k = op.inputs[0], op.attrs["instance_dims"]
    _check(op, 0 < k < len(x.shape), "instance_dims must be in 1..%d, got %d" % (len(x.shape) - 1, k))
    return [TensorMeta(x.shape[:len(x.shape) - k], dtypes.tensor_buffer, x.is_dynamic)]


register(OpDef("tensor_to_tensor_buffer", infer=_to_buffer_meta,
               build=_on_host(K.tensor_to_tensor_buffer, lambda op: {"instance_dims": op.attrs["instance_dims"]}),
               sbp=lambda op: _leading_sbp(op, len(op.outputs[0].shape))))


def _gen_meta(op):
    shape = tuple(op.attrs["shape"])
    n = 1
    for d in shape:
        n *= d
    _check(op, len(op.attrs["shape_list"]) == n and len(op.attrs["value_list"]) == n,
           "shape_list and value_list must have one entry per buffer (%d)" % n)
    return [TensorMeta(shape, dtypes.tensor_buffer, op.attrs["dynamic_out"])]


register(OpDef("gen_tensor_buffer", infer=_gen_meta,
               build=lambda op, dev: (lambda: K.gen_tensor_buffer(
                   dev.xp, shape=tuple(op.attrs["shape"]), shape_list=op.attrs["shape_list"],
                   value_list=op.attrs["value_list"], np_dtype=op.attrs["data_type"].np)),
               sbp=lambda op: [_sig([], [B])]))


# --- tensor lists (`oneflow/core/operator/tensor_list_*_op.cpp`, v0.3.4; removed in v0.4.0) ------------------------
# A tensor-list blob's static shape is (N, ...) (N tensors at most); per device its value is a 1-d object array of
# the list's tensors (kernels/tensor_buffer.py). The blob's op carries the attribute `tensor_list`
# (Handle.is_tensor_list).
def _list_to_buffer_meta(op):
    x = op.inputs[0]
    _check(op, x.is_tensor_list, "the input must be a tensor list (a tp.ListListNumpy placeholder or the output of "
                                 "tensor_buffer_to_tensor_list)")
    return [TensorMeta((x.shape[0],), dtypes.tensor_buffer, x.is_dynamic)]


register(OpDef("tensor_list_to_tensor_buffer", infer=_list_to_buffer_meta,
               build=_on_host(K.tensor_list_to_tensor_buffer, lambda op: {}),
               sbp=lambda op: [_sig([S(0)], [S(0)]), _sig([B], [B])]))


def _buffer_to_list_meta(op):
    x = op.inputs[0]
    _check(op, x.dtype is dtypes.tensor_buffer and len(x.shape) == 1,
           "the input must be a 1-d tensor buffer, got %s %s" % (x.dtype.name, x.shape))
    _check(op, op.attrs.get("tensor_list") is True, "the op's attribute tensor_list must be True")
    return [TensorMeta(tuple(x.shape) + tuple(op.attrs["shape"]), op.attrs["dtype"], True)]


register(OpDef("tensor_buffer_to_tensor_list", infer=_buffer_to_list_meta,
               build=_on_host(K.tensor_buffer_to_tensor_list, lambda op: {
                   "shape": tuple(op.attrs["shape"]), "np_dtype": op.attrs["dtype"].np}),
               sbp=lambda op: [_sig([S(0)], [S(0)]), _sig([B], [B])]))


def _list_split_meta(op):
    x = op.inputs[0]
    _check(op, x.is_tensor_list, "the input must be a tensor list")
    _check(op, len(x.shape) > 1, "the tensor list must have at least 2 axes, got %s" % (x.shape,))
    return [TensorMeta(x.shape[1:], x.dtype, True) for _ in range(x.shape[0])]


register(OpDef("tensor_list_split", infer=_list_split_meta,
               build=_on_host(K.tensor_list_split, lambda op: {"n": op.inputs[0].shape[0]}),
               sbp=lambda op: [_sig([S(0)], [S(0)] * op.inputs[0].shape[0]),
                               _sig([B], [B] * op.inputs[0].shape[0])]))


# --- api-misc1: tensor_buffer_to_list_of_tensors_v2 (OneFlow v0.9.0 oneflow/user/ops/tensor_buffer_ops.cpp): one
# output per buffer of the input (out_shapes[i], out_dtypes[i]); B -> B only, as OneFlow's
# DefaultBroadcastToBroadcast -----------------------------------------------------------------------------------------
def _to_list_of_tensors_meta(op):
    x = op.inputs[0]
    n = 1
    for d in x.shape:
        n *= d
    shapes, dts = op.attrs["out_shapes"], op.attrs["out_dtypes"]
    _check(op, x.dtype is dtypes.tensor_buffer, "the input must be a tensor buffer, got %s" % x.dtype.name)
    _check(op, n > 0, "the input holds no buffers")
    _check(op, not x.is_dynamic, "the input must not be dynamic")
    _check(op, len(shapes) == n and len(dts) == n,
           "out_shapes and out_dtypes must have one entry per buffer (%d), got %d and %d" % (n, len(shapes), len(dts)))
    for i, dt in enumerate(dts):
        _check(op, dt.np is not None and dt.np.kind in "biuf",
               "out_dtypes[%d] must be a plain data type, got %s" % (i, dt.name))
    return [TensorMeta(tuple(s), dt, bool(op.attrs["dynamic_out"])) for s, dt in zip(shapes, dts)]


register(OpDef("tensor_buffer_to_list_of_tensors_v2", infer=_to_list_of_tensors_meta,
               build=_on_host(K.tensor_buffer_to_list_of_tensors, lambda op: {
                   "out_shapes": [tuple(s) for s in op.attrs["out_shapes"]],
                   "np_dtypes": [dt.np for dt in op.attrs["out_dtypes"]],
                   "dynamic_out": bool(op.attrs["dynamic_out"])}),
               sbp=lambda op: [_sig([B], [B] * len(op.attrs["out_shapes"]))]))
