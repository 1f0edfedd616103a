"""Gradient rules of gradient ops, so that gradients of gradients (`autograd.grad(..., create_graph=True)`, a
WGAN-GP gradient penalty, Hessian-vector products) go through the activations, the unary and binary math functions,
convolutions, pooling (average, max, adaptive, with indices, unpooling), resampling and padding, clipping, dropout,
embedding, prelu, diag and the losses (smooth L1, the legacy cross entropies).

OneFlow 0.9 gives its `*_grad` ops gradient functions of their own (`oneflow/core/autograd/higher_order_gradient_funcs/`
at v0.9.0: activation, conv, pool, math unary ...), built from ops that are themselves differentiable; these are
the same derivatives, built here from this registry's ops. Each rule is attached to the `<op>_grad` OpDef that its
family module registered (this module is imported after them), so the gradient check of every op
(`tests/test_gradcheck_all_ops.py`, central differences) checks each rule on the grad op's example rows.

Elementwise `<op>_grad(dy, s)` = dy · f'(s) (s the forward input, or its output where the family says so):
    d/d dy = <op>_grad(g, s),    d/ds = g · dy · f''(s)
with f'' written below for each op (None where f' is piecewise constant: its derivative is 0 away from the kinks,
as OneFlow's and PyTorch's). The linear gradient ops (convolution, pooling, resampling, padding) take the adjoint:
the forward op itself, or the other gradient of the same bilinear form.
"""
import math

from oneflow_compat.kernels import conv_nd
from oneflow_compat.ops import registry
from oneflow_compat.ops.registry import apply

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_FAST_GELU_K = 0.044715
# kernels/nn_extra.py's constants (SELU's of Klambauer et al., QuickGELU's 1.702)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_QUICK_GELU_COEF = 1.702


# --- small builders over blobs ------------------------------------------------------------------------------------
def _mul(a, b):
    return apply("multiply", [a, b])


def _smul(a, c):
    return apply("scalar_mul", [a], {"value": float(c)})


def _sadd(a, c):
    return apply("scalar_add", [a], {"value": float(c)})


def _fill(like, value):
    return apply("fill_like", [like], {"value": float(value)})


def _where_positive(x, then, otherwise):
    return apply("where", [apply("greater", [x, _fill(x, 0.0)]), then, otherwise])


def _exp_of_nonpositive(x, scale=1.0):
    """exp(min(x, 0) / scale): the exponential branch of elu/celu/selu, finite for every x."""
    m = apply("minimum", [x, _fill(x, 0.0)])
    return apply("exp", [m if scale == 1.0 else _smul(m, 1.0 / scale)])


def _sigmoid_slope(s):
    """s (1 - s) of a sigmoid output s."""
    return _mul(s, _sadd(_smul(s, -1.0), 1.0))


def _pow(x, p):
    return apply("scalar_pow", [x], {"value": float(p)})


def _attrs(op, drop=()):
    return {k: v for k, v in op.attrs.items() if k != "name" and k not in drop}


# --- f'' of each elementwise op, from its saved input s and the grad op's attrs ----------------------------------
def _gelu2(x, a):
    x2 = apply("square", [x])
    pdf = _smul(apply("exp", [_smul(x2, -0.5)]), _INV_SQRT_2PI)
    return _mul(pdf, _sadd(_smul(x2, -1.0), 2.0))  # φ(x) (2 - x²)


def _fast_gelu2(x, a):
    # y = x/2 (1 + tanh(u)), u = c (x + k x³): f'' = (1 - t²) (u' - x t u'² + x u''/2), u' = c (1 + 3k x²), u'' = 6ck x
    x2 = apply("square", [x])
    u = _smul(apply("add", [x, _smul(_mul(x2, x), _FAST_GELU_K)]), _SQRT_2_OVER_PI)
    t = apply("tanh", [u])
    du = _smul(_sadd(_smul(x2, 3 * _FAST_GELU_K), 1.0), _SQRT_2_OVER_PI)
    half_x_d2u = _smul(x2, 3 * _SQRT_2_OVER_PI * _FAST_GELU_K)
    inner = apply("subtract", [apply("add", [du, half_x_d2u]), _mul(_mul(x, t), apply("square", [du]))])
    return _mul(_sadd(_smul(apply("square", [t]), -1.0), 1.0), inner)


