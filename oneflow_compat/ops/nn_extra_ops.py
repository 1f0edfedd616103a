"""OneFlow 0.9's further activations (celu, selu, hardshrink, softshrink, softsign, threshold, quick_gelu), cumprod,
broadcast_fmod, unfold and fold (issue 21, the nnextra helper), unfold_tensor (Tensor.unfold; the leftovers helper).

Op types and attribute names are OneFlow v0.9.0's user ops (oneflow/ir/include/OneFlow/OneFlowUserOps.td:
celu `alpha`, hardshrink `lambd`, softshrink `alpha`, threshold `threshold_val` / `value`, cumprod `dim`), so that
another branch adding one shows as a registration clash. Kernels: `kernels/nn_extra.py`. GLU is no op of
its own (OneFlow's functional composes it from a split, sigmoid and a product; so does the surface).
"""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import nn_extra as K
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.activation_ops import _elementwise_activation
from oneflow_compat.ops.math_ops import _broadcast_meta, _unbroadcast
from oneflow_compat.ops.registry import OpDef, apply, register
from oneflow_compat.ops.tensor_ops import _check_axes, _splits_except

# --- activations: each with its `<op>_grad` (dy with the forward input "x" or output "y", as OneFlow saves) --------
_elementwise_activation("celu", K.celu, K.celu_grad, "x", ("alpha",))
_elementwise_activation("selu", K.selu, K.selu_grad)
_elementwise_activation("hardshrink", K.hardshrink, K.hardshrink_grad, "y", ("lambd",))
_elementwise_activation("softshrink", K.softshrink, K.softshrink_grad, "y", ("alpha",))
_elementwise_activation("softsign", K.softsign, K.softsign_grad)
_elementwise_activation("threshold", K.threshold, K.threshold_grad, "x", ("threshold_val", "value"))
_elementwise_activation("quick_gelu", K.quick_gelu, K.quick_gelu_grad)


# --- cumprod ------------------------------------------------------------------------------------------------------
def _cumprod_meta(op):
    x = op.inputs[0]
    _check_axes(op, [op.attrs["dim"]])
    return [TensorMeta(x.shape, x.dtype if x.dtype.is_floating else dtypes.int64, x.is_dynamic)]


def _cumprod_grad_meta(op):
    x = op.inputs[1]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _dim_attr(op):
    return {"dim": op.attrs["dim"]}


def _cumprod_grad_sbp(op):
    """dy and x split alike on any axis but `dim`, or both broadcast."""
    nd = len(op.inputs[0].shape)
    return [((S(i), S(i)), (S(i),)) for i in range(nd) if i != op.attrs["dim"]] + [((B, B), (B,))]


register(OpDef("cumprod", infer=_cumprod_meta, kernel=K.cumprod, kernel_attrs=_dim_attr,
               sbp=lambda op: _splits_except(op, [op.attrs["dim"]], linear=False),
               grad=lambda op, dys: [apply("cumprod_grad", [dys[0], op.inputs[0]], {"dim": op.attrs["dim"]})]))
# (dy, x) -> dx: recomputes the product (zeros in x handled; kernels/nn_extra.cumprod_grad)
register(OpDef("cumprod_grad", infer=_cumprod_grad_meta, kernel=K.cumprod_grad, kernel_attrs=_dim_attr,
               sbp=_cumprod_grad_sbp))


# --- broadcast_fmod -----------------------------------------------------------------------------------------------
def _fmod_grad(op, dys):
    """OneFlow's BroadcastFMod gradient (oneflow/core/autograd/gradient_funcs/broadcast_binary_ops.cpp, v0.9.0):
    dx = dy, dy_other = -dy * trunc(x / other), with trunc(x / other) = (x - fmod(x, other)) / other."""
    a, b = op.inputs
    dy = dys[0]
    quotient = apply("divide", [apply("subtract", [a, op.outputs[0]]), b])
    db = apply("negative", [apply("multiply", [dy, quotient])])
    return [_unbroadcast(dy, a.shape), _unbroadcast(db, b.shape)]


