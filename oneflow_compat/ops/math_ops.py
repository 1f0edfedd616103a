"""Elementwise, scalar, reduction and matrix ops."""
import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import elementwise as E
from oneflow_compat.kernels import linalg
from oneflow_compat.kernels import reduce as R
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _unbroadcast(g, shape):
    """Gradient of a broadcast input: sum back to its shape (no-op when shapes agree)."""
    if tuple(g.shape) == tuple(shape):
        return g
    return apply("reduce_to_shape", [g], {"shape": tuple(shape)})


def _reduce_to_shape_sbp(op):
    from oneflow_compat.ir.sbp import B, P, S

    g, shape = op.inputs[0].shape, op.attrs["shape"]
    lead = len(g) - len(shape)
    sigs = []
    for i in range(len(g)):
        j = i - lead
        if j >= 0 and shape[j] == g[i]:
            sigs.append(((S(i),), (S(j),)))
        else:
            sigs.append(((S(i),), (P,)))
    return sigs + [((B,), (B,)), ((P,), (P,))]


def _reduce_to_shape_grad(op, dys):
    x = op.inputs[0]
    aligned = (1,) * (len(x.shape) - len(op.attrs["shape"])) + tuple(op.attrs["shape"])  # broadcast_like: same rank
    dy = dys[0] if tuple(dys[0].shape) == aligned else apply("reshape", [dys[0]], {"shape": aligned})
    return apply("broadcast_like", [dy, x])


register(OpDef("reduce_to_shape", infer=lambda op: [TensorMeta(op.attrs["shape"], op.inputs[0].dtype)],
               kernel=R.reduce_to_shape, kernel_attrs=lambda op: {"shape": op.attrs["shape"]}, sbp=_reduce_to_shape_sbp,
               local_attrs=lambda op, dev: {"shape": dev.out_shapes[0]},
               # the sum's gradient: the summed-over axes broadcast back (what broadcast_like's gradient undoes),
               # so gradients of gradients (autograd.grad(create_graph=True)) go through it
               grad=lambda op, dys: [_reduce_to_shape_grad(op, dys)]))


# --- binary elementwise (numpy broadcasting) ------------------------------------------------------------------
class BroadcastShapeError(RuntimeError, ValueError):
    """Shapes a binary op cannot broadcast: OneFlow 0.9's RuntimeError and words (user/ops/
    math_binary_broadcast_ops.cpp); a ValueError too, as numpy's refusal was before."""


def broadcast_shape(x_shape, y_shape):
    """The broadcast of two shapes; a mismatch names the first dimension (of the left-extended shapes) that
    differs, as OneFlow 0.9 does."""
    try:
        return np.broadcast_shapes(x_shape, y_shape)
    except ValueError:
        n = max(len(x_shape), len(y_shape))
        xs = (1,) * (n - len(x_shape)) + tuple(x_shape)
        ys = (1,) * (n - len(y_shape)) + tuple(y_shape)
        i = next(k for k in range(n) if xs[k] != 1 and ys[k] != 1 and xs[k] != ys[k])
        raise BroadcastShapeError("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton "
                                  "dimension %d" % (xs[i], ys[i], i)) from None


def _broadcast_meta(op):
    a, b = op.inputs
    shape = broadcast_shape(a.shape, b.shape)
    dt = op.attrs.get("out_dtype") or a.dtype
    return [TensorMeta(shape, dt, a.is_dynamic or b.is_dynamic)]


def _add_grad(op, dys):
    a, b = op.inputs
    return [_unbroadcast(dys[0], a.shape), _unbroadcast(dys[0], b.shape)]


def _sub_grad(op, dys):
    a, b = op.inputs
    return [_unbroadcast(dys[0], a.shape), _unbroadcast(apply("negative", [dys[0]]), b.shape)]


def _mul_grad(op, dys):
    a, b = op.inputs
    dy = dys[0]
    return [_unbroadcast(apply("multiply", [dy, b]), a.shape), _unbroadcast(apply("multiply", [dy, a]), b.shape)]


def _div_grad(op, dys):
    a, b = op.inputs
    y, dy = op.outputs[0], dys[0]
    da = apply("divide", [dy, b])
    db = apply("negative", [apply("multiply", [da, y])])
    return [_unbroadcast(da, a.shape), _unbroadcast(db, b.shape)]


def _binary(name, fn, grad=None, partial=None, out_dtype=None):
    def sbp(op):
        return sbp_rules.broadcast_elementwise(op, partial=partial)

    infer = _broadcast_meta
    if out_dtype is not None:
        def infer(op):
            m = _broadcast_meta(op)[0]
            return [TensorMeta(m.shape, out_dtype, m.is_dynamic)]
    register(OpDef(name, infer=infer, kernel=fn, grad=grad, sbp=sbp))


