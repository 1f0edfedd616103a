"""Ops as functions on Tensors (`flow.matmul`, `flow.add`, `flow.sum`, `flow.relu`, `flow.softmax`, …), local or
global alike. Each is one or a few registered ops (`ops/*_ops.py`, the declarations legacy jobs use) applied
through `dispatch.apply_op`; the op's SBP signatures decide the output layout (matmul(S0, B) -> S0, matmul(B, S1)
-> S1, matmul(S1, S0) -> P, a sum over a split axis -> P) and autograd uses its gradient rule.

Python numbers mix with tensors (`x + 1`, `2 * x`, `x ** 2`); dtypes are promoted as OneFlow does (an integer
tensor with a float number or a float tensor becomes floating). Reductions over every axis give 0-d tensors.
"""
import builtins
import operator
import collections

import numpy as np

from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import shape as shape_k
from oneflow_compat.ops.array_ops import infer_reshape
from oneflow_compat.runtime import global_eager
from oneflow_compat._global import creation, lazy, views
from oneflow_compat._global.dispatch import apply_op, apply_op_list, binary_operands, grad_mode
from oneflow_compat._global.tensor import BOOL, Tensor, as_dtype, wrap

_Number = (int, float, bool, np.number, np.bool_)


def _is_number(x):
    return isinstance(x, _Number)


def _check(x, what):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): expected a Tensor, got %s" % (what, type(x).__name__))
    return x


def _const(value, like, dtype=None):
    """A 0-d tensor holding `value`, local or broadcast on `like`'s placement."""
    from oneflow_compat import sbp as flow_sbp

    dtype = dtype or like.dtype
    if like.is_global:
        return creation.full((), value, dtype=dtype, placement=like.placement,
                             sbp=[flow_sbp.broadcast] * len(like.sbp))  # B on every mesh axis
    return creation.local_full((), value, dtype, like._device)


# --- dtypes ---------------------------------------------------------------------------------------------------
def _promote(a, b):
    if a is b:
        return a
    if a.is_floating != b.is_floating:
        return a if a.is_floating else b
    if dtypes.bfloat16 in (a, b):  # (float32 storage, 2 bytes in OneFlow): with float16 both become float32
        other = b if a is dtypes.bfloat16 else a
        return dtypes.float32 if other is dtypes.float16 else other
    if a.is_floating:
        return a if a.np.itemsize >= b.np.itemsize else b
    if a is BOOL:
        return b
    if b is BOOL:
        return a
    if a.np.kind == b.np.kind:
        return a if a.np.itemsize >= b.np.itemsize else b
    return dtypes.int64


def _scalar_dtype(t, value):
    """The dtype of `t op value` for a Python number `value`."""
    if isinstance(value, (float, np.floating)) and not t.dtype.is_floating:
        return dtypes.float32
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and t.dtype is BOOL:
        return dtypes.int64
    return t.dtype


def cast(input, dtype):  # noqa: A002
    dtype = as_dtype(dtype)
    if input.dtype is dtype:
        return input
    return apply_op("cast", [input], {"dtype": dtype})


def _same_dtype(x, y):
    if x._value.meta.dtype is y._value.meta.dtype:
        return x, y
    dt = _promote(x.dtype, y.dtype)
    return cast(x, dt), cast(y, dt)