def _fmod_meta(op):
    a, b = op.inputs
    if a.dtype is not b.dtype:
        raise TypeError("broadcast_fmod '%s': operands differ in dtype (%s, %s)" % (op.name, a.dtype.name,
                                                                                 b.dtype.name))
    return _broadcast_meta(op)


register(OpDef("broadcast_fmod", infer=_fmod_meta, kernel=K.broadcast_fmod, grad=_fmod_grad,
               sbp=lambda op: sbp_rules.broadcast_elementwise(op, partial=None)))


# --- unfold / fold (im2col / col2im), OneFlow's unfold_fold_op.cpp (v0.9.0): 4-D channels_first only -------------
_WINDOW_ATTRS = ("kernel_size", "dilation_rate", "padding", "strides")


def _window(op):
    return {k: tuple(int(v) for v in op.attrs[k]) for k in _WINDOW_ATTRS}


def _blocks(op, spatial):
    """The number of blocks along each spatial axis, checked positive."""
    w = _window(op)
    out = []
    for size, k, d, p, s in zip(spatial, w["kernel_size"], w["dilation_rate"], w["padding"], w["strides"]):
        if k < 1 or d < 1 or s < 1 or p < 0:
            raise ValueError("%s '%s': kernel_size, dilation and stride must be positive and padding non-negative, "
                             "got %s" % (op.type, op.name, w))
        n = K._out_size(size, k, d, p, s)
        if n < 1:
            raise ValueError("%s '%s': spatial size %s with %s gives no block" % (op.type, op.name, tuple(spatial),
                                                                               w))
        out.append(n)
    return out


def _unfold_meta(op):
    x = op.inputs[0]
    if len(x.shape) != 4:
        raise ValueError("unfold '%s': input must be 4-D (N, C, H, W), got shape %s (OneFlow 0.9 supports 4-D "
                         "inputs only)" % (op.name, tuple(x.shape)))
    oh, ow = _blocks(op, x.shape[2:])
    kh, kw = op.attrs["kernel_size"]
    return [TensorMeta((x.shape[0], x.shape[1] * kh * kw, oh * ow), x.dtype, x.is_dynamic)]