def _sigmoid_gelu2(c):
    """x · sigmoid(c x) (silu: c = 1, quick_gelu: c = 1.702): f'' = c s (1 - s) (2 + c x (1 - 2s))."""
    def second(x, a):
        s = apply("sigmoid", [_smul(x, c) if c != 1.0 else x])
        one_minus_2s = _sadd(_smul(s, -2.0), 1.0)
        cx = _smul(x, c) if c != 1.0 else x
        out = _mul(_sigmoid_slope(s), _sadd(_mul(cx, one_minus_2s), 2.0))
        return _smul(out, c) if c != 1.0 else out
    return second


def _softplus2(x, a):
    beta, threshold = a.get("beta", 1.0), a.get("threshold")
    bx = _smul(x, beta) if beta != 1.0 else x
    d2 = _sigmoid_slope(apply("sigmoid", [bx]))
    if beta != 1.0:
        d2 = _smul(d2, beta)
    if threshold is not None:  # the linear part above the threshold
        d2 = apply("where", [apply("greater", [bx, _fill(bx, threshold)]), _fill(d2, 0.0), d2])
    return d2


def _log_sigmoid2(x, a):
    return _smul(_sigmoid_slope(apply("sigmoid", [apply("negative", [x])])), -1.0)


def _elu2(x, a):
    e = _smul(_exp_of_nonpositive(x), a.get("alpha", 1.0))
    return _where_positive(x, _fill(x, 0.0), e)


def _celu2(x, a):
    alpha = a.get("alpha", 1.0)
    e = _smul(_exp_of_nonpositive(x, alpha), 1.0 / alpha)
    return _where_positive(x, _fill(x, 0.0), e)


def _selu2(x, a):
    return _where_positive(x, _fill(x, 0.0), _smul(_exp_of_nonpositive(x), _SELU_SCALE * _SELU_ALPHA))


def _hardswish2(x, a):
    # (2x + 3) / 6 inside (-3, 3): slope 1/3 there, 0 outside
    return apply("clip_by_value_grad", [_fill(x, 1.0 / 3.0), x], {"min_value": -3.0, "max_value": 3.0})


def _softsign2(x, a):
    d = _sadd(apply("abs", [x]), 1.0)
    return _smul(apply("divide", [apply("sign", [x]), _pow(d, 3)]), -2.0)  # -2 sign(x) / (1 + |x|)³


def _mish2(x, a):
    # t = tanh(softplus x), σ = sigmoid x: f'' = (1 - t²) σ (2 + x (1 - σ - 2tσ))
    sig = apply("sigmoid", [x])
    t = apply("tanh", [apply("softplus", [x], {"beta": 1.0, "threshold": None})])
    inner = apply("subtract", [_sadd(_smul(sig, -1.0), 1.0), _smul(_mul(t, sig), 2.0)])
    return _mul(_mul(_sadd(_smul(apply("square", [t]), -1.0), 1.0), sig), _sadd(_mul(x, inner), 2.0))


def _erf2(sign):
    def second(x, a):  # erf' = 2/√π e^{-x²}: erf'' = -2x erf'; erfc the negative
        e = _smul(apply("exp", [_smul(apply("square", [x]), -1.0)]), _TWO_OVER_SQRT_PI)
        return _smul(_mul(x, e), -2.0 * sign)
    return second


def _tan2(x, a):
    t = apply("tan", [x])
    return _smul(_mul(t, _sadd(apply("square", [t]), 1.0)), 2.0)  # 2 tan (1 + tan²)