def _tensor_pair(x, y, what, moves=True):
    """The two operands of a binary function as tensors of one dtype; a 0-d CPU tensor beside a tensor on another
    device moved there first (`moves`: OneFlow 0.9's binary functors, CastDeviceForCPUScalarTensor), before any
    broadcast made it a tensor of more elements; other device mixes refused (`dispatch.binary_operands`)."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise TypeError("%s(): expected a Tensor argument" % what)
    if not isinstance(x, Tensor):
        x = _const(x, y, _scalar_dtype(y, x))
    if not isinstance(y, Tensor):
        y = _const(y, x, _scalar_dtype(x, y))
    if x._device != y._device:
        x, y = binary_operands(what, x, y, moves)
    return _same_dtype(x, y)


# --- arithmetic -----------------------------------------------------------------------------------------------
def add(input, other, alpha=1):  # noqa: A002
    if alpha != 1:  # a Python number `other` is scaled as a number (OneFlow's ScalarAdd takes other * alpha)
        other = other * alpha if _is_number(other) else mul(other, alpha)
    if isinstance(input, Tensor) and _is_number(other):
        x = cast(input, _scalar_dtype(input, other))
        # (x + 0 is a new tensor, as in OneFlow: returning x would alias it, and an in-place op on the sum write x)
        return apply_op("scalar_add", [x], {"value": other})
    if isinstance(other, Tensor) and _is_number(input):
        return add(other, input)
    x, y = _tensor_pair(input, other, "add")
    return apply_op("add", [x, y])


def sub(input, other, alpha=1):  # noqa: A002
    if alpha != 1:  # a Python number `other` is scaled as a number (OneFlow's ScalarAdd takes other * alpha)
        other = other * alpha if _is_number(other) else mul(other, alpha)
    if isinstance(input, Tensor) and _is_number(other):
        x = cast(input, _scalar_dtype(input, other))
        return apply_op("scalar_add", [x], {"value": -other})
    if isinstance(other, Tensor) and _is_number(input):
        x = cast(other, _scalar_dtype(other, input))
        return apply_op("scalar_rsub", [x], {"value": input})
    x, y = _tensor_pair(input, other, "sub")
    return apply_op("subtract", [x, y])


def mul(input, other):  # noqa: A002
    if isinstance(input, Tensor) and _is_number(other):
        x = cast(input, _scalar_dtype(input, other))
        return apply_op("scalar_mul", [x], {"value": other})
    if isinstance(other, Tensor) and _is_number(input):
        return mul(other, input)
    x, y = _tensor_pair(input, other, "mul")
    return apply_op("multiply", [x, y])


def _floating(x):
    return x if x.dtype.is_floating else cast(x, dtypes.float32)


def div(input, other, rounding_mode=None):  # noqa: A002
    if rounding_mode is not None:  # OneFlow 0.9's _C.div has no rounding_mode: its argument parser refuses it
        raise TypeError("div(): received an invalid combination of arguments. The valid signatures are:"
                        "\n\t*0: Tensor (Tensor input, Tensor other)\n\t*1: Tensor (Tensor input, Scalar other)"
                        "\n\t*2: Tensor (Scalar input, Tensor other)")
    if isinstance(input, Tensor) and _is_number(other):
        return apply_op("scalar_mul", [_floating(input)], {"value": 1.0 / other})
    if isinstance(other, Tensor) and _is_number(input):
        return apply_op("scalar_rdiv", [_floating(other)], {"value": input})
    x, y = _tensor_pair(input, other, "div")
    return apply_op("divide", [_floating(x), _floating(y)])


def pow(input, exponent):  # noqa: A001,A002
    if isinstance(input, Tensor) and _is_number(exponent):
        x = cast(input, _scalar_dtype(input, exponent))
        return apply_op("scalar_pow", [x], {"value": exponent})
    x, y = _tensor_pair(input, exponent, "pow")
    return apply_op("pow", [x, y])


def _unary(op_type, floating=False):
    def fn(input):  # noqa: A002
        x = _check(input, op_type)
        return apply_op(op_type, [_floating(x) if floating else x])

    fn.__name__ = op_type
    return fn


neg = negative = _unary("negative")
exp = _unary("exp", True)
log = _unary("log", True)
sqrt = _unary("sqrt", True)
rsqrt = _unary("rsqrt", True)
square = _unary("square")
abs = _unary("abs")  # noqa: A001
sign = _unary("sign")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001
reciprocal = _unary("reciprocal", True)
sin = _unary("sin", True)
cos = _unary("cos", True)
log1p = _unary("log1p", True)
log2 = _unary("log2", True)
log10 = _unary("log10", True)
expm1 = _unary("expm1", True)
relu = _unary("relu")
sigmoid = _unary("sigmoid", True)
tanh = _unary("tanh", True)


def leaky_relu(input, negative_slope=0.01):  # noqa: A002
    return apply_op("leaky_relu", [input], {"alpha": float(negative_slope)})


def maximum(input, other):  # noqa: A002
    x, y = _tensor_pair(input, other, "maximum")
    return apply_op("maximum", [x, y])


def minimum(input, other):  # noqa: A002
    x, y = _tensor_pair(input, other, "minimum")
    return apply_op("minimum", [x, y])


def clamp(input, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        raise ValueError("clamp(): at least one of min and max must be given")
    return apply_op("clip_by_value", [input], {"min_value": min, "max_value": max})


clip = clamp


# --- comparisons (OneFlow's bool results) ------------------------------------------------------------------------
def _compare(op_type):
    def fn(input, other):  # noqa: A002
        x, y = _tensor_pair(input, other, op_type)
        return cast(apply_op(op_type, [x, y], requires_grad=False), BOOL)

    fn.__name__ = op_type
    return fn


eq = equal = _compare("equal")
ne = not_equal = _compare("not_equal")
lt = less = _compare("less")
le = less_equal = _compare("less_equal")
gt = greater = _compare("greater")
ge = greater_equal = _compare("greater_equal")


def logical_not(input):  # noqa: A002
    return cast(apply_op("logical_not", [input], requires_grad=False), BOOL)


# --- matrix products --------------------------------------------------------------------------------------------
_MATMUL_ATTRS = {}  # (transpose_a, transpose_b, alpha) -> the op's attrs (shared: nothing writes into attrs)


def matmul(input, other, transpose_a=False, transpose_b=False, alpha=1.0):  # noqa: A002
    if isinstance(input, Tensor) and isinstance(other, Tensor):  # the common case, first
        a, b = input._value.meta, other._value.meta
        if len(a.shape) == 2 and len(b.shape) == 2 and a.dtype is b.dtype:
            key = (transpose_a, transpose_b, alpha)
            attrs = _MATMUL_ATTRS.get(key)
            if attrs is None:
                attrs = _MATMUL_ATTRS[key] = global_eager.FrozenAttrs(
                    transpose_a=bool(transpose_a), transpose_b=bool(transpose_b), alpha=float(alpha))
            return apply_op_list("matmul", [input, other], attrs)[0]
    a, b = _check(input, "matmul"), _check(other, "matmul")
    if a.ndim < 1:  # OneFlow 0.9's words (core/functional/impl/nn_functor.cpp MatMulFunctor)
        raise RuntimeError("Tensor a's dim should >= 1")
    if b.ndim < 1:
        raise RuntimeError("Tensor b's dim should >= 1")
    a, b = _same_dtype(a, b)
    if len(a._value.meta.shape) == 2 and len(b._value.meta.shape) == 2:
        return matmul(a, b, transpose_a, transpose_b, alpha)
    if a.ndim == 1 and b.ndim == 1:
        return sum(mul(a, b))
    if a.ndim == 1:
        return squeeze(matmul(unsqueeze(a, 0), b, transpose_a, transpose_b, alpha), -2)
    if b.ndim == 1:
        return squeeze(matmul(a, unsqueeze(b, 1), transpose_a, transpose_b, alpha), -1)
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b), "alpha": float(alpha)}
    if a.ndim > 2 and b.ndim == 2 and not transpose_a:
        lead = tuple(a.shape[:-1])
        out = apply_op("matmul", [_reshape_op(a, (-1, a.shape[-1])), b], attrs)
        return _reshape_op(out, lead + (out.shape[-1],))
    # batch dims broadcast as numpy's (OneFlow 0.9's BatchMatMul / BroadcastMatmul): each side is expanded to the
    # common batch shape, whose gradient sums back over the broadcast dims
    sa, sb = tuple(a.shape), tuple(b.shape)
    try:
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
    except ValueError:
        raise RuntimeError("matmul(): the batch dims of shapes %s and %s do not broadcast" % (sa, sb)) from None
    if sa[:-2] != batch:
        a = apply_op("expand", [a], {"shape": batch + sa[-2:]})
    if sb[:-2] != batch:
        b = apply_op("expand", [b], {"shape": batch + sb[-2:]})
    return apply_op("matmul", [a, b], attrs)


mm = matmul
bmm = matmul


def dot(input, other):  # noqa: A002
    return sum(mul(input, other))


def linear(input, weight, bias=None):  # noqa: A002
    """input @ weightᵀ + bias (nn.Linear)."""
    out = matmul(input, weight, transpose_b=True)
    return out if bias is None else add(out, bias)


# --- reductions -------------------------------------------------------------------------------------------------
def _axes(dim, ndim):
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    out = []
    for d in dims:
        n = builtins.max(ndim, 1)
        if not -n <= d < n:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                             % (-n, n - 1, d))
        out.append(d % n)
    return sorted(set(out))


def _reduced(shape, axes, keepdim):
    return tuple((1 if i in axes else d) for i, d in enumerate(shape) if keepdim or i not in axes)


def _reduce(op_type, x, dim, keepdim):
    shape = x._value.meta.shape
    axes = _axes(dim, len(shape))
    if not shape:
        return x
    # the axes as a tuple: hashable attrs key the compiled op at once (runtime/global_eager.py)
    out = apply_op(op_type, [x], {"axis": tuple(axes), "keepdims": bool(keepdim)})
    want = _reduced(shape, axes, keepdim)
    return out if out._value.meta.shape == want else _reshape_op(out, want)


def sum(input, dim=None, keepdim=False, dtype=None):  # noqa: A001,A002
    x = _check(input, "sum")
    if dtype is not None:
        x = cast(x, dtype)
    elif not x.dtype.is_floating and x.dtype is not dtypes.int64:
        x = cast(x, dtypes.int64)  # bool / int8 / int32 sums do not wrap
    return _reduce("reduce_sum", x, dim, keepdim)


def mean(input, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """Sum, then a scale: linear like OneFlow's, so the mean over a split axis is a partial sum."""
    x = _check(input, "mean")
    if dtype is not None:
        x = cast(x, dtype)
    if not x.dtype.is_floating:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           "complex dtype. Got: %s" % x.dtype.name.capitalize())
    axes = _axes(dim, x.ndim)
    count = 1
    for a in axes if x.ndim else ():  # a 0-dim tensor's dim 0 / -1 holds its one element
        count *= x.shape[a]
    return mul(_reduce("reduce_sum", x, dim, keepdim), 1.0 / builtins.max(count, 1))