def _fold_meta(op):
    x = op.inputs[0]
    kh, kw = op.attrs["kernel_size"]
    if len(x.shape) != 3:
        raise ValueError("fold '%s': input must be 3-D (N, C * kh * kw, L), got shape %s" % (op.name,
                                                                                           tuple(x.shape)))
    if x.shape[1] % (kh * kw):
        raise ValueError("fold '%s': input's axis 1 (%d) is no multiple of the kernel's size %d x %d" % (
            op.name, x.shape[1], kh, kw))
    oh, ow = _blocks(op, op.attrs["output_size"])
    if oh * ow != x.shape[2]:
        raise ValueError("fold '%s': input's axis 2 holds %d blocks, but output_size %s with these parameters makes "
                         "%d x %d = %d" % (op.name, x.shape[2], tuple(op.attrs["output_size"]), oh, ow, oh * ow))
    return [TensorMeta((x.shape[0], x.shape[1] // (kh * kw)) + tuple(op.attrs["output_size"]), x.dtype,
                       x.is_dynamic)]


def _batch_sbp(op):
    """Blocks never cross samples: a batch split; both are linear, so partial sums pass through. (A channel split
    would not line up with an even split of axis 1's C * kh * kw columns.)"""
    return [((S(0),), (S(0),)), ((B,), (B,)), ((P,), (P,))]


def _unfold_grad(op, dys):
    attrs = {k: op.attrs[k] for k in _WINDOW_ATTRS}
    attrs["output_size"] = tuple(op.inputs[0].shape[2:])
    return [apply("fold", [dys[0]], attrs)]


register(OpDef("unfold", infer=_unfold_meta, kernel=K.unfold, kernel_attrs=_window, sbp=_batch_sbp,
               grad=_unfold_grad))
register(OpDef("fold", infer=_fold_meta, kernel=K.fold,
               kernel_attrs=lambda op: dict(_window(op), output_size=tuple(op.attrs["output_size"])), sbp=_batch_sbp,
               grad=lambda op, dys: [apply("unfold", [dys[0]], {k: op.attrs[k] for k in _WINDOW_ATTRS})]))


# --- unfold_tensor (Tensor.unfold), OneFlow's unfold_tensor_op.cpp (v0.9.0) -----------------------------------------
_UNFOLD_TENSOR_ATTRS = ("dimension", "size", "step")


def _unfold_tensor_attrs(op):
    return {k: int(op.attrs[k]) for k in _UNFOLD_TENSOR_ATTRS}


def _unfold_tensor_meta(op):
    """OneFlow's InferLogicalTensorDesc: 0 <= dimension < ndim (0 for a 0-d input), 0 < size <= the axis' length
    (1 for a 0-d input), step > 0; the output appends an axis of `size` and `dimension` holds the windows."""
    x = op.inputs[0]
    shape = tuple(x.shape)
    d, size, step = (int(op.attrs[k]) for k in _UNFOLD_TENSOR_ATTRS)
    if not 0 <= d < max(len(shape), 1):
        raise ValueError("unfold_tensor '%s': dimension should be in [0, %d) for an input of shape %s, got %d"
                         % (op.name, max(len(shape), 1), shape, d))
    longest = shape[d] if shape else 1
    if not 0 < size <= longest:
        raise ValueError("unfold_tensor '%s': size should be > 0 and <= %d (the length of dimension %d), got %d"
                         % (op.name, longest, d, size))
    if step <= 0:
        raise ValueError("unfold_tensor '%s': step should be > 0, got %d" % (op.name, step))
    out = shape[:d] + ((shape[d] - size) // step + 1,) + shape[d + 1:] + (size,) if shape else (size,)
    return [TensorMeta(out, x.dtype, x.is_dynamic)]


def _unfold_tensor_sbp(op):
    """A split on any axis but `dimension` passes through (the windows run along `dimension` only); linear, so
    partial sums pass through too (OneFlow's UnfoldTensorOp::GetSbp), and broadcast."""
    nd, d = len(op.inputs[0].shape), op.attrs["dimension"]
    return [((S(i),), (S(i),)) for i in range(nd) if i != d] + [((B,), (B,)), ((P,), (P,))]


def _unfold_tensor_grad_sbp(op):
    """(dy, x) -> dx: dy and x split alike on an axis but `dimension`; all partial (x is read for its shape only:
    OneFlow's UnfoldTensorGradOp::GetSbp), or all broadcast."""
    nd, d = len(op.inputs[1].shape), op.attrs["dimension"]
    return [((S(i), S(i)), (S(i),)) for i in range(nd) if i != d] + [((B, B), (B,)), ((P, P), (P,))]


register(OpDef("unfold_tensor", infer=_unfold_tensor_meta, kernel=K.unfold_tensor, kernel_attrs=_unfold_tensor_attrs,
               sbp=_unfold_tensor_sbp,
               grad=lambda op, dys: [apply("unfold_tensor_grad", [dys[0], op.inputs[0]],
                                           {k: op.attrs[k] for k in _UNFOLD_TENSOR_ATTRS})]))
register(OpDef("unfold_tensor_grad", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype,
                                                                  op.inputs[1].is_dynamic)],
               kernel=K.unfold_tensor_grad, kernel_attrs=_unfold_tensor_attrs, sbp=_unfold_tensor_grad_sbp,
               grad=lambda op, dys: [apply("unfold_tensor", [dys[0]], {k: op.attrs[k] for k in _UNFOLD_TENSOR_ATTRS}),
                                     None]))
