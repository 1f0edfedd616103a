"""OneFlow 0.9's fused `flow._C` functionals (oneflow/core/functional/functional_api.yaml at v0.9.0), composed
from registered ops, so they differentiate, run on global tensors and inside nn.Graph like their parts; the
numbers are those of the unfused formulas OneFlow's own tests compare them with
(python/oneflow/test/modules/test_fused_*.py at v0.9.0):

- `bias_add(x, bias, axis=1)`: x + bias broadcast along `axis`;
- `fused_bias_add_gelu(a, b, *, axis)`, `fused_bias_add_dropout(a, b, *, p=0.5, axis, generator=None)`;
- `fast_gelu(x)` (GELU's tanh approximation) and `fused_fast_gelu_mul(x, multiplier)`;
- `fused_scale_tril(x, diagonal=0, fill_value=0, scale=1)`: x*scale on and below the diagonal, fill_value above;
- `fused_weighted_sum(in, weights, alpha=1.0)`: alpha * sum_i weights[i] * in[i];
- `fused_scale_mask_softmax(x, mask, *, fill_value=0.0, scale=1.0)`: softmax over the last dim of x*scale where
  mask is true and fill_value elsewhere; `fused_scale_mask_softmax_dropout(...)` -> (dropout of it, it);
- `fused_scale_tril_softmax_mask_scale(a, *, p=0.5, diagonal, tril_scale_value, tril_fill_value=0.0)` ->
  (dropout of the softmax of fused_scale_tril(a), that softmax);
- `fused_glu(x, w, b, v=None, c=None, activation="none")`: with (w, b) only, x w^T + b split in two halves
  (hidden, gate) on the last dim; with (v, c) the gate is x v^T + c; the result hidden * activation(gate).
"""
from oneflow_compat._global import functional as F
from oneflow_compat._global import tensor_functions as TF
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.dropout import dropout as _dropout
from oneflow_compat._global.nn_activations import gelu as _gelu, silu as _silu
from oneflow_compat._global.tensor import Tensor


def _tensor(x, fn, arg):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    return x


def _shape_text(shape):
    """OneFlow's Shape::ToString: (4,4), (5,)."""
    return "(%s)" % ",".join(str(d) for d in shape) if len(shape) != 1 else "(%d,)" % shape[0]


def bias_add(x, bias, axis=1):
    _tensor(x, "bias_add", "x")
    _tensor(bias, "bias_add", "bias")
    # OneFlow 0.9's checks and words (core/functional/impl/nn_functor.cpp BiasAddFunctor, user/ops/bias_add_op.cpp)
    ndim = x.ndim
    ax = axis + ndim if axis < 0 else axis
    if not 0 <= ax < ndim:
        raise IndexError("Dimension out of range (expected to be in range of [-%d,%d], but got %d)"
                         % (ndim, ndim - 1, axis))
    if bias.ndim != 1:
        raise RuntimeError("Bias tensor has to be a one-dimensional vector (bias_add(): bias of shape %s)"
                           % (_shape_text(bias.shape),))
    if bias.shape[0] != x.shape[ax]:
        raise RuntimeError("The size of tensor x %s must match the size of tensor b %s at dimension %d"
                           % (_shape_text(x.shape), _shape_text(bias.shape), ax))
    return apply_op("bias_add", [x, bias], {"axis": ax})


def fused_bias_add_gelu(a, b, *, axis):
    return _gelu(bias_add(a, b, axis=axis))


def fused_bias_add_dropout(a, b, *, p=0.5, axis, generator=None):
    return _dropout(bias_add(a, b, axis=axis), p=p, training=True, generator=generator)


def fast_gelu(x):
    return _gelu(_tensor(x, "fast_gelu", "x"), approximate="tanh")


def fused_fast_gelu_mul(x, multiplier):
    return F.mul(fast_gelu(x), _tensor(multiplier, "fused_fast_gelu_mul", "multiplier"))


def fused_scale_tril(x, diagonal=0, fill_value=0, scale=1):
    _tensor(x, "fused_scale_tril", "x")
    lower = F.mul(TF.tril(x, diagonal), scale)
    if fill_value == 0:
        return lower
    upper = TF.triu(F.mul(F.ones_like(x), fill_value), diagonal + 1)
    return F.add(lower, upper)


def fused_weighted_sum(inputs, weights, alpha=1.0):
    inputs = list(inputs)
    weights = list(weights)
    if not inputs or len(inputs) != len(weights):
        raise ValueError("fused_weighted_sum(): expects as many weights as inputs (got %d inputs, %d weights)"
                         % (len(inputs), len(weights)))
    out = F.mul(_tensor(inputs[0], "fused_weighted_sum", "in"), float(weights[0]))
    for t, w in zip(inputs[1:], weights[1:]):
        out = F.add(out, F.mul(_tensor(t, "fused_weighted_sum", "in"), float(w)))
    return F.mul(out, float(alpha))


def fused_scale_mask_softmax(x, mask, *, fill_value=0.0, scale=1.0):
    _tensor(x, "fused_scale_mask_softmax", "x")
    _tensor(mask, "fused_scale_mask_softmax", "mask")
    m = F.cast(mask, x.dtype)
    # mask true: x * scale; mask false: fill_value (OneFlow's kernel; its test writes the same formula)
    scores = F.add(F.mul(F.mul(x, m), scale), F.mul(F.sub(1.0, m), fill_value))
    return F.softmax(scores, dim=-1)


def fused_scale_mask_softmax_dropout(x, mask, *, fill_value=0.0, scale=1.0, p=0.5, training=True, generator=None):
    y = fused_scale_mask_softmax(x, mask, fill_value=fill_value, scale=scale)
    return _dropout(y, p=p, training=training, generator=generator), y


def fused_scale_tril_softmax_mask_scale(a, *, p=0.5, diagonal, tril_scale_value, tril_fill_value=0.0,
                                        generator=None):
    y = F.softmax(fused_scale_tril(a, diagonal, tril_fill_value, tril_scale_value), dim=-1)
    return _dropout(y, p=p, training=True, generator=generator), y


_GLU_ACTIVATIONS = {
    "none": lambda g: g, "sigmoid": F.sigmoid, "relu": F.relu, "gelu": _gelu, "fast_gelu": fast_gelu,
    "silu": _silu,
}


def fused_glu(x, w, b, v=None, c=None, activation="none"):
    if activation not in _GLU_ACTIVATIONS:
        raise ValueError("fused_glu(): activation must be one of %s, got %r" % (sorted(_GLU_ACTIVATIONS), activation))
    if (v is None) != (c is None):
        raise ValueError("fused_glu(): v and c must be given together")
    hidden = F.add(F.matmul(x, w, transpose_b=True), b)
    if v is None:
        half = hidden.shape[-1] // 2
        hidden, gate = TF.narrow(hidden, -1, 0, half), TF.narrow(hidden, -1, half, half)
    else:
        gate = F.add(F.matmul(x, v, transpose_b=True), c)
    return F.mul(hidden, _GLU_ACTIVATIONS[activation](gate))


def fused_matmul_bias(x, weight, bias, _add_to_output=None):
    """x weight^T + bias (on the last dim), plus `_add_to_output` when given."""
    y = bias_add(F.matmul(_tensor(x, "fused_matmul_bias", "x"), weight, transpose_b=True), bias, axis=x.ndim - 1)
    return y if _add_to_output is None else F.add(y, _add_to_output)