def prod(input, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """The product along `dim`; `dtype` casts the input first, and a bool input multiplies as int64 (OneFlow 0.9's
    ReduceProdFunctor, math_functor.cpp@v0.9.0: flow.prod is _C.reduce_prod)."""
    x = _check(input, "prod")
    if dtype is not None:
        x = cast(x, as_dtype(dtype))
    elif x.dtype is BOOL:
        x = cast(x, dtypes.int64)
    return _reduce("reduce_prod", x, dim, keepdim)


def var(input, dim=None, unbiased=True, keepdim=False):  # noqa: A002
    x = _floating(_check(input, "var"))
    axes = _axes(dim, x.ndim)
    count = 1
    for a in axes if x.ndim else ():  # a 0-dim tensor's dim 0 / -1 holds its one element
        count *= x.shape[a]
    centered = sub(x, mean(x, axes, keepdim=True))
    # no element, or one with the unbiased divisor: nan (OneFlow 0.9's variance kernel, IsNanOut in
    # oneflow/user/kernels/variance_kernel_util.h@v0.9.0), and its gradient is nan too
    divisor = count - (1 if unbiased else 0)
    return mul(sum(square(centered), axes, keepdim), 1.0 / divisor if divisor > 0 else float("nan"))


def std(input, dim=None, unbiased=True, keepdim=False):  # noqa: A002
    return sqrt(var(input, dim, unbiased, keepdim))


_MaxResult = collections.namedtuple("max", ["values", "indices"])
_MinResult = collections.namedtuple("min", ["values", "indices"])


def max(input, dim=None, keepdim=False):  # noqa: A001,A002
    """max(x) -> 0-d; max(x, dim) -> (values, indices); max(x, y) -> elementwise maximum."""
    if isinstance(dim, Tensor):
        return maximum(input, dim)
    x = _check(input, "max")
    if dim is None:
        return _reduce("reduce_max", x, None, False)
    return _MaxResult(_reduce("reduce_max", x, dim, keepdim), argmax(x, dim, keepdim))


def min(input, dim=None, keepdim=False):  # noqa: A001,A002
    if isinstance(dim, Tensor):
        return minimum(input, dim)
    x = _check(input, "min")
    if dim is None:
        return _reduce("reduce_min", x, None, False)
    return _MinResult(_reduce("reduce_min", x, dim, keepdim), argmin(x, dim, keepdim))


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Indices (int64) of the first maximum along `dim` (of the flattened tensor when dim is None)."""
    x = _check(input, "argmax")
    if dim is None:
        out = apply_op("argmax", [_reshape_op(x, (-1,))], requires_grad=False)
        out = _reshape_op(cast(out, dtypes.int64), ())
        return _reshape_op(out, (1,) * x.ndim) if keepdim else out
    d = _axes(dim, x.ndim)[0]
    last = x.ndim - 1
    if d != last:
        perm = [i for i in range(x.ndim) if i != d] + [d]
        x = permute(x, perm)
    out = cast(apply_op("argmax", [x], requires_grad=False), dtypes.int64)
    want = tuple(input.shape[:d]) + tuple(input.shape[d + 1:])
    if tuple(out.shape) != want:
        out = _reshape_op(out, want)
    return unsqueeze(out, d) if keepdim else out


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    """argmax of the negated input in at least float32, as OneFlow 0.9's ArgMinFunctor (core/functional/impl/
    array_functor.cpp: TensorProcessor to DType::Float, Negative, ArgMax): an integer's negation would wrap (uint8,
    the least int64) and a bool has none."""
    x = _check(input, "argmin")
    if x.dtype not in (dtypes.float32, dtypes.float64):
        x = cast(x, dtypes.float32)
    return argmax(neg(x), dim, keepdim)


# --- softmax and losses -------------------------------------------------------------------------------------------
def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, dtype=None):  # noqa: A002
    x = _floating(_check(input, "softmax"))
    if dtype is not None:
        x = cast(x, dtype)
    d = _softmax_dim(x.ndim) if dim is None else _axes(dim, x.ndim)[0]
    return apply_op("softmax", [x], {"axis": d})


def log_softmax(input, dim=None):  # noqa: A002
    x = _floating(_check(input, "log_softmax"))
    d = _softmax_dim(x.ndim) if dim is None else _axes(dim, x.ndim)[0]
    shifted = sub(x, max(x, d, keepdim=True).values.detach())
    return sub(shifted, log(sum(exp(shifted), d, keepdim=True)))


_REDUCTIONS = ("none", "mean", "sum")


class ReductionError(RuntimeError, ValueError):
    """An unknown `reduction`: OneFlow 0.9's RuntimeError and words first (core/functional/impl/nn_functor.cpp
    LossFunctorBase::apply_reduction), then this project's (a ValueError, as it raised before)."""

    def __init__(self, what, reduction):
        super().__init__("Reduction should be none, sum or mean. (%s: reduction must be one of %s, got %r)"
                         % (what, _REDUCTIONS, reduction))