def _arc2(sign, offset, x_sign):
    """asin/acos: ±x (1 - x²)^-3/2; asinh: -x (1 + x²)^-3/2; acosh: -x (x² - 1)^-3/2."""
    def second(x, a):
        base = _sadd(_smul(apply("square", [x]), x_sign), offset)
        return _smul(_mul(x, _pow(base, -1.5)), sign)
    return second


def _atan2nd(sign, x_sign):
    """atan: -2x / (1 + x²)²; atanh: 2x / (1 - x²)²."""
    def second(x, a):
        base = _sadd(_smul(apply("square", [x]), x_sign), 1.0)
        return _smul(apply("divide", [x, apply("square", [base])]), 2.0 * sign)
    return second


def _reciprocal_no_nan2(x, a):
    # f' = -1/x² (0 at 0) is reciprocal_no_nan_grad(1, x); f'' = 2/x³ = -2 f'(x) · reciprocal_no_nan(x)
    d = apply("reciprocal_no_nan_grad", [_fill(x, 1.0), x])
    return _smul(_mul(d, apply("reciprocal_no_nan", [x])), -2.0)


_ELEMENTWISE = {
    "gelu_grad": _gelu2,
    "fast_gelu_grad": _fast_gelu2,
    "quick_gelu_grad": _sigmoid_gelu2(_QUICK_GELU_COEF),
    "silu_grad": _sigmoid_gelu2(1.0),
    "softplus_grad": _softplus2,
    "log_sigmoid_grad": _log_sigmoid2,
    "elu_grad": _elu2,
    "celu_grad": _celu2,
    "selu_grad": _selu2,
    "hardswish_grad": _hardswish2,
    "softsign_grad": _softsign2,
    "mish_grad": _mish2,
    # piecewise linear: f'' = 0 away from the kinks
    "hardsigmoid_grad": None,
    "hardtanh_grad": None,
    "hardshrink_grad": None,
    "softshrink_grad": None,
    "threshold_grad": None,
    "clip_by_value_grad": None,
    # the unary math functions (elementwise_math_ops.py)
    "erf_grad": _erf2(1.0),
    "erfc_grad": _erf2(-1.0),
    "tan_grad": _tan2,
    "sinh_grad": lambda x, a: apply("sinh", [x]),
    "cosh_grad": lambda x, a: apply("cosh", [x]),
    "asin_grad": _arc2(1.0, 1.0, -1.0),
    "acos_grad": _arc2(-1.0, 1.0, -1.0),
    "asinh_grad": _arc2(-1.0, 1.0, 1.0),
    "acosh_grad": _arc2(-1.0, -1.0, 1.0),
    "atan_grad": _atan2nd(-1.0, 1.0),
    "atanh_grad": _atan2nd(1.0, -1.0),
    "reciprocal_no_nan_grad": _reciprocal_no_nan2,
    # erfinv_grad reads the output y: d/dy (√π/2 e^{y²}) = √π y e^{y²} (the chain to x runs through y's record)
    "erfinv_grad": lambda y, a: _smul(_mul(y, apply("exp", [apply("square", [y])])), math.sqrt(math.pi)),
}


def _elementwise_rule(grad_type, second):
    def grad(op, dys):
        g = dys[0]
        if g is None:
            return [None, None]
        dy, s = op.inputs[0], op.inputs[1]
        attrs = _attrs(op)
        d_dy = apply(grad_type, [g, s], attrs)
        if second is None:  # a zero gradient (as relu_grad's), not None: every floating input gets one
            return [d_dy, _fill(s, 0.0)]
        return [d_dy, _mul(_mul(g, dy), second(s, attrs))]
    return grad


# --- the smooth L1 loss: grad(dloss, p, l) = dloss · g(p - l), g = d/β inside |d| < β, else sign(d) ------------------
def _smooth_l1_grad_grad(op, dys):
    g = dys[0]
    if g is None:
        return [None, None, None]
    dloss, p, label = op.inputs
    beta = op.attrs["beta"]
    d_dloss = apply("smooth_l1_loss_grad", [g, p, label], {"beta": beta})
    if beta == 0:
        return [d_dloss, _fill(p, 0.0), _fill(label, 0.0)]
    d = apply("subtract", [p, label])
    inside = apply("less", [apply("abs", [d]), _fill(d, beta)])
    slope = apply("where", [inside, _fill(d, 1.0 / beta), _fill(d, 0.0)])
    dp = _mul(_mul(g, dloss), slope)
    return [d_dloss, dp, apply("negative", [dp])]


