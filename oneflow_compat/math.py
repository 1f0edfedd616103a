"""`flow.math.*`: elementwise math, reductions, activations. Binary ops follow the legacy dispatch: Python int or
float -> scalar op; otherwise numpy-style broadcasting between blobs."""
import numpy as np

from oneflow_compat._api import array_api
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops.registry import apply


def _is_scalar(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) or isinstance(x, np.float64)


def _check_blob(x, what):
    if not isinstance(x, LazyBlob):
        raise TypeError("%s expects a blob or a Python int/float, got %s" % (what, type(x).__name__))
    return x


def add(x, y, name=None):
    if _is_scalar(y):
        return apply("scalar_add", [_check_blob(x, "flow.math.add")], {"value": float(y)}, name=name)
    if _is_scalar(x):
        return apply("scalar_add", [_check_blob(y, "flow.math.add")], {"value": float(x)}, name=name)
    return apply("add", [_check_blob(x, "flow.math.add"), _check_blob(y, "flow.math.add")], name=name)


def subtract(x, y, name=None):
    if _is_scalar(y):
        return apply("scalar_add", [_check_blob(x, "flow.math.subtract")], {"value": -float(y)}, name=name)
    if _is_scalar(x):
        return apply("scalar_rsub", [_check_blob(y, "flow.math.subtract")], {"value": float(x)}, name=name)
    return apply("subtract", [_check_blob(x, "flow.math.subtract"), _check_blob(y, "flow.math.subtract")], name=name)


def multiply(x, y, name=None):
    if _is_scalar(y):
        return apply("scalar_mul", [_check_blob(x, "flow.math.multiply")], {"value": float(y)}, name=name)
    if _is_scalar(x):
        return apply("scalar_mul", [_check_blob(y, "flow.math.multiply")], {"value": float(x)}, name=name)
    return apply("multiply", [_check_blob(x, "flow.math.multiply"), _check_blob(y, "flow.math.multiply")], name=name)


def divide(x, y, name=None):
    """x / y as OneFlow v0.3.4's math_ops.divide: a blob divided by 0 is multiplied by 0 (its scalar path sets
    y = 0.0); a number divided by a blob is number · reciprocal_no_nan(blob), so 0 where the blob is 0; integer
    blobs divide as C++ integers (truncated toward zero, in their dtype), a Python number then taken in the
    blob's dtype as OneFlow's scalar kernels take it. (OneFlow multiplied an integer blob by the integer cast of
    1/y, i.e. by 0 for |y| > 1: the quotient is computed instead.)"""
    if _is_scalar(y):
        x = _check_blob(x, "flow.math.divide")
        if not x.dtype.is_floating:
            return apply("divide", [x, _constant_like(x, y)], name=name)
        return apply("scalar_mul", [x], {"value": 0.0 if y == 0 else 1.0 / float(y)}, name=name)
    if _is_scalar(x):
        y = _check_blob(y, "flow.math.divide")
        if not y.dtype.is_floating:
            return apply("divide", [_constant_like(y, x), y], name=name)
        return apply("scalar_mul", [apply("reciprocal_no_nan", [y])], {"value": float(x)}, name=name)
    return apply("divide", [_check_blob(x, "flow.math.divide"), _check_blob(y, "flow.math.divide")], name=name)


def mod(x, y, name=None):
    if _is_scalar(y):
        return apply("scalar_mod", [x], {"value": float(y)}, name=name)
    return apply("floor_mod", [x, y], name=name)


floor_mod = mod


def pow(x, y, name=None):  # noqa: A001
    if _is_scalar(y):
        return apply("scalar_pow", [x], {"value": float(y)}, name=name)
    return apply("pow", [x, y], name=name)


def _binary_blob(op_type, attrs=None):
    def f(x, y, name=None):
        if _is_scalar(y):
            y = _constant_like(x, y)
        if _is_scalar(x):
            x = _constant_like(y, x)
        return apply(op_type, [x, y], attrs, name=name)

    f.__name__ = op_type
    return f


def _constant_like(x, value):
    return apply("fill_like", [x], {"value": float(value)})


# v0.3.4/v0.4.0 give a tie's whole gradient to y (the 0.9 ops split it: see ops/math_ops._minmax_grad)
maximum = _binary_blob("maximum", {"tie_grad": "y"})
minimum = _binary_blob("minimum", {"tie_grad": "y"})
equal = _binary_blob("equal")
not_equal = _binary_blob("not_equal")
less = _binary_blob("less")
less_equal = _binary_blob("less_equal")
greater = _binary_blob("greater")
greater_equal = _binary_blob("greater_equal")
logical_and = _binary_blob("logical_and")