_binary("add", E.add, _add_grad, partial="all")
_binary("subtract", E.subtract, _sub_grad, partial="all")
_binary("multiply", E.multiply, _mul_grad, partial="one")
_binary("divide", E.divide, _div_grad, partial=None)
_binary("maximum", E.maximum, lambda op, dys: _minmax_grad(op, dys, "greater_equal"))
_binary("minimum", E.minimum, lambda op, dys: _minmax_grad(op, dys, "less_equal"))
_binary("pow", E.power, lambda op, dys: _pow_grad(op, dys))
_binary("floor_mod", E.floor_mod)
_binary("equal", E.equal, out_dtype=dtypes.int8)
_binary("not_equal", E.not_equal, out_dtype=dtypes.int8)
_binary("less", E.less, out_dtype=dtypes.int8)
_binary("less_equal", E.less_equal, out_dtype=dtypes.int8)
_binary("greater", E.greater, out_dtype=dtypes.int8)
_binary("greater_equal", E.greater_equal, out_dtype=dtypes.int8)
_binary("logical_and", E.logical_and, out_dtype=dtypes.int8)


def _minmax_grad(op, dys, cmp):
    """`cmp` (greater_equal / less_equal) picks a's elements; a tie gives each side half of the gradient, as OneFlow
    0.9's MaximumGradFunctor / MinimumGradFunctor (elementwise_maximum_minimum_kernel.h) and torch do. The legacy
    API's ops carry `tie_grad="y"`: v0.3.4/v0.4.0's kernels give a tie's whole gradient to y
    (`x > y ? dx : dy`, elementwise_maximum_minimum_kernel.cpp@v0.3.4, .h@v0.4.0)."""
    a, b = op.inputs
    strict = {"greater_equal": "greater", "less_equal": "less"}[cmp]
    mask = apply("cast", [apply(strict, [a, b])], {"dtype": a.dtype})
    if op.attrs.get("tie_grad", "half") == "half":
        ties = apply("cast", [apply("equal", [a, b])], {"dtype": a.dtype})
        mask = apply("add", [mask, apply("scalar_mul", [ties], {"value": 0.5})])
    da = apply("multiply", [dys[0], mask])
    db = apply("subtract", [dys[0], da])
    return [_unbroadcast(da, a.shape), _unbroadcast(db, b.shape)]


def _pow_grad(op, dys):
    a, b = op.inputs
    y, dy = op.outputs[0], dys[0]
    da = apply("multiply", [dy, apply("multiply", [b, apply("pow", [a, apply("scalar_add", [b], {"value": -1.0})])])])
    db = apply("multiply", [dy, apply("multiply", [y, apply("log", [a])])])
    return [_unbroadcast(da, a.shape), _unbroadcast(db, b.shape)]


# --- scalar ops ------------------------------------------------------------------------------------------------
def _scalar(name, fn, grad, linear=False):
    register(OpDef(name, infer=_same_meta, kernel=fn, kernel_attrs=lambda op: {"value": op.attrs["value"]},
                   sbp=sbp_rules.unary_linear if linear else sbp_rules.unary, grad=grad))


_scalar("scalar_add", E.scalar_add, lambda op, dys: [dys[0]])
_scalar("scalar_pow", E.scalar_pow,
        lambda op, dys: [apply("multiply", [dys[0], apply("scalar_mul", [
            apply("scalar_pow", [op.inputs[0]], {"value": op.attrs["value"] - 1})], {"value": op.attrs["value"]})])])
_scalar("scalar_rsub", E.scalar_rsub, lambda op, dys: [apply("negative", [dys[0]])])
_scalar("scalar_rdiv", E.scalar_rdiv,
        lambda op, dys: [apply("negative", [apply("multiply", [dys[0], apply("divide", [op.outputs[0], op.inputs[0]])])])])
_scalar("scalar_mod", E.scalar_mod, None)


# --- unary math ------------------------------------------------------------------------------------------------
def _unary(name, fn, grad=None, linear=False):
    register(OpDef(name, infer=_same_meta, kernel=fn, grad=grad,
                   sbp=sbp_rules.unary_linear if linear else sbp_rules.unary))


def _mul(a, b):
    return apply("multiply", [a, b])


_LN2, _LN10 = float(np.log(2.0)), float(np.log(10.0))