# --- convolutions: gin(dy, w) and gw(dy, x) are the two gradients of the bilinear form <dy, conv(x, w)> ------------
def _conv_rules(conv, gin, gw):
    def gin_grad(op, dys):  # <dX, gin(dy, w)> = <dy, conv(dX, w)>
        g = dys[0]
        if g is None:
            return [None, None]
        dy, w = op.inputs
        base = _attrs(op, ("input_shape",))
        return [apply(conv, [g, w], base), apply(gw, [dy, g], dict(base, weight_shape=tuple(w.shape)))]

    def gw_grad(op, dys):  # <dW, gw(dy, x)> = <dy, conv(x, dW)>
        g = dys[0]
        if g is None:
            return [None, None]
        dy, x = op.inputs
        base = _attrs(op, ("weight_shape",))
        return [apply(conv, [x, g], base), apply(gin, [dy, g], dict(base, input_shape=tuple(x.shape)))]

    registry.get(gin).grad = gin_grad
    registry.get(gw).grad = gw_grad


# --- linear gradient ops whose adjoint is their forward op --------------------------------------------------------
def _adjoint_rule(forward, drop):
    def grad(op, dys):
        if dys[0] is None:
            return [None]
        return [apply(forward, [dys[0]], _attrs(op, drop))]
    return grad


# --- max pooling: max_pool_grad(dy, x, y) puts each window's dy on its first maximal cell; linear in dy, and
# piecewise constant in x and y. Its adjoint reads g at those cells: the flat indices of max_pool_<n>d (the same
# first maximum, pool_index_ops.py) gathered from g's planes.
def _max_pool_grad_rule(nd):
    def grad(op, dys):
        g = dys[0]
        dy, x, y = op.inputs
        if g is None:
            return [None, None, None]
        a = op.attrs
        last = not conv_nd.channels_first(a["data_format"])
        to_first, to_last = (0, nd + 1) + tuple(range(1, nd + 1)), (0,) + tuple(range(2, nd + 2)) + (1,)
        if last:  # the index pool takes channels first
            x, g = (apply("transpose", [t], {"perm": to_first}) for t in (x, g))
        dil = a.get("dilations") or (1,) * nd
        _, idx = apply("max_pool_%dd" % nd, [x], {"ksize": tuple(a["ksize"]), "strides": tuple(a["strides"]),
                                                  "pads": tuple(tuple(p) for p in a["pads"]),
                                                  "ceil_mode": bool(a.get("ceil_mode", False)),
                                                  "dilations": tuple(dil)})
        n, c = tuple(x.shape[:2])
        planes = apply("reshape", [g], {"shape": (n, c, -1)})
        flat_idx = apply("reshape", [idx], {"shape": (n, c, -1)})
        d_dy = apply("reshape", [apply("dim_gather", [planes, flat_idx], {"dim": 2})], {"shape": tuple(idx.shape)})
        if last:
            d_dy = apply("transpose", [d_dy], {"perm": to_last})
        return [d_dy, _fill(op.inputs[1], 0.0), _fill(y, 0.0)]
    return grad


def _install():
    for grad_type, second in _ELEMENTWISE.items():
        defn = registry.get(grad_type)
        if defn.grad is None:
            defn.grad = _elementwise_rule(grad_type, second)
    registry.get("smooth_l1_loss_grad").grad = _smooth_l1_grad_grad
    for nd in (1, 2, 3):
        _conv_rules("conv%dd" % nd, "conv%dd_grad_input" % nd, "conv%dd_grad_weight" % nd)
        registry.get("avg_pool%dd_grad" % nd).grad = _adjoint_rule("avg_pool%dd" % nd, ("input_shape",))
        registry.get("adaptive_avg_pool%dd_grad" % nd).grad = _adjoint_rule("adaptive_avg_pool%dd" % nd,
                                                                            ("input_shape",))
        registry.get("max_pool%dd_grad" % nd).grad = _max_pool_grad_rule(nd)
    registry.get("upsample_grad").grad = _adjoint_rule("upsample", ("input_shape",))
    for name in ("reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d"):
        registry.get(name + "_grad").grad = _adjoint_rule(name, ())