def _reduce_loss(loss, reduction, what):
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return sum(loss)
    if reduction == "none":
        return loss
    raise ReductionError(what, reduction)


def mse_loss(input, target, reduction="mean"):  # noqa: A002
    return _reduce_loss(square(sub(input, target)), reduction, "mse_loss")


def l1_loss(input, target, reduction="mean"):  # noqa: A002
    return _reduce_loss(abs(sub(input, target)), reduction, "l1_loss")


# --- shapes -----------------------------------------------------------------------------------------------------
def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(int(d) for d in shape)


def reshape(input, *shape, **kwargs):  # noqa: A002
    """`reshape(x, 2, 3)`, `reshape(x, (2, 3))` or OneFlow 0.9's `reshape(input, shape=(2, 3))` (flowvision)."""
    if kwargs:
        if set(kwargs) != {"shape"} or shape:
            raise TypeError("reshape() got unexpected arguments %s" % sorted(kwargs))
        shape = (tuple(kwargs["shape"]),)
    x = _check(input, "reshape")
    target = infer_reshape(tuple(x.shape), _shape_arg(shape), "reshape")
    if target == tuple(x.shape) and not views.applicable(x):
        return x
    # (a local eager tensor: a new view even of the same shape, as OneFlow v0.9.0's ReshapeFunctor makes one,
    # core/functional/impl/array_functor.cpp:1404-1422: another tensor, a non-leaf where x records gradients)
    return _reshape_view(x, apply_op("reshape", [x], {"shape": target}), target, strict=False)