_unary("negative", E.negative, lambda op, dys: [apply("negative", [dys[0]])], linear=True)
_unary("exp", E.exp, lambda op, dys: [_mul(dys[0], op.outputs[0])])
_unary("log", E.log, lambda op, dys: [apply("divide", [dys[0], op.inputs[0]])])
_unary("sqrt", E.sqrt,
       lambda op, dys: [apply("divide", [apply("scalar_mul", [dys[0]], {"value": 0.5}), op.outputs[0]])])
_unary("rsqrt", E.rsqrt,
       lambda op, dys: [_mul(dys[0], apply("scalar_mul", [apply("scalar_pow", [op.outputs[0]], {"value": 3.0})],
                                           {"value": -0.5}))])
_unary("square", E.square, lambda op, dys: [_mul(dys[0], apply("scalar_mul", [op.inputs[0]], {"value": 2.0}))])
_unary("abs", E.absolute, lambda op, dys: [_mul(dys[0], apply("sign", [op.inputs[0]]))])
# a zero gradient, so their outputs require grad as OneFlow 0.9's do (user/ops/math_unary_elementwise_seq.h:
# MATH_UNARY_ELEMENTWISE_FUNC_BWD_WITH_FILL_SEQ)
_unary("sign", E.sign, lambda op, dys: [apply("fill_like", [op.inputs[0]], {"value": 0.0})])
_unary("floor", E.floor, lambda op, dys: [apply("fill_like", [op.inputs[0]], {"value": 0.0})])
_unary("ceil", E.ceil, lambda op, dys: [apply("fill_like", [op.inputs[0]], {"value": 0.0})])
_unary("round", E.rint, lambda op, dys: [apply("fill_like", [op.inputs[0]], {"value": 0.0})])
_unary("reciprocal", E.reciprocal,
       lambda op, dys: [apply("negative", [_mul(dys[0], apply("square", [op.outputs[0]]))])])
_unary("sin", E.sin, lambda op, dys: [_mul(dys[0], apply("cos", [op.inputs[0]]))])
_unary("cos", E.cos, lambda op, dys: [apply("negative", [_mul(dys[0], apply("sin", [op.inputs[0]]))])])
_unary("log1p", E.log1p,
       lambda op, dys: [apply("divide", [dys[0], apply("scalar_add", [op.inputs[0]], {"value": 1.0})])])
# OneFlow 0.9's own log2 / log10 ops (user/ops/math_unary_elementwise_seq.h; gradient dy / (x ln b),
# user/kernels/math_unary_elementwise_func.h): one rounding of the result, where log(x) * (1 / ln b) rounds twice
# (a bfloat16 log2 then differs from float32's rounded to bfloat16)
_unary("log2", E.log2, lambda op, dys: [apply("divide", [dys[0], apply("scalar_mul", [op.inputs[0]],
                                                                         {"value": _LN2})])])
_unary("log10", E.log10, lambda op, dys: [apply("divide", [dys[0], apply("scalar_mul", [op.inputs[0]],
                                                                           {"value": _LN10})])])
_unary("expm1", E.expm1, lambda op, dys: [_mul(dys[0], apply("scalar_add", [op.outputs[0]], {"value": 1.0}))])
register(OpDef("logical_not", infer=lambda op: [TensorMeta(op.inputs[0].shape, dtypes.int8, op.inputs[0].is_dynamic)],
               kernel=E.logical_not, sbp=sbp_rules.unary))


# --- cast ------------------------------------------------------------------------------------------------------
def _cast_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, op.attrs["dtype"], x.is_dynamic)]


def _cast_sbp(op):
    # partial sums survive a cast only when it is linear: float -> int truncation is not
    linear = op.attrs["dtype"].is_floating or not op.inputs[0].dtype.is_floating
    return sbp_rules.identity_like(op, linear=linear)


# The gradient is cast back to the input's dtype whatever the dtypes (OneFlow v0.3.4 cast_op.cpp): a cast to an
# integer type passes the gradient through, as an integer (truncated) gradient on its way back.
register(OpDef("cast", infer=_cast_meta, kernel=E.cast,
               kernel_attrs=lambda op: {"dtype": op.attrs["dtype"].np}, sbp=_cast_sbp,
               grad=lambda op, dys: [apply("cast", [dys[0]], {"dtype": op.inputs[0].dtype})]))


# --- reductions ------------------------------------------------------------------------------------------------
def _reduced_shape(shape, axes, keepdims):
    nd = len(shape)
    axes = set(range(nd)) if axes is None else {a % nd for a in axes}
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    return out if out else (1,)


