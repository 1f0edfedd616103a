"""Tensor ops of OneFlow 0.9's global API that its users call at run time (flowvision's models, the basics pages;
issue 21): flip, cumsum, triu, isnan / isinf, dim_scatter_update / dim_scatter_add, erfinv (`expand` is the legacy
family's op, `ops/legacy_array_ops.py`, which the surface's `expand` applies).

Op types and attributes are OneFlow 0.9's user ops (`oneflow/ir/include/OneFlow/OneFlowUserOps.td`: flip `dims`,
cumsum `dim`, triu `diagonal`, dim_scatter_update / dim_scatter_add `dim`, erfinv), so that another branch adding
the same op shows as a registration clash.
Kernels: `kernels/tensor_ops.py`.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import tensor_ops as K
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _same_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _splits_except(op, fixed, linear=True):
    """S(i) on every axis not in `fixed` (the axes the op reads whole), B, and P when the op is linear."""
    nd = len(op.inputs[0].shape)
    sigs = [_sig([S(i)], [S(i)]) for i in range(nd) if i not in fixed]
    sigs.append(_sig([B], [B]))
    if linear:
        sigs.append(_sig([P], [P]))
    return sigs


def _check_axes(op, axes):
    nd = len(op.inputs[0].shape)
    for a in axes:
        if not 0 <= a < nd:
            raise ValueError("%s '%s': axis %d out of range for input of shape %s" % (
                op.type, op.name, a, tuple(op.inputs[0].shape)))


# --- flip ---------------------------------------------------------------------------------------------------------
def _flip_meta(op):
    _check_axes(op, op.attrs["dims"])
    return _same_meta(op)


register(OpDef("flip", infer=_flip_meta, kernel=K.flip, kernel_attrs=lambda op: {"dims": tuple(op.attrs["dims"])},
               sbp=lambda op: _splits_except(op, op.attrs["dims"]),
               grad=lambda op, dys: [apply("flip", [dys[0]], {"dims": op.attrs["dims"]})]))


# --- cumsum -------------------------------------------------------------------------------------------------------
def _cumsum_meta(op):
    x = op.inputs[0]
    _check_axes(op, [op.attrs["dim"]])
    dt = x.dtype if x.dtype.is_floating else dtypes.int64
    return [TensorMeta(x.shape, dt, x.is_dynamic)]


def _cumsum_grad(op, dys):
    # d x[i] = sum of dy[j] for j >= i: a cumsum of the reversed gradient, reversed back
    d = op.attrs["dim"]
    rev = apply("flip", [dys[0]], {"dims": (d,)})
    return [apply("flip", [apply("cumsum", [rev], {"dim": d})], {"dims": (d,)})]


register(OpDef("cumsum", infer=_cumsum_meta, kernel=K.cumsum, kernel_attrs=lambda op: {"dim": op.attrs["dim"]},
               sbp=lambda op: _splits_except(op, [op.attrs["dim"]]), grad=_cumsum_grad))


# --- triu ---------------------------------------------------------------------------------------------------------
def _triu_meta(op):
    if len(op.inputs[0].shape) < 2:
        raise ValueError("triu '%s': input must have at least 2 dims, got shape %s"
                         % (op.name, tuple(op.inputs[0].shape)))
    return _same_meta(op)


def _triu_sbp(op):
    nd = len(op.inputs[0].shape)
    return _splits_except(op, [nd - 2, nd - 1])


register(OpDef("triu", infer=_triu_meta, kernel=K.triu, kernel_attrs=lambda op: {"diagonal": op.attrs["diagonal"]},
               sbp=_triu_sbp, grad=lambda op, dys: [apply("triu", [dys[0]], {"diagonal": op.attrs["diagonal"]})]))


# --- isnan / isinf (int8 0/1, the framework's boolean blobs; the surface casts to bool) -------------------------
def _flag_meta(op):
    x = op.inputs[0]
    return [TensorMeta(x.shape, dtypes.int8, x.is_dynamic)]


register(OpDef("isnan", infer=_flag_meta, kernel=K.isnan, sbp=sbp_rules.unary))
register(OpDef("isinf", infer=_flag_meta, kernel=K.isinf, sbp=sbp_rules.unary))


# --- dim scatters: inputs (input, index, src), attr dim -------------------------------------------------------
def _scatter_meta(op):
    x, index, src = op.inputs
    d = op.attrs["dim"]
    _check_axes(op, [d])
    if index.dtype.np is None or index.dtype.np.kind not in "iu":
        raise TypeError("%s '%s': index must be an integer tensor, got %s" % (op.type, op.name, index.dtype.name))
    if len(index.shape) != len(x.shape) or len(src.shape) != len(x.shape):
        raise ValueError("%s '%s': index %s and src %s must have as many dims as input %s" % (
            op.type, op.name, tuple(index.shape), tuple(src.shape), tuple(x.shape)))
    for i, n in enumerate(index.shape):
        if n > src.shape[i] or (i != d and n > x.shape[i]):
            raise ValueError("%s '%s': index %s must not be larger than src %s, nor than input %s outside dim %d"
                             % (op.type, op.name, tuple(index.shape), tuple(src.shape), tuple(x.shape), d))
    if src.dtype is not x.dtype:
        raise TypeError("%s '%s': src dtype %s differs from input dtype %s" % (
            op.type, op.name, src.dtype.name, x.dtype.name))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _scatter_sbp(op, linear):
    """Axes other than dim where input, index and src have one size split alike; B; for the add, P on input and
    src (out = input + the scattered src is linear in both)."""
    x, index, src = (t.shape for t in op.inputs)
    d = op.attrs["dim"]
    n_in = len(op.inputs)
    sigs = [_sig([S(i)] * n_in, [S(i)]) for i in range(len(x)) if i != d and x[i] == index[i] == src[i]]
    sigs.append(_sig([B] * n_in, [B]))
    if linear:
        sigs.append(_sig([P, B, P], [P]))
    return sigs


def _src_grad(op, dy):
    return apply("dim_scatter_src_grad", [dy, op.inputs[1], op.inputs[2]], {"dim": op.attrs["dim"]})


def _scatter_update_grad(op, dys):
    x, index, src = op.inputs
    zeros = apply("fill_like", [src], {"value": 0.0})
    # the overwritten entries of input got no say in the output
    dx = apply("dim_scatter_update", [dys[0], index, zeros], {"dim": op.attrs["dim"]})
    return [dx, None, _src_grad(op, dys[0])]


register(OpDef("dim_scatter_update", infer=_scatter_meta, kernel=K.dim_scatter_update,
               kernel_attrs=lambda op: {"dim": op.attrs["dim"]}, sbp=lambda op: _scatter_sbp(op, False),
               grad=_scatter_update_grad))
register(OpDef("dim_scatter_add", infer=_scatter_meta, kernel=K.dim_scatter_add,
               kernel_attrs=lambda op: {"dim": op.attrs["dim"]}, sbp=lambda op: _scatter_sbp(op, True),
               grad=lambda op, dys: [dys[0], None, _src_grad(op, dys[0])]))


def _src_grad_meta(op):
    dy, index, like = op.inputs
    return [TensorMeta(like.shape, dy.dtype, like.is_dynamic)]


def _src_grad_sbp(op):
    dy, index, like = (t.shape for t in op.inputs)
    d = op.attrs["dim"]
    sigs = [_sig([S(i)] * 3, [S(i)]) for i in range(len(dy)) if i != d and dy[i] == index[i] == like[i]]
    return sigs + [_sig([B] * 3, [B]), _sig([P, B, B], [P])]


def _src_grad_grad(op, dys):
    # linear in dy: the transpose of reading dy at the scattered positions is adding there
    dy, index, like = op.inputs
    zeros = apply("fill_like", [dy], {"value": 0.0})
    return [apply("dim_scatter_add", [zeros, index, dys[0]], {"dim": op.attrs["dim"]}), None, None]


register(OpDef("dim_scatter_src_grad", infer=_src_grad_meta, kernel=K.dim_scatter_src_grad,
               kernel_attrs=lambda op: {"dim": op.attrs["dim"]}, sbp=_src_grad_sbp, grad=_src_grad_grad))


# --- erfinv (OneFlow 0.9 `erfinv`; truncated-normal initialisers call erfinv_) -----------------------------------
def _erfinv_meta(op):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise TypeError("erfinv '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    return _same_meta(op)


register(OpDef("erfinv", infer=_erfinv_meta, kernel=K.erfinv, sbp=sbp_rules.unary,
               grad=lambda op, dys: [apply("erfinv_grad", [dys[0], op.outputs[0]])]))
register(OpDef("erfinv_grad", infer=_same_meta, kernel=K.erfinv_grad,
               sbp=lambda op: [_sig([S(i), S(i)], [S(i)]) for i in range(len(op.inputs[0].shape))]
               + [_sig([B, B], [B]), _sig([P, B], [P])]))


# --- api-gaps: dim_scatter_mul (scatter(..., reduce='multiply'); OneFlow 0.9 user_op dim_scatter_mul) --------------
def _scatter_mul_grad(op, dys):
    x, index, src = op.inputs
    # d input: OneFlow's own rule (autograd/gradient_funcs/dim_scatter.cpp): dy scattered-multiplied by src.
    dx = apply("dim_scatter_mul", [dys[0], index, src], {"dim": op.attrs["dim"]})
    # d src: the true derivative (OneFlow 0.9 returns dy gathered, the add's rule, which is not d out / d src).
    dsrc = apply("dim_scatter_mul_src_grad", [dys[0], index, x, src], {"dim": op.attrs["dim"]})
    return [dx, None, dsrc]


register(OpDef("dim_scatter_mul", infer=_scatter_meta, kernel=K.dim_scatter_mul,
               kernel_attrs=lambda op: {"dim": op.attrs["dim"]}, sbp=lambda op: _scatter_sbp(op, False),
               grad=_scatter_mul_grad))


def _mul_src_grad_meta(op):
    dy, index, x, src = op.inputs
    return [TensorMeta(src.shape, dy.dtype, src.is_dynamic)]


def _mul_src_grad_sbp(op):
    dy, index, x, src = (t.shape for t in op.inputs)
    d = op.attrs["dim"]
    sigs = [_sig([S(i)] * 4, [S(i)]) for i in range(len(dy)) if i != d and dy[i] == index[i] == x[i] == src[i]]
    return sigs + [_sig([B] * 4, [B]), _sig([P, B, B, B], [P])]


register(OpDef("dim_scatter_mul_src_grad", infer=_mul_src_grad_meta, kernel=K.dim_scatter_mul_src_grad,
               kernel_attrs=lambda op: {"dim": op.attrs["dim"]}, sbp=_mul_src_grad_sbp))