VIEW_STRIDE_MESSAGE = ("view size is not compatible with input tensor's size and stride (at least one dimension "
                       "spans across two contiguous subspaces). Use .reshape(...) instead.")


def view(input, *shape, **kwargs):  # noqa: A002
    """`reshape` that must give a view of a local eager tensor (OneFlow 0.9 `ViewFunctor`: an error where the
    strides cannot express the shape; `reshape` copies there)."""
    if kwargs:
        if set(kwargs) != {"size"} or shape:
            raise TypeError("view() got unexpected arguments %s" % sorted(kwargs))
        shape = (tuple(kwargs["size"]),)
    x = _check(input, "view")
    target = infer_reshape(tuple(x.shape), _shape_arg(shape), "view")
    if target == tuple(x.shape) and not views.applicable(x):
        return x  # (a local eager tensor gets a new view, as 0.9's ViewFunctor gives: array_functor.cpp:1428-1445)
    if views.applicable(x):
        lay = views.layout_of(x)
        if views.reshape_strides(lay[0], lay[1], target) is None:
            raise RuntimeError(VIEW_STRIDE_MESSAGE)
    return _reshape_view(x, apply_op("reshape", [x], {"shape": target}), target, strict=True)


def _reshape_op(x, shape):
    """The reshape op alone, for a composite's internal reshapes (of an op's fresh result, or of an input it only
    reads): no view bookkeeping (`views.make`), which only the user's own view ops need — OneFlow's kernels give
    these shapes themselves, and the view machinery costs several µs per call on the eager hot path."""
    shape = tuple(int(d) for d in shape)
    if -1 in shape:
        shape = infer_reshape(tuple(x._value.meta.shape), shape)
    return apply_op("reshape", [x], {"shape": shape})


def _reshape_view(x, out, target, strict):
    """The reshape `out` of x made a view where x's strides allow it (OneFlow's `ComputeStride`), else a copy."""
    lay = None
    if views.applicable(x):
        shape, stride, offset = views.layout_of(x)
        strides = views.reshape_strides(shape, stride, target)
        lay = None if strides is None else (tuple(target), strides, offset)
    return views.make(x, out, lay)


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    x = _check(input, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    # (an integer 0-d tensor is an int, as OneFlow 0.9's argument parser reads it: PyUnpackIntegerScalarTensor)
    s, e = operator.index(start_dim), operator.index(end_dim)
    for d in (s, e):
        if d < -x.ndim or d >= x.ndim:  # (array_functor.cpp:346-354)
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                             % (-x.ndim, x.ndim - 1, d))
    s, e = s % x.ndim, e % x.ndim
    if s > e:  # OneFlow v0.9.0 array_functor.cpp:361-364 (FlattenFunctor); s == e is x itself (:366-367)
        raise RuntimeError("flatten() has invalid args: start_dim (%d) cannot come after end_dim (%d)"
                           % (start_dim, end_dim))
    if s == e:
        return x
    out = apply_op("flatten", [x], {"start_dim": s, "end_dim": e})
    return _reshape_view(x, out, tuple(out._value.meta.shape), strict=False)


def permute(input, *dims):  # noqa: A002
    x = _check(input, "permute")
    perm = tuple(d % x.ndim for d in _shape_arg(dims))
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError("permute(): %s is not a permutation of %d dims" % (perm, x.ndim))
    if perm == tuple(range(x.ndim)) and not views.applicable(x):
        return x  # (a local eager tensor gets a new view: 0.9's TransposeFunctor, math_functor.cpp:1005-1027)
    lay = views.permute_layout(views.layout_of(x), perm) if views.applicable(x) else None
    out = free_view(x, lay)
    if out is not None:
        return out
    return views.make(x, apply_op("transpose", [x], {"perm": perm}), lay)


def free_view(x, lay):
    """The view of local eager tensor x with layout `lay` made without running its op, where nothing is to be
    recorded (x needs no gradient here), as basic indexing makes it: the op's kernel would write a result the view
    replaces (a copy, a launch on a GPU, for nothing). None where the op must run (`lay` None: no view)."""
    if lay is None or (x.requires_grad_flag and grad_mode.stack[-1]):
        return None
    out = wrap(views.view_value(x, lay, TensorMeta(tuple(lay[0]), x._value.meta.dtype)), None, x._device)
    views.register(views.root_of(x), out, lay, x._view_differentiable)
    return out


def transpose(input, dim0, dim1):  # noqa: A002
    x = _check(input, "transpose")
    perm = list(range(x.ndim))
    a, b = dim0 % x.ndim, dim1 % x.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)


def t(input):  # noqa: A002
    if input.ndim > 2:  # OneFlow 0.9's words (core/functional/impl/array_functor.cpp TransposeAllDimFunctor)
        raise RuntimeError("t() expects a tensor with <= 2 dimensions, but input tensor is %dD" % input.ndim)
    return input if input.ndim < 2 else transpose(input, 0, 1)


