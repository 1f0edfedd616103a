"""`oneflow._C` names functional_api.yaml (OneFlow v0.9.0) binds with `bind_python: true` (lower case, the same YAML
boolean), and the yaml's full signatures of names bound earlier with fewer arguments: `add` / `sub` / `mul`
(alpha, inplace, add's tensor-list form), `relu(x, inplace)`, `layer_norm(x, begin_norm_axis, begin_params_axis,
epsilon)` (OneFlow's python nn.LayerNorm calls this form), `conv2d(..., channel_pos)`, `normalize(...,
use_l2_norm_kernel)`, `local_all_reduce(x, inplace)`. Each keeps the form it replaces working (a superset).
"""

from oneflow_compat._global import functional as _F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global import nn_functional as _nnF
from oneflow_compat._global import nn_model_parallel as _mp
from oneflow_compat._global import nn_norms as _norms
from oneflow_compat._global import tensor_functions as _T
from oneflow_compat._global.c_bindings_nn import _channels_last, _format, _to_first
from oneflow_compat._global.tensor import Tensor


def _tensor(x, fn, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    return x


def _into(input, out, inplace):  # noqa: A002
    return _inplace.rebind(input, out) if inplace else out


# --- comparisons and logic: the Tensor/Tensor, Tensor/Scalar and Scalar/Tensor overloads ----------------------------
def _compare(fn, name, flipped):
    def compare(input, other):  # noqa: A002
        if not isinstance(input, Tensor):
            return flipped(_tensor(other, name, "other"), input)
        return fn(input, other)
    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = "`oneflow._C.%s(input, other)` (either may be a number)." % name
    return compare


broadcast_equal = _compare(_F.eq, "broadcast_equal", _F.eq)
not_equal = _compare(_F.ne, "not_equal", _F.ne)
greater = _compare(_F.gt, "greater", _F.lt)
greater_equal = _compare(_F.ge, "greater_equal", _F.le)
logical_and = _compare(_T.logical_and, "logical_and", _T.logical_and)
logical_or = _compare(_T.logical_or, "logical_or", _T.logical_or)


def logical_not(input):  # noqa: A002
    return _F.logical_not(_tensor(input, "logical_not"))


def where(condition, x, y):
    """Where / WhereScalarX / WhereScalarY / WhereScalarXY: x where condition, else y."""
    return _F.where(_tensor(condition, "where", "condition"), x, y)


def masked_fill(input, mask, value):  # noqa: A002
    return _F.masked_fill(_tensor(input, "masked_fill"), mask, value)


def mul_(input, other):  # noqa: A002
    """InplaceMul / InplaceScalarMul."""
    return _inplace.rebind(_tensor(input, "mul_"), _F.mul(input, other))


# --- the full yaml signatures of earlier names ----------------------------------------------------------------------
def add(input=None, other=None, *, alpha=1, inplace=False, inputs=None):  # noqa: A002
    """Add / ScalarAdd (input + alpha * other, optionally in place) / the sum of a tensor list (`add(inputs)`)."""
    if inputs is not None:
        if input is not None:
            raise TypeError("add(): takes input and other, or inputs, not both")
        input = inputs
    if isinstance(input, (list, tuple)):
        if other is not None:
            raise TypeError("add(): the tensor-list form takes no 'other'")
        out = input[0]
        for t in input[1:]:
            out = _F.add(out, t)
        return _into(input[0], out, inplace)
    if not isinstance(input, Tensor):  # ScalarAdd(Scalar input, Tensor other): input + alpha * other
        return _F.add(_F.mul(_tensor(other, "add", "other"), alpha), input)
    return _into(input, _F.add(input, other, alpha=alpha), inplace)


def sub(input, other, *, alpha=1, inplace=False):  # noqa: A002
    if not isinstance(input, Tensor):  # ScalarSub(Scalar input, Tensor other): input - alpha * other
        return _F.sub(input, _F.mul(_tensor(other, "sub", "other"), alpha))
    return _into(input, _F.sub(input, other, alpha=alpha), inplace)


def mul(input, other, *, inplace=False):  # noqa: A002
    if not isinstance(input, Tensor):
        return _F.mul(_tensor(other, "mul", "other"), input)
    return _into(input, _F.mul(input, other), inplace)


def relu(x, inplace=False):
    return _nnF.relu(_tensor(x, "relu", "x"), inplace=inplace)


def layer_norm(x, *args, **kwargs):
    """LayerNorm(x, begin_norm_axis, begin_params_axis, epsilon): x normalized over its axes from begin_norm_axis
    on, no affine parameters (OneFlow's nn.LayerNorm applies them after). The functional form
    `layer_norm(x, normalized_shape, weight, bias, eps)` bound here before still works (a shape as 2nd argument)."""
    _tensor(x, "layer_norm", "x")
    if "normalized_shape" in kwargs or (args and isinstance(args[0], (list, tuple))):
        return _norms.layer_norm(x, *args, **kwargs)
    names = ("begin_norm_axis", "begin_params_axis", "epsilon")
    if len(args) > 3:
        raise TypeError("layer_norm() takes 4 arguments (x, begin_norm_axis, begin_params_axis, epsilon), got %d"
                        % (len(args) + 1))
    vals = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in vals:
            raise TypeError("layer_norm() got an unexpected or repeated keyword argument '%s'" % k)
        vals[k] = v
    missing = [n for n in names if n not in vals]
    if missing:
        raise TypeError("layer_norm() missing required argument(s): %s" % ", ".join("'%s'" % n for n in missing))
    axis = int(vals["begin_norm_axis"]) % x.ndim
    return _norms.layer_norm(x, tuple(x.shape[axis:]), None, None, float(vals["epsilon"]))


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,  # noqa: A002
           channel_pos="channels_first"):
    _tensor(input, "conv2d"), _tensor(weight, "conv2d", "weight")
    if _format(channel_pos, "conv2d"):
        return _channels_last(lambda t: _nnF.conv2d(t, _to_first(weight), bias, stride, padding, dilation, groups),
                              input)
    return _nnF.conv2d(input, weight, bias, stride, padding, dilation, groups)


def local_all_reduce(x, inplace=False, ranks=None):
    """LocalAllReduce: the sum over ranks of local tensor x, a new tensor (or x itself with inplace); `ranks` (the
    earlier binding's second argument, a list, still taken there) limits the ranks summed over."""
    if isinstance(inplace, (list, tuple)):
        inplace, ranks = False, inplace
    out = _mp.local_all_reduce(x, ranks)
    return _inplace.rebind(x, out) if inplace else out
