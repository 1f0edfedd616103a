"""OneFlow 0.9's `roi_align` and `roi_align_grad` user ops (v0.9.0 oneflow/user/ops/roi_align_op.cpp; gradient rule
oneflow/core/autograd/gradient_funcs/roi_align.cpp; kernels: `kernels/roi_align.py`).

x (N, C, H, W) and rois (R, 5) -> y (R, C, pooled_h, pooled_w); attributes spatial_scale, pooled_h, pooled_w,
sampling_ratio, aligned. SBP: OneFlow's one signature (x broadcast, rois and y split along the regions), the
feature map split along channels (each channel is pooled alone), all broadcast. The gradient reaches x only (rois
are coordinates): roi_align_grad(dy, x_like, rois) -> dx, whose regions-split signature gives partial sums (each
device's regions add into the whole map; OneFlow declares dx broadcast there).
"""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import roi_align as K
from oneflow_compat.ops.registry import OpDef, apply, register

_ATTRS = ("spatial_scale", "pooled_h", "pooled_w", "sampling_ratio", "aligned")


def _check(op, cond, message):
    if not cond:
        raise RuntimeError("%s '%s': %s" % (op.type, op.name, message))


def _check_shapes(op, x, rois, what):
    _check(op, len(x.shape) == 4, "The dimension of %s tensor must be equal to 4, but got %d" % (what, len(x.shape)))
    _check(op, len(rois.shape) == 2,
           "The dimension of rois tensor must be equal to 2, but got %d" % len(rois.shape))
    _check(op, rois.shape[1] == 5,
           "The size of rois tensor must be equal to 5 at dimension 1, but got %d" % rois.shape[1])
    _check(op, x.dtype.is_floating and rois.dtype is x.dtype,
           "x and rois must be of one floating dtype, got %s and %s" % (x.dtype.name, rois.dtype.name))
    _check(op, op.attrs["pooled_h"] > 0 and op.attrs["pooled_w"] > 0,
           "pooled_h and pooled_w must be positive, got %d and %d" % (op.attrs["pooled_h"], op.attrs["pooled_w"]))


def _meta(op):
    x, rois = op.inputs
    _check_shapes(op, x, rois, "x")
    return [TensorMeta((rois.shape[0], x.shape[1], op.attrs["pooled_h"], op.attrs["pooled_w"]), x.dtype)]


def _grad_meta(op):
    dy, x, rois = op.inputs
    _check_shapes(op, x, rois, "x_like")
    _check(op, tuple(dy.shape) == (rois.shape[0], x.shape[1], op.attrs["pooled_h"], op.attrs["pooled_w"]),
           "Tensors y and dy must have same shape")
    _check(op, dy.dtype is x.dtype, "The dy tensor and x_like tensor must have same type")
    return [TensorMeta(x.shape, x.dtype)]


def _attrs(op):
    return {k: op.attrs[k] for k in _ATTRS}


def _grad(op, dys):
    return [apply("roi_align_grad", [dys[0], op.inputs[0], op.inputs[1]], _attrs(op)), None]


register(OpDef("roi_align", infer=_meta, kernel=K.roi_align, kernel_attrs=_attrs, grad=_grad,
               sbp=lambda op: [((B, S(0)), (S(0),)), ((S(1), B), (S(1),)), ((B, B), (B,))]))
register(OpDef("roi_align_grad", infer=_grad_meta, kernel=K.roi_align_grad, kernel_attrs=_attrs,
               sbp=lambda op: [((S(0), B, S(0)), (P,)), ((S(1), S(1), B), (S(1),)), ((B, B, B), (B,))]))