_install()


# --- binary math (inputs x, y, dz; elementwise_math_ops.py): xlogy / xdivy keep their zero-where-x-is-0 masks ----
def _binary(a, b):
    return apply(a, list(b))


def _xlogy_x_grad_grad(op, dys):  # dz log y (0 where x == 0)
    g = dys[0]
    x, y, dz = op.inputs
    gdz = _mul(g, dz)
    return [_fill(x, 0.0), apply("xdivy_x_grad", [x, y, gdz]), apply("xlogy_x_grad", [x, y, g])]


def _xlogy_y_grad_grad(op, dys):  # dz x / y (0 where x == 0)
    g = dys[0]
    x, y, dz = op.inputs
    gdz = _mul(g, dz)
    return [apply("xdivy_x_grad", [x, y, gdz]), apply("xdivy_y_grad", [x, y, gdz]), apply("xlogy_y_grad", [x, y, g])]


def _xdivy_x_grad_grad(op, dys):  # dz / y (0 where x == 0)
    g = dys[0]
    x, y, dz = op.inputs
    neg = apply("negative", [_mul(g, dz)])
    return [_fill(x, 0.0), apply("xdivy_x_grad", [x, apply("square", [y]), neg]), apply("xdivy_x_grad", [x, y, g])]


def _xdivy_y_grad_grad(op, dys):  # -dz x / y² (0 where x == 0)
    g = dys[0]
    x, y, dz = op.inputs
    gdz = _mul(g, dz)
    d_x = apply("xdivy_x_grad", [x, apply("square", [y]), apply("negative", [gdz])])
    d_y = _mul(apply("xdivy_y_grad", [x, y, gdz]), _smul(apply("reciprocal", [y]), -2.0))
    return [d_x, d_y, apply("xdivy_y_grad", [x, y, g])]


def _atan2_rule(which):
    """atan2_x_grad = dz y / r, atan2_y_grad = -dz x / r (r = x² + y²)."""
    def grad(op, dys):
        g = dys[0]
        x, y, dz = op.inputs
        gdz = _mul(g, dz)
        r2 = apply("square", [apply("add", [apply("square", [x]), apply("square", [y])])])
        diff = apply("divide", [apply("subtract", [apply("square", [x]), apply("square", [y])]), r2])  # (x²-y²)/r²
        cross = apply("divide", [_smul(_mul(x, y), 2.0), r2])  # 2xy / r²
        if which == "x":  # d/dx (y/r) = -2xy/r², d/dy (y/r) = (x² - y²)/r²
            return [_mul(gdz, apply("negative", [cross])), _mul(gdz, diff), apply("atan2_x_grad", [x, y, g])]
        # d/dx (-x/r) = (x² - y²)/r², d/dy (-x/r) = 2xy/r²
        return [_mul(gdz, diff), _mul(gdz, cross), apply("atan2_y_grad", [x, y, g])]
    return grad


# --- index gradients: linear in dy, their adjoint reads g where the forward's indices point ------------------------
def _gather_planes(g, indices):
    """g (N, C, *spatial) read at the flat per-plane `indices` (N, C, *out): indices' shape."""
    n, c = tuple(indices.shape[:2])
    planes = apply("reshape", [g], {"shape": (n, c, -1)})
    flat = apply("reshape", [indices], {"shape": (n, c, -1)})
    return apply("reshape", [apply("dim_gather", [planes, flat], {"dim": 2})], {"shape": tuple(indices.shape)})