def _reduce_meta(op):
    x = op.inputs[0]
    return [TensorMeta(_reduced_shape(x.shape, op.attrs["axis"], op.attrs["keepdims"]),
                       op.attrs.get("out_dtype") or x.dtype, x.is_dynamic)]


def _reduce_attrs(op):
    a = op.attrs["axis"]
    return {"axis": tuple(a) if a is not None else None, "keepdims": op.attrs["keepdims"]}


def _grad_expand(op, dy):
    """Broadcasts the reduced gradient back over the input's shape."""
    x = op.inputs[0]
    kept = _reduced_shape(x.shape, op.attrs["axis"], True)
    return apply("broadcast_like", [apply("reshape", [dy], {"shape": kept}), x])


def _reduce_sum_grad(op, dys):
    return [_grad_expand(op, dys[0])]


def _reduce_mean_grad(op, dys):
    x = op.inputs[0]
    n = int(np.prod(x.shape)) // max(1, int(np.prod(_reduced_shape(x.shape, op.attrs["axis"], True))))
    return [_grad_expand(op, apply("scalar_mul", [dys[0]], {"value": 1.0 / n}))]


def _reduce_minmax_grad(op, dys):
    x, y = op.inputs[0], op.outputs[0]
    kept = _reduced_shape(x.shape, op.attrs["axis"], True)
    yb = apply("broadcast_like", [apply("reshape", [y], {"shape": kept}), x])
    mask = apply("cast", [apply("equal", [x, yb])], {"dtype": x.dtype})
    cnt = apply("broadcast_like", [apply("reshape", [apply("reduce_sum", [mask], {"axis": op.attrs["axis"],
                                                                                   "keepdims": False})],
                                         {"shape": kept}), x])
    return [apply("divide", [apply("multiply", [_grad_expand(op, dys[0]), mask]), cnt])]


def _reduction(name, kernel, grad, linear, **properties):
    register(OpDef(name, infer=_reduce_meta, kernel=kernel, kernel_attrs=_reduce_attrs, grad=grad,
                   sbp=lambda op: sbp_rules.reduction(op, op.attrs["axis"], op.attrs["keepdims"], linear),
                   **properties))


_reduction("reduce_sum", R.reduce_sum, _reduce_sum_grad, True, fresh_output=True)
_reduction("reduce_mean", R.reduce_mean, _reduce_mean_grad, False)
_reduction("reduce_max", R.reduce_max, _reduce_minmax_grad, False)
_reduction("reduce_min", R.reduce_min, _reduce_minmax_grad, False)
_reduction("reduce_prod", R.reduce_prod,
           lambda op, dys: [apply("divide", [_mul(_grad_expand(op, dys[0]), apply("broadcast_like", [
               apply("reshape", [op.outputs[0]], {"shape": _reduced_shape(op.inputs[0].shape, op.attrs["axis"], True)}),
               op.inputs[0]])), op.inputs[0]])], False)
_reduction("reduce_any", R.reduce_any, None, False)
_reduction("reduce_all", R.reduce_all, None, False)


def _argmax_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape[:-1] if len(x.shape) > 1 else (1,), dtypes.int32, x.is_dynamic)]


register(OpDef("argmax", infer=_argmax_meta, kernel=R.argmax,
               sbp=lambda op: [((sbp_rules.S(i),), (sbp_rules.S(i),)) for i in range(len(op.inputs[0].shape) - 1)]
               + [((sbp_rules.B,), (sbp_rules.B,))]))


def _broadcast_like_sbp(op):
    from oneflow_compat.ir.sbp import B, P, S

    x, like = op.inputs[0].shape, op.inputs[1].shape
    sigs = []
    for i in range(len(like)):
        sigs.append(((S(i) if x[i] == like[i] else B, S(i)), (S(i),)))
    return sigs + [((B, B), (B,)), ((P, B), (P,))]


def _broadcast_like_grad(op, dys):
    return [_unbroadcast(dys[0], op.inputs[0].shape), None]


register(OpDef("broadcast_like", infer=lambda op: [TensorMeta(op.inputs[1].shape, op.inputs[0].dtype,
                                                              op.inputs[1].is_dynamic)],
               kernel=R.broadcast_like, sbp=_broadcast_like_sbp,
               grad=_broadcast_like_grad))