def _unary(op_type):
    def f(x, name=None):
        return apply(op_type, [x], name=name)

    f.__name__ = op_type
    return f


negative = _unary("negative")
exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
square = _unary("square")
abs = _unary("abs")  # noqa: A001
sign = _unary("sign")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001
reciprocal = _unary("reciprocal")
sin = _unary("sin")
cos = _unary("cos")
log1p = _unary("log1p")
expm1 = _unary("expm1")
logical_not = _unary("logical_not")
relu = _unary("relu")
sigmoid = _unary("sigmoid")
tanh = _unary("tanh")
gelu = _unary("gelu")


def leaky_relu(x, alpha=0.2, name=None):
    return apply("leaky_relu", [x], {"alpha": float(alpha)}, name=name)


def softmax(logits, axis=None, name=None):
    return apply("softmax", [logits], {"axis": -1 if axis is None else int(axis)}, name=name)


# --- nn ops family: the activations OneFlow also exports under flow.math (v0.3.4/v0.4.0
# math_unary_elementwise_ops.py `log_sigmoid`, `softplus`: unary ops; math_ops.py `l2_normalize`) ----------------
def log_sigmoid(x, name=None):
    """-log(1 + exp(-x)), elementwise."""
    return apply("log_sigmoid", [_check_blob(x, "flow.math.log_sigmoid")], name=name)


def softplus(x, name=None):
    """log(1 + exp(x)), elementwise."""
    return apply("softplus", [_check_blob(x, "flow.math.softplus")], {"beta": 1.0, "threshold": None}, name=name)


def l2_normalize(input, axis=None, epsilon=1e-12, name=None):  # noqa: A002
    """x / sqrt(max(sum(x², axis), epsilon)) along `axis` (OneFlow's l2_normalize op; its default axis None is
    not accepted: OneFlow's `axis < 0` fails on it, and so does this, with a clearer message)."""
    x = _check_blob(input, "flow.math.l2_normalize")
    if axis is None:
        raise TypeError("flow.math.l2_normalize: axis must be an int, got None")
    nd = len(x.shape)
    if axis < 0:
        axis += nd
    if not (0 <= axis < nd):
        raise AssertionError("flow.math.l2_normalize: axis out of range for an input of %d axes" % nd)
    y, _ = apply("l2_normalize", [x], {"axis": int(axis), "epsilon": float(epsilon)}, name=name)
    return y


def _axis_list(axis):
    if axis is None:
        return None
    if isinstance(axis, int):
        return [axis]
    return list(axis)


def _reduce(op_type):
    def f(input_tensor, axis=None, keepdims=False, name=None):
        return apply(op_type, [input_tensor], {"axis": _axis_list(axis), "keepdims": bool(keepdims)}, name=name)

    f.__name__ = op_type
    return f


reduce_sum = _reduce("reduce_sum")
reduce_mean = _reduce("reduce_mean")
reduce_max = _reduce("reduce_max")
reduce_min = _reduce("reduce_min")
reduce_prod = _reduce("reduce_prod")
reduce_any = _reduce("reduce_any")
reduce_all = _reduce("reduce_all")


def argmax(input, axis=-1, name=None):  # noqa: A002
    """int32 index of the largest entry along `axis` (first one on ties), that axis removed. The argmax op works on
    the last axis; another axis is moved there and back, as OneFlow v0.3.4/v0.4.0 `math_ops.argmax` did."""
    x = _check_blob(input, "flow.math.argmax")
    nd = len(x.shape)
    axis = axis if axis >= 0 else axis + nd
    if not (0 <= axis < nd):
        raise AssertionError("axis out of range")
    if axis == nd - 1:
        return apply("argmax", [x], name=name)
    perm = [i for i in range(nd) if i != axis] + [axis]
    inverse = [perm.index(i) for i in range(nd)]
    y = array_api.transpose(x, perm, name=_suffixed(name, "_transpose"))
    y = array_api.expand_dims(apply("argmax", [y], name=name), -1, name=_suffixed(name, "_expand_dims"))
    y = array_api.transpose(y, inverse, name=_suffixed(name, "_inverse_transpose"))
    return array_api.squeeze(y, [axis], name=_suffixed(name, "_squeeze"))


def _suffixed(name, suffix):
    return None if name is None else name + suffix


