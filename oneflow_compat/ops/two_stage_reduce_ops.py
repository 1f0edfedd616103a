"""`flow.math.two_stage_reduce_max/min` as OneFlow v0.3.4 builds them (`oneflow/python/ops/two_stage_reduce.py`,
`oneflow/user/ops/two_stage_reduce_ops.cpp`): a reduction of a blob split along one of the reduced axes that moves
only one value per device instead of the blob.

* `reduce_{max,min}_device_stage` reads x split along `split_axis` (S(split_axis), its only signature) and gives,
  per device, the extreme of its piece over `axis` (kept, size 1), the int8 mask of where it is reached and the
  int32 count. Its logical outputs therefore hold one entry per device along `split_axis` (size parallel_num
  there): OneFlow's distribute_split / distribute_concat around the per-device ops give the same blob.
* `reduce_{max,min}_global_stage` reduces those entries (read whole, B) over `axis` once more.
* The gradient of each stage is its `_grad` op (kernels/reduce_stages.py); together they split dy evenly among
  every position reaching the global extreme.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, S
from oneflow_compat.kernels import reduce_stages as K
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _device_stage_meta(op):
    x = op.inputs[0]
    axis, d = op.attrs["axis"], op.attrs["split_axis"]
    if d not in axis:
        raise ValueError("%s '%s': the split axis %d must be one of the reduced axes %s" % (
            op.type, op.name, d, list(axis)))
    n = op.placement.parallel_num
    shape = tuple(n if i == d else (1 if i in axis else s) for i, s in enumerate(x.shape))
    return [TensorMeta(shape, x.dtype, x.is_dynamic), TensorMeta(x.shape, dtypes.int8, x.is_dynamic),
            TensorMeta(shape, dtypes.int32, x.is_dynamic)]


def _device_stage_grad_meta(op):
    out_diff, mask, _ = op.inputs
    return [TensorMeta(mask.shape, out_diff.dtype, mask.is_dynamic)]


def _global_stage_meta(op):
    x, count = op.inputs
    if tuple(count.shape) != tuple(x.shape):
        raise ValueError("%s '%s': device_count %s must be shaped like the input %s" % (
            op.type, op.name, count.shape, x.shape))
    axis = op.attrs["axis"]
    if op.attrs["keepdims"]:
        shape = tuple(1 if i in axis else s for i, s in enumerate(x.shape))
    else:
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axis) or (1,)
    return [TensorMeta(shape, x.dtype, x.is_dynamic), TensorMeta(x.shape, dtypes.int8, x.is_dynamic)]


def _global_stage_sbp(op):
    axis, keepdims = op.attrs["axis"], op.attrs["keepdims"]
    sigs = []
    for i in range(len(op.inputs[0].shape)):
        if i not in axis:
            j = i if keepdims else i - sum(1 for a in axis if a < i)
            sigs.append(_sig([S(i), S(i)], [S(j), S(i)]))
    return sigs + [_sig([B, B], [B, B])]


def _global_stage_grad_sbp(op):
    axis, keepdims = op.attrs["axis"], op.attrs["keepdims"]
    sigs = []
    for i in range(len(op.inputs[1].shape)):
        if i not in axis:
            j = i if keepdims else i - sum(1 for a in axis if a < i)
            sigs.append(_sig([S(j), S(i), S(i)], [S(i)]))
    return sigs + [_sig([B, B, B], [B])]


def _register(kind):
    is_max = kind == "max"
    device, global_ = "reduce_%s_device_stage" % kind, "reduce_%s_global_stage" % kind

    def device_grad(op, dys):
        return [apply(device + "_grad", [dys[0], op.outputs[1], op.outputs[2]],
                      {"split_axis": op.attrs["split_axis"]})]

    def global_grad(op, dys):
        return [apply(global_ + "_grad", [dys[0], op.outputs[1], op.inputs[1]],
                      {"axis": op.attrs["axis"], "keepdims": op.attrs["keepdims"]}), None]

    register(OpDef(device, infer=_device_stage_meta, kernel=K.device_stage, num_outputs=3,
                   kernel_attrs=lambda op: {"axis": tuple(op.attrs["axis"]), "is_max": is_max},
                   sbp=lambda op: [_sig([S(op.attrs["split_axis"])], [S(op.attrs["split_axis"])] * 3)],
                   grad=device_grad))
    register(OpDef(device + "_grad", infer=_device_stage_grad_meta, kernel=K.device_stage_grad,
                   sbp=lambda op: [_sig([S(op.attrs["split_axis"])] * 3, [S(op.attrs["split_axis"])])]))
    register(OpDef(global_, infer=_global_stage_meta, kernel=K.global_stage, num_outputs=2,
                   kernel_attrs=lambda op: {"axis": tuple(op.attrs["axis"]), "keepdims": op.attrs["keepdims"],
                                            "is_max": is_max},
                   sbp=_global_stage_sbp, grad=global_grad))
    register(OpDef(global_ + "_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype)],
                   kernel=K.global_stage_grad, kernel_attrs=lambda op: {"axis": tuple(op.attrs["axis"])},
                   sbp=_global_stage_grad_sbp))


_register("max")
_register("min")