def squeeze(input, dim=None):  # noqa: A002
    x = _check(input, "squeeze")
    if x.ndim == 0:  # a 0-dim tensor squeezes to itself (dim 0 / -1 allowed, as for any dim of a 1-dim view)
        _axes(dim, 0)
        return x
    if dim is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    else:
        axes = [a for a in _axes(dim, x.ndim) if x.shape[a] == 1]
    if not axes or x.ndim == 0:
        return x
    out = apply_op("squeeze", [x], {"axes": tuple(axes)})
    return views.make(x, out, views.squeeze_layout(views.layout_of(x), axes) if views.applicable(x) else None)


def unsqueeze(input, dim):  # noqa: A002
    x = _check(input, "unsqueeze")
    if not -x.ndim - 1 <= dim <= x.ndim:
        raise IndexError("unsqueeze(): dim %d out of range for %d dims" % (dim, x.ndim))
    axis = dim % (x.ndim + 1)
    out = apply_op("expand_dims", [x], {"axis": axis})
    return views.make(x, out, views.unsqueeze_layout(views.layout_of(x), axis) if views.applicable(x) else None)


def _check_cat_shapes(tensors, axis):
    """OneFlow 0.9's checks and words (core/functional/impl/array_functor.cpp ConcatFunctor); an empty 1-D tensor
    joins anything."""
    first = tensors[0]
    ndim = first.ndim
    for x in tensors:
        if x.numel() == 0 and x.ndim == 1:
            continue
        if x.ndim != ndim:
            raise _ConcatShapeError("Tensors must have same number of dimensions: got %d and %d is expected."
                                    % (ndim, x.ndim))
        for i in range(ndim):
            if i != axis and first.numel() != 0 and x.shape[i] != first.shape[i]:
                raise _ConcatShapeError("Sizes of tensors must match except in dimension %d. Got %d and %d is "
                                        "expected in dimension %d." % (axis, x.shape[i], first.shape[i], i))


class _ConcatShapeError(RuntimeError, ValueError):
    """Tensors cat cannot join: OneFlow 0.9's RuntimeError (a ValueError as the concat op raised before)."""


def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of tensors")
    dt = tensors[0].dtype
    for x in tensors[1:]:
        dt = _promote(dt, x.dtype)
    tensors = [cast(_check(x, "cat"), dt) for x in tensors]
    # an empty 1-D tensor (`flow.Tensor()`) joins any shape: it is left out, as OneFlow 0.9's ConcatFunctor
    # (oneflow/core/functional/impl/array_functor.cpp@v0.9.0) skips inputs with no element and one dimension
    kept = [x for x in tensors if not (x.ndim == 1 and x.numel() == 0)]
    tensors = kept or tensors[:1]
    d = _axes(dim, tensors[0].ndim)[0]
    _check_cat_shapes(tensors, d)
    joined = [x for x in tensors if not (x.numel() == 0 and x.ndim == 1)]  # (OneFlow skips empty 1-D ones)
    if joined and len(joined) < len(tensors):
        tensors = joined
    if len(tensors) == 1:
        return tensors[0]
    return apply_op("concat", tensors, {"axis": d, "max_dim_size": None})


concat = cat


def stack(tensors, dim=0):
    tensors = list(tensors)
    nd = tensors[0].ndim
    d = dim % (nd + 1)
    first = tuple(tensors[0].shape)
    for x in tensors:  # OneFlow 0.9's check and words (core/functional/impl/array_functor.cpp StackFunctor)
        for i in range(nd):
            if x.ndim != nd or x.shape[i] != first[i]:
                raise RuntimeError("stack expects each tensor to be equal size, but got %s at first input and %s "
                                   "which index is %d" % (_shape_text(first), _shape_text(x.shape), i))
    return cat([unsqueeze(x, d) for x in tensors], d)


