"""`oneflow._C`'s elementwise, comparison and reduction names (OneFlow v0.9.0
`oneflow/core/functional/functional_api.yaml`, functors in `oneflow/core/functional/impl/math_functor.cpp`,
`activation_functor.cpp`): the yaml's argument names, order and defaults, over the registered ops the top-level
functions use, so autograd, SBP and nn.Graph come with them.

Where the yaml has several overloads (Tensor / Scalar forms) one function takes them all, read from the argument
types as OneFlow's overload resolution does. The `*_grad` names compose the derivative from forward ops (OneFlow's
higher_derivative_functor.cpp differentiates them the same way).
"""
import numbers

from oneflow_compat._global import elementwise_extra as _EE
from oneflow_compat._global import functional as _F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global import tensor_functions as _T
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import BOOL as _BOOL, Tensor
from oneflow_compat.ir import dtypes as _dtypes


def _tensor(x, fn, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    return x


def _dims(dim):
    """Int32List[1]: one int or a list of ints (None: every axis)."""
    if dim is None:
        return None
    if isinstance(dim, numbers.Integral):
        return int(dim)
    return [int(d) for d in dim]


# --- comparisons, powers and divisions: the Tensor/Tensor, Tensor/Scalar and Scalar/Tensor overloads ------------
def less(input, other):  # noqa: A002
    """BroadcastLess / ScalarLogicalLess; `less(scalar, tensor)` is scalar < tensor."""
    if not isinstance(input, Tensor):
        return _F.gt(_tensor(other, "less", "other"), input)
    return _F.lt(input, other)


def less_equal(input, other):  # noqa: A002
    if not isinstance(input, Tensor):
        return _F.ge(_tensor(other, "less_equal", "other"), input)
    return _F.le(input, other)


def pow(input, exponent, *, inplace=False):  # noqa: A001,A002
    """Pow / ScalarPow (optionally in place) / ScalarReversePow (`pow(scalar, tensor)`: scalar ** tensor)."""
    if not isinstance(input, Tensor):
        return _F.pow(input, _tensor(exponent, "pow", "exponent"))
    out = _F.pow(input, exponent)
    return _inplace.rebind(input, out) if inplace else out


def floor_divide(input, other, *, inplace=False):  # noqa: A002
    out = _T.floor_divide(_tensor(input, "floor_divide"), other)
    return _inplace.rebind(input, out) if inplace else out


def trunc_divide(input, other, *, inplace=False):  # noqa: A002
    """TruncDiv: the quotient rounded toward zero (C's integer division for integer tensors)."""
    _tensor(input, "trunc_divide")
    out = _EE.trunc(_F.div(input, other))
    if not input.dtype.is_floating:
        out = _F.cast(out, input.dtype)
    return _inplace.rebind(input, out) if inplace else out


def _extreme(name, elementwise, reduce, input, dim, keepdim, other):  # noqa: A002
    """Max / Min: the whole extreme; with an int `dim` the (values, indices) pair; with a Tensor (positionally or
    as `other`) the elementwise one."""
    _tensor(input, name)
    if other is not None:  # the (input, other) overload by keyword
        return elementwise(input, other)
    if isinstance(dim, Tensor):
        return elementwise(input, dim)
    if dim is None:
        return reduce(input)
    values, indices = reduce(input, int(dim), bool(keepdim))
    return values, indices


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001,A002
    return _extreme("max", _F.maximum, _F.max, input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001,A002
    return _extreme("min", _F.minimum, _F.min, input, dim, keepdim, other)


def minimum(input, other):  # noqa: A002
    return _F.minimum(_tensor(input, "minimum"), other)


def maximum(input, other):  # noqa: A002
    return _F.maximum(_tensor(input, "maximum"), other)


def atan2(input, other):  # noqa: A002
    return _T.atan2(_tensor(input, "atan2"), other)


# --- reductions ---------------------------------------------------------------------------------------------------
def amin(input, dim=None, keepdim=False):  # noqa: A002
    return _T.amin(_tensor(input, "amin"), _dims(dim), keepdim)


def amax(input, dim=None, keepdim=False):  # noqa: A002
    return _T.amax(_tensor(input, "amax"), _dims(dim), keepdim)


def reduce_max(x, axis, keepdim=False):
    return _T.amax(_tensor(x, "reduce_max", "x"), _dims(axis), keepdim)


def reduce_min(x, axis, keepdim=False):
    return _T.amin(_tensor(x, "reduce_min", "x"), _dims(axis), keepdim)


def reduce_sum(x, dim=None, keepdim=False):
    """ReduceSum over `dim`, or ReduceSumWhole (a 0-d tensor) without it."""
    return _F.sum(_tensor(x, "reduce_sum", "x"), _dims(dim), keepdim)


def reduce_mean(x, dim=None, keepdim=False):
    return _F.mean(_tensor(x, "reduce_mean", "x"), _dims(dim), keepdim)


def reduce_all(x, dim=None, keepdim=False):
    return _T.all(_tensor(x, "reduce_all", "x"), _dims(dim), keepdim)


def reduce_any(x, dim=None, keepdim=False):
    return _T.any(_tensor(x, "reduce_any", "x"), _dims(dim), keepdim)


def reduce_prod(x, dim=None, keepdim=False, *, dtype=None):
    _tensor(x, "reduce_prod", "x")
    if dtype is not None:
        x = _F.cast(x, dtype)
    elif x.dtype == _BOOL:  # ReduceProdFunctor: a bool tensor's product is int64
        x = _F.cast(x, _dtypes.int64)
    return _F.prod(x, _dims(dim), keepdim)


def logsumexp(x, dim, keepdim=False):
    return _T.logsumexp(_tensor(x, "logsumexp", "x"), _dims(dim), keepdim)


def std(x, dim=None, unbiased=None, keepdim=None):
    """StandardDeviation: unbiased unless told otherwise, dims dropped unless `keepdim`."""
    return _F.std(_tensor(x, "std", "x"), _dims(dim), True if unbiased is None else bool(unbiased), bool(keepdim))


def var(x, dim=None, unbiased=None, keepdim=None):
    return _F.var(_tensor(x, "var", "x"), _dims(dim), True if unbiased is None else bool(unbiased), bool(keepdim))


def sqrt_square_sum(x):
    """SqrtSquareSum: the L2 norm of every element, a 0-d tensor (user op sqrt_square_sum, shape {})."""
    return _F.sqrt(_F.sum(_F.square(_tensor(x, "sqrt_square_sum", "x"))))


def argmin(x, dim=None, keepdim=None, dtype=None):
    out = _F.argmin(_tensor(x, "argmin", "x"), dim, bool(keepdim))
    return out if dtype is None else _F.cast(out, dtype)


def _stage_axis(x, axis, fn):
    axis = [a % x.ndim for a in ([axis] if isinstance(axis, numbers.Integral) else axis)]
    if not axis:
        raise ValueError("%s(): axis must name at least one dimension" % fn)
    return axis


def reduce_max_device_stage(input, axis):  # noqa: A002  (the yaml's `in`)
    """ReduceMaxDeviceStage: (the maximum over `axis` kept, the int8 mask where it is reached, the int32 count)."""
    axis = _stage_axis(_tensor(input, "reduce_max_device_stage", "in"), axis, "reduce_max_device_stage")
    return tuple(apply_op("reduce_max_device_stage", [input], {"axis": axis, "split_axis": axis[0]}))


def reduce_min_device_stage(input, axis):  # noqa: A002
    axis = _stage_axis(_tensor(input, "reduce_min_device_stage", "in"), axis, "reduce_min_device_stage")
    return tuple(apply_op("reduce_min_device_stage", [input], {"axis": axis, "split_axis": axis[0]}))


def reduce_max_global_stage(input, device_count, axis, keepdims=False):  # noqa: A002
    """ReduceMaxGlobalStage: (the maximum of the device stage's values over `axis`, the int8 mask of where)."""
    axis = _stage_axis(_tensor(input, "reduce_max_global_stage", "in"), axis, "reduce_max_global_stage")
    return tuple(apply_op("reduce_max_global_stage", [input, device_count], {"axis": axis, "keepdims": keepdims}))


def reduce_min_global_stage(input, device_count, axis, keepdims=False):  # noqa: A002
    axis = _stage_axis(_tensor(input, "reduce_min_global_stage", "in"), axis, "reduce_min_global_stage")
    return tuple(apply_op("reduce_min_global_stage", [input, device_count], {"axis": axis, "keepdims": keepdims}))


# --- unary math -----------------------------------------------------------------------------------------------------
def _unary(fn, name):
    def unary(x):
        return fn(_tensor(x, name, "x"))
    unary.__name__ = unary.__qualname__ = name
    unary.__doc__ = "`oneflow._C.%s(x)` (functional_api.yaml v0.9.0)." % name
    return unary


reciprocal = _unary(_F.reciprocal, "reciprocal")
sin = _unary(_F.sin, "sin")
cos = _unary(_F.cos, "cos")
cosh = _unary(_T.cosh, "cosh")
sinh = _unary(_T.sinh, "sinh")
tan = _unary(_T.tan, "tan")
log2 = _unary(_T.log2, "log2")
sqrt = _unary(_F.sqrt, "sqrt")
rsqrt = _unary(_F.rsqrt, "rsqrt")
square = _unary(_F.square, "square")
abs = _unary(_F.abs, "abs")  # noqa: A001
ceil = _unary(_F.ceil, "ceil")
floor = _unary(_F.floor, "floor")
erf = _unary(_T.erf, "erf")
erfc = _unary(_T.erfc, "erfc")
expm1 = _unary(_F.expm1, "expm1")
lgamma = _unary(_T.lgamma, "lgamma")
log1p = _unary(_F.log1p, "log1p")
round = _unary(_F.round, "round")  # noqa: A001
sign = _unary(_F.sign, "sign")
rint = _unary(lambda x: apply_op("rint", [x]), "rint")
reciprocal_no_nan = _unary(lambda x: apply_op("reciprocal_no_nan", [x]), "reciprocal_no_nan")


def isnan(input):  # noqa: A002
    return _T.isnan(_tensor(input, "isnan"))


def isinf(input):  # noqa: A002
    return _T.isinf(_tensor(input, "isinf"))


def isfinite(input):  # noqa: A002
    return _T.isfinite(_tensor(input, "isfinite"))


# --- the gradients OneFlow binds (dy times the derivative at x, or at the output y for sigmoid) --------------------
def cosh_grad(x, dy):
    return _F.mul(dy, _T.sinh(_tensor(x, "cosh_grad", "x")))


def tan_grad(x, dy):
    return _F.div(dy, _F.square(_F.cos(_tensor(x, "tan_grad", "x"))))


def tanh_grad(x, dy):
    t = _F.tanh(_tensor(x, "tanh_grad", "x"))
    return _F.mul(dy, _F.sub(1.0, _F.square(t)))


def sigmoid_grad(y, dy):
    _tensor(y, "sigmoid_grad", "y")
    return _F.mul(dy, _F.mul(y, _F.sub(1.0, y)))
