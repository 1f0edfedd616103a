"""OneFlow 0.9's pools that give indices and their inverse, under OneFlow's op type names (OneFlowUserOps.td):
`max_pool_1d/2d/3d` (outputs y and indice, for `return_indices=True`; without indices the surface keeps
ops/pool_ops.py's `max_poolNd`), `adaptive_max_pool1d/2d/3d` (y and index), `max_unpool_1d/2d/3d`, and their
gradients. Channels first only (as OneFlow 0.9's modules call them). Kernels: `kernels/pool_index.py`.

Attrs: the pools' ksize, strides, pads ((before, after) per spatial axis), ceil_mode, dilations; the adaptive
pools' output_size; unpooling's output_size (spatial). The gradients take `input_spatial` (the batch and channels
of the piece come from dy, so they split freely).

SBP (OneFlow's pool_op.cpp, max_unpool_op.cpp): indices are positions within one (n, c) plane, so batch and
channel splits keep them valid; the gradients and unpooling are linear in their float input (partial sums pass).
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import conv_nd
from oneflow_compat.kernels import pool_index as pool_k
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _split_sbp(n_in, n_out, linear_first=False):
    sigs = [_sig([S.S(a)] * n_in, [S.S(a)] * n_out) for a in (0, 1)] + [_sig([S.B] * n_in, [S.B] * n_out)]
    if linear_first:
        sigs.append(_sig([S.P] + [S.B] * (n_in - 1), [S.P] * n_out))
    return sigs


def _check_x(op, x, nd):
    if len(x.shape) != nd + 2:
        raise ValueError("%s '%s': expected a %d-D input (batch, channels, %d spatial), got shape %s"
                         % (op.type, op.name, nd + 2, nd, tuple(x.shape)))


def _check_indices(op, ind, like_shape, what):
    if ind.dtype.np.kind not in "iu":
        raise TypeError("%s '%s': indices must be integers, got %s" % (op.type, op.name, ind.dtype.name))
    if tuple(ind.shape) != tuple(like_shape):
        raise ValueError("%s '%s': indices of shape %s do not match %s of shape %s"
                         % (op.type, op.name, tuple(ind.shape), what, tuple(like_shape)))


def _grad_meta(op):
    dy, ind = op.inputs
    _check_indices(op, ind, dy.shape, "dy")
    shape = tuple(dy.shape[:2]) + tuple(op.attrs["input_spatial"])
    return [TensorMeta(shape, dy.dtype, dy.is_dynamic)]


def _index_grad(op, dys, grad_type):
    if dys[0] is None:
        return [None]
    x = op.inputs[0]
    return [apply(grad_type, [dys[0], op.outputs[1]], {"input_spatial": tuple(x.shape[2:])})]


# --- max pooling with indices ------------------------------------------------------------------------------------
_POOL_ATTRS = ("ksize", "strides", "pads", "ceil_mode", "dilations")


def _pool_meta(nd):
    def infer(op):
        x = op.inputs[0]
        _check_x(op, x, nd)
        a = op.attrs
        for k, (b, e) in zip(a["ksize"], a["pads"]):
            if max(b, e) > k // 2:
                raise ValueError("%s '%s': pad should be at most half of kernel size, but got pad=%d and "
                                 "kernel_size=%d" % (op.type, op.name, max(b, e), k))
        try:
            outs = tuple(conv_nd.out_size(n, k, s, p, d, a["ceil_mode"])
                         for n, k, s, p, d in zip(x.shape[2:], a["ksize"], a["strides"], a["pads"],
                                                  a["dilations"]))
        except ValueError as e:
            raise ValueError("%s '%s': %s" % (op.type, op.name, e)) from None
        shape = tuple(x.shape[:2]) + outs
        return [TensorMeta(shape, x.dtype, x.is_dynamic), TensorMeta(shape, dtypes.int64, x.is_dynamic)]
    return infer


def _register_pool(nd):
    name = "max_pool_%dd" % nd
    register(OpDef(name, infer=_pool_meta(nd), kernel=pool_k.max_pool_with_indices,
                   kernel_attrs=lambda op: {k: op.attrs[k] for k in _POOL_ATTRS}, num_outputs=2,
                   sbp=lambda op: _split_sbp(1, 2), grad=lambda op, dys: _index_grad(op, dys, name + "_grad")))
    register(OpDef(name + "_grad", infer=_grad_meta, kernel=pool_k.index_grad,
                   kernel_attrs=lambda op: {"input_spatial": tuple(op.attrs["input_spatial"])},
                   sbp=lambda op: _split_sbp(2, 1, linear_first=True)))


# --- adaptive max pooling ----------------------------------------------------------------------------------------
def _adaptive_meta(nd):
    def infer(op):
        x = op.inputs[0]
        _check_x(op, x, nd)
        out = tuple(int(v) for v in op.attrs["output_size"])
        if len(out) != nd or any(o < 1 for o in out):
            raise ValueError("%s '%s': output_size %s must be %d positive sizes" % (op.type, op.name, out, nd))
        shape = tuple(x.shape[:2]) + out
        return [TensorMeta(shape, x.dtype, x.is_dynamic), TensorMeta(shape, dtypes.int64, x.is_dynamic)]
    return infer


def _register_adaptive(nd):
    name = "adaptive_max_pool%dd" % nd
    register(OpDef(name, infer=_adaptive_meta(nd), kernel=pool_k.adaptive_max_pool,
                   kernel_attrs=lambda op: {"output_size": tuple(op.attrs["output_size"])}, num_outputs=2,
                   sbp=lambda op: _split_sbp(1, 2), grad=lambda op, dys: _index_grad(op, dys, name + "_grad")))
    register(OpDef(name + "_grad", infer=_grad_meta, kernel=pool_k.index_grad,
                   kernel_attrs=lambda op: {"input_spatial": tuple(op.attrs["input_spatial"])},
                   sbp=lambda op: _split_sbp(2, 1, linear_first=True)))


# --- max unpooling ------------------------------------------------------------------------------------------------
def _unpool_meta(nd):
    def infer(op):
        x, ind = op.inputs
        _check_x(op, x, nd)
        _check_indices(op, ind, x.shape, "the input")
        out = tuple(int(v) for v in op.attrs["output_size"])
        if len(out) != nd:
            raise ValueError("%s '%s': output_size %s must have %d sizes" % (op.type, op.name, out, nd))
        return [TensorMeta(tuple(x.shape[:2]) + out, x.dtype, x.is_dynamic or ind.is_dynamic)]
    return infer


def _register_unpool(nd):
    name = "max_unpool_%dd" % nd

    def grad(op, dys):
        if dys[0] is None:
            return [None, None]
        return [apply(name + "_grad", [dys[0], op.inputs[1]]), None]

    register(OpDef(name, infer=_unpool_meta(nd), kernel=pool_k.max_unpool,
                   kernel_attrs=lambda op: {"output_spatial": tuple(op.attrs["output_size"])},
                   sbp=lambda op: _split_sbp(2, 1, linear_first=True), grad=grad))

    def grad_meta(op):
        dy, ind = op.inputs
        if tuple(ind.shape[:2]) != tuple(dy.shape[:2]) or len(ind.shape) != len(dy.shape):
            raise ValueError("%s '%s': indices of shape %s do not fit dy of shape %s"
                             % (op.type, op.name, tuple(ind.shape), tuple(dy.shape)))
        return [TensorMeta(ind.shape, dy.dtype, dy.is_dynamic or ind.is_dynamic)]

    register(OpDef(name + "_grad", infer=grad_meta, kernel=pool_k.max_unpool_grad,
                   sbp=lambda op: _split_sbp(2, 1, linear_first=True)))


for _nd in (1, 2, 3):
    _register_pool(_nd)
    _register_adaptive(_nd)
    _register_unpool(_nd)