def where(condition, input=None, other=None):  # noqa: A002
    if input is None or other is None:  # (oneflow.where(condition) alone: `_global/where_forms.py`)
        raise TypeError("where(): input and other are both needed here, got input=%r, other=%r"
                        % (type(input).__name__, type(other).__name__))
    like = next(v for v in (condition, input, other) if isinstance(v, Tensor))
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two numbers (OneFlow's ScalarWhere): their own type decides, not the condition's: a float makes the
        # default floating dtype, ints int64, two bools bool
        if isinstance(input, (float, np.floating)) or isinstance(other, (float, np.floating)):
            from oneflow_compat._global import default_dtype

            kind = default_dtype.get_default_dtype()
        elif isinstance(input, (bool, np.bool_)) and isinstance(other, (bool, np.bool_)):
            kind = BOOL
        else:
            kind = dtypes.int64
        input = _const(input, like, kind)  # noqa: A001
    if not isinstance(input, Tensor):
        input = _const(input, like, _scalar_dtype(other, input) if isinstance(other, Tensor) else None)  # noqa: A001
    if not isinstance(other, Tensor):
        other = _const(other, input, _scalar_dtype(input, other))
    x, y = _same_dtype(input, other)
    return apply_op("where", [condition, x, y])


def masked_fill(input, mask, value):  # noqa: A002
    return where(mask, _const(value, input), input)


def _shape_text(shape):
    return "(" + ",".join(str(n) for n in shape) + ")"


def gather(input, dim, index, sparse_grad=False):  # noqa: A002
    """out[i][j] = input[i][index[i][j]] along `dim`; the output has the index's shape, which may be smaller than
    the input's outside `dim`, and a 0-dim input or index counts as one element (OneFlow 0.9's DimGatherFunctor,
    oneflow/core/functional/impl/array_functor.cpp@v0.9.0, whose checks and messages these are)."""
    x, idx = _check(input, "gather"), _check(index, "gather")
    if idx.dtype not in (dtypes.int32, dtypes.int64):
        raise RuntimeError("gather(): Expected dtype int32 or int64 for index")
    if sparse_grad:
        raise RuntimeError("Only support bool = False for now!")
    same_rank = "Index tensor must have the same number of dimensions as input tensor"
    if x.ndim == 0 or idx.ndim == 0:
        if builtins.max(x.ndim, idx.ndim) > 1:
            raise RuntimeError(same_rank)
        _axes(dim, idx.ndim)
        out = gather(reshape(x, (1,)) if x.ndim == 0 else x, 0, reshape(idx, (1,)) if idx.ndim == 0 else idx)
        return reshape(out, tuple(idx.shape))
    if x.ndim != idx.ndim:
        raise RuntimeError(same_rank)
    d = _axes(dim, idx.ndim)[0]
    xs, js = tuple(x.shape), tuple(idx.shape)
    for i in range(x.ndim):
        if i != d and js[i] > xs[i]:
            raise RuntimeError("Size does not match at dimension %d expected index %s to be smaller than self %s "
                               "apart from dimension %d" % (i, _shape_text(js), _shape_text(xs), d))
    if builtins.any(i != d and js[i] < xs[i] for i in range(x.ndim)):
        x = x[tuple(slice(None) if i == d else slice(0, js[i]) for i in range(x.ndim))]
    last = x.ndim - 1
    if d != last:
        perm = [i for i in range(x.ndim) if i != d] + [d]
        inverse = [perm.index(i) for i in range(x.ndim)]
        out = apply_op("batch_gather", [permute(x, perm), permute(idx, perm)])
        return permute(out, inverse)
    return apply_op("batch_gather", [x, idx])


def one_hot(input, num_classes=-1, on_value=1, off_value=0):  # noqa: A002
    """OneFlow 0.9's OneHotFunctor (core/functional/impl/nn_functor.cpp): index tensors only (its RuntimeError and
    words); float32 values where on_value or off_value is a float, else int64."""
    _check(input, "one_hot")
    if input.dtype.is_floating:
        raise RuntimeError("one_hot is only applicable to index tensor.")
    if num_classes < 0:
        num_classes = int(max(input).item()) + 1
    floating = builtins.any(isinstance(v, float) for v in (on_value, off_value))
    dtype = dtypes.float32 if floating else dtypes.int64
    return apply_op("one_hot", [input], {"depth": int(num_classes), "on_value": on_value, "off_value": off_value,
                                          "dtype": dtype, "axis": input.ndim}, requires_grad=False)


class SliceStepError(RuntimeError, ValueError):
    """`x[::-1]` and `x[::0]`: OneFlow 0.9's RuntimeError and words (core/functional/tensor_index.cpp
    PrepareSliceIndices; api/python/functional/indexing.cpp PySliceUnpack); a ValueError too, as this project (and
    Python's `slice.indices`) raised before."""


class InvalidIndexError(IndexError, TypeError):
    """`x[0.0]`: OneFlow 0.9's IndexError "Invalid index float" (indexing.cpp UnpackIndexItem); a TypeError too, as
    this project raised before."""


def slice_indices(k, dim):
    """`k.indices(dim)` with OneFlow 0.9's checks and words (api/python/functional/indexing.cpp PySliceUnpack): a
    bound that is no integer is a RuntimeError "Invalid slice ...", a step of 0 "slice step cannot be zero."."""
    for bound in (k.start, k.stop, k.step):
        if bound is not None and not hasattr(bound, "__index__"):
            raise SliceStepError("Invalid slice %r" % (k,))
    if k.step is not None and k.step.__index__() == 0:
        raise SliceStepError("slice step cannot be zero.")
    return k.indices(dim)


def index(input, key):  # noqa: A002
    """`input[key]` for ints, slices and Ellipsis (a view op: `slice` then `reshape`)."""
    x = input
    shape = x._value.meta.shape  # (the logical shape, read once: `x.shape` makes a flow.Size at every read)
    one = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if not shape and isinstance(one, (int, np.integer)) and not isinstance(one, bool) and x.is_local \
            and not x.is_lazy and not x.requires_grad_flag:
        # OneFlow 0.9's fast path for one integer (core/functional/impl/array_functor.cpp TensorGetItemFunctor ->
        # tensor_index.cpp ApplySelectIndexing): its RuntimeError and words
        raise RuntimeError("select() cannot be applied to a 0-dim tensor.")
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.any(isinstance(k, Tensor) or isinstance(k, (list, np.ndarray)) for k in key):
        raise NotImplementedError("indexing with tensors or lists is not supported; use gather")
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    ndim = len(shape)
    if n_real > ndim:
        raise IndexError("Too many indices for tensor of dimension %d" % ndim)  # OneFlow 0.9's words
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (ndim - n_real))
        else:
            expanded.append(k)
    slices, out_shape, axis = [], [], 0
    for k in expanded:
        if k is None:
            out_shape.append(1)
            continue
        dim = shape[axis]
        if isinstance(k, (int, np.integer)):
            i = int(k)
            if not -dim <= i < dim:
                # OneFlow 0.9's words (core/functional/tensor_index.cpp ApplySelectIndexing), then numpy's
                raise IndexError("Index out of range (expected to be in range of [%d,%d], but got %d) (index %d is "
                                 "out of bounds for dimension %d with size %d)" % (-dim, dim - 1, i, i, axis, dim))
            i %= dim
            slices.append((i, i + 1, 1))
        elif isinstance(k, slice):
            start, stop, step = slice_indices(k, dim)
            if step <= 0:
                raise SliceStepError("Step must be greater than zero.")
            slices.append((start, stop, step))
            out_shape.append(len(range(start, stop, step)))
        else:  # OneFlow 0.9's IndexError and words (api/python/functional/indexing.cpp UnpackIndexItem)
            raise InvalidIndexError("Invalid index %s" % type(k).__name__)
        axis += 1
    for d in shape[axis:]:
        slices.append((0, d, 1))
        out_shape.append(d)
    out = x
    if views.applicable(x):  # a view (OneFlow's `view::Slice`, then a reshape of the slice: a view too)
        lay = _index_layout(views.layout_of(x), expanded, slices, tuple(out_shape))
        if not (x.requires_grad_flag and grad_mode.stack[-1]):
            out = wrap(views.view_value(x, lay, TensorMeta(tuple(out_shape), x._value.meta.dtype)), None, x._device)
            views.register(views.root_of(x), out, lay, x._view_differentiable)
            return out
        if builtins.any(s != (0, d, 1) for s, d in zip(slices, shape)):
            out = apply_op("slice", [x], {"slice_tup": tuple(slices)})
        if tuple(out_shape) != tuple(out.shape):
            out = apply_op("reshape", [out], {"shape": tuple(out_shape)})
        elif out is x:  # x[...] / x[:]: a view with x's layout
            out = apply_op("identity", [x])
        return views.make(x, out, lay)
    if builtins.any(s != (0, d, 1) for s, d in zip(slices, shape)):
        if not x.is_global and not (x.requires_grad_flag and grad_mode.stack[-1]) and not lazy.tracer_active():
            return _local_slice(x, tuple(slices), tuple(out_shape))
        out = apply_op("slice", [x], {"slice_tup": tuple(slices)})
        views.make(x, out, None)  # (a global tensor's slice owns its memory)
    return reshape(out, tuple(out_shape)) if tuple(out_shape) != tuple(out.shape) else out