def _index_grad_grad(op, dys):  # max_pool_<n>d_grad / adaptive_max_pool<n>d_grad (dy, indices)
    return [None if dys[0] is None else _gather_planes(dys[0], op.inputs[1]), None]


def _unpool_grad_grad(nd):
    def grad(op, dys):  # max_unpool_<n>d_grad(dy, indices) reads dy at indices: its adjoint scatters back
        if dys[0] is None:
            return [None, None]
        dy, ind = op.inputs
        return [apply("max_unpool_%dd" % nd, [dys[0], ind], {"output_size": tuple(dy.shape[2:])}), None]
    return grad


def _diag_grad_grad(op, dys):  # diag_grad(dy, x): the adjoint of diag, so its own adjoint is diag
    dy, x = op.inputs
    d = apply("diag", [dys[0]], {"diagonal": op.attrs["diagonal"]})
    if len(dy.shape) == 1 and d.shape[0] != dy.shape[0]:  # a shorter dy fills the diagonal's first cells
        d = apply("slice", [d], {"slice_tup": ((0, dy.shape[0], 1),)})
    return [d, _fill(x, 0.0)]


def _embedding_grad_grad(op, dys):
    """embedding_grad(dy, indices, weight) sums dy's rows into the rows indices name (none for padding_idx): its
    adjoint gathers g's rows at indices, zero at padding_idx."""
    g = dys[0]
    dy, indices, weight = op.inputs
    rows = apply("gather", [g, indices], {"axis": 0})
    if op.attrs.get("scale_grad_by_freq"):  # each row's share divided by how often its index occurs
        counts = apply("embedding_grad", [_fill(dy, 1.0), indices, weight], {"padding_idx": -1, "axis": 0})
        rows = apply("divide", [rows, apply("gather", [counts, indices], {"axis": 0})])
    pad = op.attrs.get("padding_idx")
    if pad is not None and pad >= 0:  # (-1: none)
        keep = apply("cast", [apply("not_equal", [indices, apply("fill_like", [indices], {"value": pad})])],
                     {"dtype": g.dtype})
        rows = _mul(rows, apply("reshape", [keep], {"shape": tuple(indices.shape) + (1,)}))
    return [rows, None, _fill(weight, 0.0)]


def _prelu_grad_grad(op, dys):
    """prelu_grad(dy, x, alpha) = (dy · (x > 0 ? 1 : alpha), Σ dy · min(x, 0) over alpha's broadcast axes)."""
    g_dx, g_da = dys
    dy, x, alpha = op.inputs
    nonpos = apply("cast", [apply("less_equal", [x, _fill(x, 0.0)])], {"dtype": x.dtype})
    d_dy, d_x, d_alpha = [], [], []
    if g_dx is not None:
        d_dy.append(apply("prelu_grad", [g_dx, x, alpha])[0])
        # Σ g dy [x <= 0] reduced as prelu_grad reduces dy·x: with -[x <= 0] in x's place, negated
        d_alpha.append(apply("negative", [apply("prelu_grad", [_mul(g_dx, dy), apply("negative", [nonpos]),
                                                               alpha])[1]]))
    if g_da is not None:
        d_dy.append(_mul(g_da, apply("minimum", [x, _fill(x, 0.0)])))
        d_x.append(_mul(_mul(g_da, dy), nonpos))

    def total(parts, like):
        if not parts:
            return _fill(like, 0.0)
        return parts[0] if len(parts) == 1 else apply("add", parts)
    return [total(d_dy, dy), total(d_x, x), total(d_alpha, alpha)]


# --- the legacy classification losses' gradients --------------------------------------------------------------
def _sigmoid_ce_grad_grad(op, dys):  # (sigmoid(x) - label) dloss
    g = dys[0]
    dloss, logits, labels = op.inputs
    s = apply("sigmoid", [logits])
    d_labels = apply("negative", [_mul(g, dloss)]) if labels.dtype.is_floating else None
    return [apply("sigmoid_cross_entropy_grad", [g, logits, labels]), _mul(_mul(g, dloss), _sigmoid_slope(s)),
            d_labels]