def add_n(inputs, name=None):
    inputs = list(inputs)
    if len(inputs) == 1:
        return apply("identity", inputs, name=name)
    return apply("add_n", inputs, name=name)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    return sqrt(reduce_sum(square(input_tensor), axis, keepdims), name=name)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    mean = reduce_mean(input_tensor, axis, True)
    return reduce_mean(square(subtract(input_tensor, mean)), axis, keepdims, name=name)


def cast(x, dtype, name=None):
    return apply("cast", [x], {"dtype": dtypes.as_dtype(dtype)}, name=name)


# --- the rest of OneFlow v0.3.4/v0.4.0's flow.math (the whole legacy API, issue 20) -------------------------------
from oneflow_compat._api.legacy_math import (  # noqa: E402,F401
    _check_axis, _unique, acos, acosh, asin, asinh, atan, atan2, atanh, broadcast_to_compatible_with, cosh, erf,
    erfc, floordiv, fused_scale_tril, fused_scale_tril_softmax_dropout, gelu_grad, in_top_k, lgamma,
    reciprocal_no_nan, reduced_shape_elem_cnt, rint, sigmoid_grad, sigmoid_v2, sinh, tan, tanh_v2, tril,
    two_stage_reduce_max, two_stage_reduce_min, unsorted_batch_segment_sum, unsorted_segment_sum,
    unsorted_segment_sum_like, xdivy, xlogy)


def squared_difference(x, y, name=None):
    """(x - y)², as OneFlow builds it: `name + "_subtract"` then `name + "_square"`."""
    name_subtract = name_square = None
    if name is not None:
        name_subtract, name_square = name + "_subtract", name + "_square"
    return square(subtract(x, y, name_subtract), name_square)


def polyval(coeffs, x, name=None):
    """coeffs[0] x^(n-1) + … + coeffs[n-1] by Horner's rule; a list or tuple of Python numbers."""
    from oneflow_compat._api import ops_api

    if not isinstance(coeffs, (list, tuple)):
        raise ValueError("Argument coeffs must be list type found {}".format(type(coeffs)))
    p = ops_api.zeros_like(x, name=name)
    for c in coeffs:
        p = add(c, multiply(p, x))
    return p


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(Σ exp(x)) over `axis`. OneFlow v0.3.4 computes log(reduce_sum(exp(x))), which overflows once x passes
    ~88 (float32); the same value is computed here as m + log(Σ exp(x - m)), m the maximum over `axis`, which
    gives OneFlow's numbers wherever OneFlow's are finite."""
    name = _unique(name, "ReduceLogSumExp_")
    axis = _check_axis(axis, input_tensor.shape)
    m = apply("reduce_max", [input_tensor], {"axis": axis, "keepdims": True}, name=name + "_max")
    m_b = apply("broadcast_like", [m, input_tensor], name=name + "_max_broadcast")
    shifted = exp(subtract(input_tensor, m_b, name + "_shift"), name + "_exp")
    s = apply("reduce_sum", [shifted], {"axis": axis, "keepdims": keepdims}, name=name + "_reduce_sum")
    m_out = m if keepdims else apply("reshape", [m], {"shape": s.shape}, name=name + "_max_reshape")
    return add(log(s, name + "_log"), m_out, name + "_add")


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(reduce_variance(x)) over `axis` (population variance); an empty axis list gives zeros."""
    from oneflow_compat._api import ops_api

    name = _unique(name, "ReduceStd_")
    axis = _check_axis(axis, input_tensor.shape)
    if isinstance(axis, list) and len(axis) == 0:
        return ops_api.zeros_like(input_tensor, dtype=input_tensor.dtype, name=name + "_zeros_like")
    return sqrt(reduce_variance(input_tensor, axis, keepdims, name + "_reduce_variance"), name + "_sqrt")


def moments(x, axes, keepdims=False, name=None):
    """flow.nn.moments: (reduce_mean, reduce_variance) of x over `axes` (a list), built under the name scope `name`."""
    from oneflow_compat import scope

    assert isinstance(axes, list)
    name = _unique(name, "Moments_")
    with scope.namespace(name):
        return (reduce_mean(x, axis=axes, keepdims=keepdims),
                reduce_variance(x, axis=axes, keepdims=keepdims))


def __getattr__(name):
    # shape-family functions that legacy also exports under flow.math (defined with the array ops)
    if name in ("top_k", "clip_by_value", "clip_by_scalar", "clip"):
        return getattr(array_api, name)
    raise AttributeError("module 'oneflow.math' has no attribute %r" % name)