def _index_layout(lay, expanded, slices, out_shape):
    """The view layout of `x[key]` as OneFlow 0.9's `TensorGetItemFunctor` makes it (`expanded`: the key's
    entries, `...` expanded; `slices`: (start, stop, step) per dim of x): a `view::Unsqueeze` for each None, one
    `view::Slice` (an int i is i:i+1), then `view::Reshape` to the result's shape (its strides by `ComputeStride`)."""
    for j, k in enumerate(expanded):
        if k is None:
            lay = views.unsqueeze_layout(lay, j)
    full, it = [], iter(slices)
    for k in expanded:
        full.append((0, 1, 1) if k is None else next(it))
    full.extend(it)
    lay = views.slice_layout(lay, full)
    if tuple(lay[0]) != tuple(out_shape):
        lay = (tuple(out_shape), views.reshape_strides(lay[0], lay[1], out_shape), lay[2])
    return lay


def _local_slice(x, slices, out_shape):
    """`x[...]` of a local tensor that needs no gradient and is not traced into a graph: the slice op's kernel on
    its one piece. Through `apply_op` each distinct index would compile a plan of its own (the bounds are the op's
    attrs), and a dataset indexed sample by sample (flowvision's) compiled one per sample, 0.5 ms each."""
    v = x._value
    piece = shape_k.slice_nd(global_eager.xp(v.placement), v.pieces[0], slice_tup=slices).reshape(out_shape)
    return wrap(global_eager.Value(TensorMeta(out_shape, v.meta.dtype), v.placement, v.sbp, [piece]), None,
                x._device)


def clone(input):  # noqa: A002
    """A copy (floating tensors keep their autograd history: the copy is `input * 1`)."""
    if input.dtype.is_floating:
        return mul(input, 1)
    v = input._value
    copy = global_eager.Value(v.meta, v.placement, v.sbp, [p.copy() for p in v.pieces])
    return Tensor._make(copy, input._placement, input._sbp, input._device)


def numel(input):  # noqa: A002
    return input.numel()


def is_tensor(x):
    return isinstance(x, Tensor)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return bool(np.allclose(input.numpy(), other.numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def zeros_like(input, dtype=None, requires_grad=False):  # noqa: A002
    return creation.zeros_like(input, dtype=dtype, requires_grad=requires_grad)


def ones_like(input, dtype=None, requires_grad=False):  # noqa: A002
    return creation.ones_like(input, dtype=dtype, requires_grad=requires_grad)
