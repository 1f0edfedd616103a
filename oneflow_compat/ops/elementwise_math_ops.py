"""OneFlow's `math_unary_elementwise` and `math_binary_elementwise` ops beyond the basic ones of math_ops.py:
acos … tan, erf/erfc, lgamma, rint, reciprocal_no_nan (unary); atan2, floordiv, xdivy, xlogy (binary, same shapes).

Shape, SBP and gradient rules follow OneFlow v0.3.4 `oneflow/user/ops/math_unary_elementwise_op.cpp` and
`math_binary_elementwise_ops.cpp`: the output keeps the input's shape and dtype; any axis may be split (all inputs
alike); each op's gradient is its own `<op>_grad` (unary, from x and dy) or `<op>_x_grad` / `<op>_y_grad` (binary,
from x, y and dz) op. These kernels are registered for floating dtypes only in OneFlow; an integer input is refused
here when the job is built.
"""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import elementwise_math as M
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _floating_meta(op):
    for k, x in enumerate(op.inputs):
        if not x.dtype.is_floating:
            raise TypeError("%s '%s': input %d must be a floating blob (float16/32/64), got %s" % (
                op.type, op.name, k, x.dtype.name))
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, any(i.is_dynamic for i in op.inputs))]


def _same_shape_meta(op):
    shapes = [tuple(x.shape) for x in op.inputs]
    if len(set(shapes)) != 1:
        raise ValueError("%s '%s': inputs must have one shape (OneFlow's math binary elementwise ops do not "
                         "broadcast), got %s" % (op.type, op.name, " and ".join(map(str, shapes))))
    dtypes_ = {x.dtype for x in op.inputs}
    if len(dtypes_) != 1:
        raise TypeError("%s '%s': inputs must have one dtype, got %s" % (
            op.type, op.name, " and ".join(x.dtype.name for x in op.inputs)))
    return _floating_meta(op)


def _grad_sbp(op):
    """(dy, x) or (x, y, dz): any axis split alike; the gradient flowing in (dy / dz) may be a partial sum."""
    n = len(op.inputs)
    dy_index = 0 if n == 2 else 2
    nd = len(op.inputs[0].shape)
    sigs = [_sig([S(i)] * n, [S(i)]) for i in range(nd)] + [_sig([B] * n, [B])]
    sigs.append(_sig([P if k == dy_index else B for k in range(n)], [P]))
    return sigs


def _same_split_sbp(op):
    n = len(op.inputs)
    nd = len(op.inputs[0].shape)
    return [_sig([S(i)] * n, [S(i)]) for i in range(nd)] + [_sig([B] * n, [B])]


# --- unary: (op type, kernel, gradient kernel or None) -----------------------------------------------------------
UNARY = [
    ("acos", M.acos, M.acos_grad),
    ("acosh", M.acosh, M.acosh_grad),
    ("asin", M.asin, M.asin_grad),
    ("asinh", M.asinh, M.asinh_grad),
    ("atan", M.atan, M.atan_grad),
    ("atanh", M.atanh, M.atanh_grad),
    ("cosh", M.cosh, M.cosh_grad),
    ("sinh", M.sinh, M.sinh_grad),
    ("tan", M.tan, M.tan_grad),
    ("erf", M.erf, M.erf_grad),
    ("erfc", M.erfc, M.erfc_grad),
    ("lgamma", M.lgamma, M.lgamma_grad),
    ("reciprocal_no_nan", M.reciprocal_no_nan, M.reciprocal_no_nan_grad),
    ("rint", M.rint, None),  # piecewise constant: OneFlow's gradient is 0, as no gradient here
]


def _unary_grad_rule(grad_type):
    def grad(op, dys):
        return [apply(grad_type, [dys[0], op.inputs[0]])]
    return grad


for _name, _kernel, _grad_kernel in UNARY:
    _grad_type = _name + "_grad" if _grad_kernel is not None else None
    register(OpDef(_name, infer=_floating_meta, kernel=_kernel, sbp=sbp_rules.unary,
                   grad=_unary_grad_rule(_grad_type) if _grad_type else None))
    if _grad_type:
        register(OpDef(_grad_type, infer=_floating_meta, kernel=_grad_kernel, sbp=_grad_sbp))


# --- binary, same shapes: (op type, kernel, x gradient kernel, y gradient kernel) ---------------------------------
BINARY = [
    ("atan2", M.atan2, M.atan2_x_grad, M.atan2_y_grad),
    ("floordiv", M.floordiv, M.zero_grad, M.zero_grad),
    ("xdivy", M.xdivy, M.xdivy_x_grad, M.xdivy_y_grad),
    ("xlogy", M.xlogy, M.xlogy_x_grad, M.xlogy_y_grad),
]


def _binary_grad_rule(name):
    def grad(op, dys):
        x, y = op.inputs
        return [apply(name + "_x_grad", [x, y, dys[0]]), apply(name + "_y_grad", [x, y, dys[0]])]
    return grad


for _name, _kernel, _x_grad, _y_grad in BINARY:
    register(OpDef(_name, infer=_same_shape_meta, kernel=_kernel, sbp=_same_split_sbp,
                   grad=_binary_grad_rule(_name)))
    register(OpDef(_name + "_x_grad", infer=_same_shape_meta, kernel=_x_grad, sbp=_grad_sbp))
    register(OpDef(_name + "_y_grad", infer=_same_shape_meta, kernel=_y_grad, sbp=_grad_sbp))


# --- tril / fused_scale_tril (OneFlow v0.3.4 oneflow/user/ops/tril_op.cpp) -----------------------------------------
def _tril_meta(op):
    x = op.inputs[0]
    if len(x.shape) < 2:
        raise ValueError("%s '%s': the input must have at least 2 axes, got shape %s" % (op.type, op.name, x.shape))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _tril_sbp(op):
    """Split along any axis but the last two; partial sums pass only when the fill value is 0."""
    nd = len(op.inputs[0].shape)
    sigs = [_sig([S(i)], [S(i)]) for i in range(nd - 2)] + [_sig([B], [B])]
    if op.attrs.get("fill_value", 0) == 0:
        sigs.append(_sig([P], [P]))
    return sigs


def _tril_attrs(op):
    return {k: op.attrs[k] for k in ("diagonal", "fill_value", "scale") if k in op.attrs}


register(OpDef("tril", infer=_tril_meta, kernel=M.tril, kernel_attrs=_tril_attrs, sbp=_tril_sbp,
               grad=lambda op, dys: [apply("tril", [dys[0]], {"diagonal": op.attrs["diagonal"], "fill_value": 0})]))
register(OpDef("fused_scale_tril", infer=_tril_meta, kernel=M.fused_scale_tril, kernel_attrs=_tril_attrs,
               sbp=_tril_sbp,
               grad=lambda op, dys: [apply("fused_scale_tril", [dys[0]], {
                   "diagonal": op.attrs["diagonal"], "fill_value": 0, "scale": op.attrs["scale"]})]))