def _softmax_ce_grad_grad(op, dys):  # (prob - labels) dloss[..., None]
    g = dys[0]
    dloss, prob, labels = op.inputs
    d_dloss = apply("reduce_sum", [_mul(g, apply("subtract", [prob, labels]))],
                    {"axis": [len(prob.shape) - 1], "keepdims": False})
    d_prob = _mul(g, apply("reshape", [dloss], {"shape": tuple(dloss.shape) + (1,)}))
    return [d_dloss, d_prob, apply("negative", [d_prob])]


def _sparse_ce_grad_grad(op, dys):  # -dy / p at the label, 0 elsewhere
    g = dys[0]
    prediction, labels, dy = op.inputs
    attrs = _attrs(op)
    per_unit = apply("sparse_cross_entropy_grad", [prediction, labels, _fill(dy, 1.0)], attrs)  # -onehot / p
    d_dy = apply("reduce_sum", [_mul(g, per_unit)], {"axis": [len(prediction.shape) - 1], "keepdims": False})
    d_p = apply("negative", [apply("divide", [_mul(g, apply("sparse_cross_entropy_grad", [prediction, labels, dy],
                                                                   attrs)), prediction])])
    return [d_p, None, d_dy]


def _dropout_grad_grad(op, dys):  # dy · mask / (1 - rate): linear in dy and its own adjoint
    return [None if dys[0] is None else apply("dropout_grad", [dys[0], op.inputs[1]], _attrs(op)), None]


def _like_gets_zeros(rule, like_index):
    """A gradient op's rule where its shape reference (the forward input x, read for its shape) gets a zero
    gradient instead of none, as OneFlow 0.9's and PyTorch's (the gradient of nll_loss's gradient with respect to
    its input is zeros: test_higher_derivative_loss.py)."""
    def grad(op, dys):
        grads = list(rule(op, dys))
        like = op.inputs[like_index]
        if grads[like_index] is None and like.dtype.is_floating:
            grads[like_index] = _fill(like, 0.0)
        return grads
    return grad


def _install_more():
    for name, rule in (("xlogy_x_grad", _xlogy_x_grad_grad), ("xlogy_y_grad", _xlogy_y_grad_grad),
                       ("xdivy_x_grad", _xdivy_x_grad_grad), ("xdivy_y_grad", _xdivy_y_grad_grad),
                       ("atan2_x_grad", _atan2_rule("x")), ("atan2_y_grad", _atan2_rule("y")),
                       ("diag_grad", _diag_grad_grad), ("embedding_grad", _embedding_grad_grad),
                       ("prelu_grad", _prelu_grad_grad), ("sigmoid_cross_entropy_grad", _sigmoid_ce_grad_grad),
                       ("softmax_cross_entropy_grad", _softmax_ce_grad_grad),
                       ("sparse_cross_entropy_grad", _sparse_ce_grad_grad), ("dropout_grad", _dropout_grad_grad)):
        registry.get(name).grad = rule
    for name, like_index in (("gather_grad", 2), ("batch_gather_grad", 2), ("dim_scatter_add_like", 2)):
        defn = registry.get(name)
        defn.grad = _like_gets_zeros(defn.grad, like_index)
    for nd in (1, 2, 3):
        registry.get("max_pool_%dd_grad" % nd).grad = _index_grad_grad
        registry.get("adaptive_max_pool%dd_grad" % nd).grad = _index_grad_grad
        registry.get("max_unpool_%dd_grad" % nd).grad = _unpool_grad_grad(nd)


_install_more()


# --- limits2 team: lgamma's second derivative. lgamma_grad(dy, x) = dy · ψ(x), so f'' = ψ'(x), trigamma: the
# polygamma op of ops/polygamma_ops.py (itself differentiable, to every order)
def _install_lgamma():
    registry.get("lgamma_grad").grad = _elementwise_rule("lgamma_grad",
                                                         lambda x, a: apply("polygamma", [x], {"n": 1}))


_install_lgamma()