# --- matmul and bias_add ----------------------------------------------------------------------------------------
def _matmul_meta(op):
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    m = a.shape[-1] if ta else a.shape[-2]
    ka = a.shape[-2] if ta else a.shape[-1]
    kb = b.shape[-1] if tb else b.shape[-2]
    n = b.shape[-2] if tb else b.shape[-1]
    if ka != kb or len(a.shape) != len(b.shape) or a.shape[:-2] != b.shape[:-2]:
        raise ValueError("matmul '%s': shapes %s and %s do not match (transpose_a=%s, transpose_b=%s)" % (
            op.name, a.shape, b.shape, ta, tb))
    return [TensorMeta(a.shape[:-2] + (m, n), a.dtype, a.is_dynamic or b.is_dynamic)]


def _mm(a, b, ta=False, tb=False, alpha=1.0):
    return apply("matmul", [a, b], {"transpose_a": ta, "transpose_b": tb, "alpha": alpha})


def _matmul_grad(op, dys):
    a, b = op.inputs
    ta, tb, al = op.attrs["transpose_a"], op.attrs["transpose_b"], op.attrs.get("alpha", 1.0)
    dy = dys[0]
    if not ta:
        da = _mm(dy, b, False, not tb, al)
    else:
        da = _mm(b, dy, tb, True, al)
    if not tb:
        db = _mm(a, dy, not ta, False, al)
    else:
        db = _mm(dy, a, True, ta, al)
    return [da, db]


register(OpDef("matmul", infer=_matmul_meta, kernel=linalg.matmul,
               kernel_attrs=lambda op: {"transpose_a": op.attrs["transpose_a"], "transpose_b": op.attrs["transpose_b"],
                                        "alpha": op.attrs.get("alpha", 1.0)},
               grad=_matmul_grad, sbp=lambda op: sbp_rules.matmul(op, op.attrs["transpose_a"], op.attrs["transpose_b"]),
               fresh_output=True))


def bias_grad_sum(dy, axes):
    """The bias gradient: dy summed over `axes`, accumulated in float32 for float16 data (as OneFlow's bias_add
    gradient does: a float16 sum saturates at 65504 and loses every addend below its last bit)."""
    if dy.dtype is dtypes.float16:
        total = apply("reduce_sum", [apply("cast", [dy], {"dtype": dtypes.float32})], {"axis": axes,
                                                                                      "keepdims": False})
        return apply("cast", [total], {"dtype": dtypes.float16})
    return apply("reduce_sum", [dy], {"axis": axes, "keepdims": False})


def _bias_add_grad(op, dys):
    x = op.inputs[0]
    nd = len(x.shape)
    axis = op.attrs["axis"] % nd
    return [dys[0], bias_grad_sum(dys[0], [i for i in range(nd) if i != axis])]


def _bias_add_sbp(op):
    from oneflow_compat.ir.sbp import B, P, S

    nd = len(op.inputs[0].shape)
    axis = op.attrs["axis"] % nd
    sigs = [((S(i), B), (S(i),)) for i in range(nd) if i != axis]
    sigs += [((S(axis), S(0)), (S(axis),)), ((B, B), (B,)), ((P, P), (P,))]
    return sigs


register(OpDef("bias_add", infer=_same_meta, kernel=E.bias_add,
               kernel_attrs=lambda op: {"axis": op.attrs["axis"] % len(op.inputs[0].shape)},
               grad=_bias_add_grad, sbp=_bias_add_sbp))


# --- fused (made by passes/fusion.py from the ops they replace, with the same values) ---------------------------
def _matmul_relu_grad_meta(op):
    a, b, y = op.inputs
    m = a.shape[1] if op.attrs["transpose_a"] else a.shape[0]
    n = b.shape[0] if op.attrs["transpose_b"] else b.shape[1]
    if len(a.shape) != 2 or len(b.shape) != 2 or tuple(y.shape) != (m, n):
        raise ValueError("matmul_relu_grad '%s': shapes %s, %s and relu output %s do not match" % (
            op.name, a.shape, b.shape, y.shape))
    return [TensorMeta((m, n), a.dtype, a.is_dynamic or b.is_dynamic)]


def _matmul_relu_grad_sbp(op):
    """matmul's signatures whose product is not a partial sum (relu_grad cannot take one), the relu's output laid
    out like the product."""
    from oneflow_compat.ir.sbp import P

    return [(tuple(ins) + (out,), (out,))
            for ins, (out,) in sbp_rules.matmul(op, op.attrs["transpose_a"], op.attrs["transpose_b"]) if out != P]


register(OpDef("matmul_relu_grad", infer=_matmul_relu_grad_meta, kernel=linalg.matmul_relu_grad,
               kernel_attrs=lambda op: {k: op.attrs[k] for k in ("transpose_a", "transpose_b", "alpha")},
               sbp=_matmul_relu_grad_sbp, fresh_output=True))
