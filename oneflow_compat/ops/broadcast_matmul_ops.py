"""`broadcast_matmul` and `broadcast_matmul_grad_b` of OneFlow v0.4.0 (`oneflow/user/ops/matmul_op.cpp`): flow.matmul
of an (…, m, k) blob with a 2-D (k, n) weight, as GPT's linear layers on (seq, batch, hidden) blobs use it. Shapes,
SBP signatures and the gradient rule as there (a's gradient is a broadcast_matmul with b transposed the other way;
b's is broadcast_matmul_grad_b, a.T·dy over the flattened leading axes)."""
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import linalg
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _meta(op):
    a, b = op.inputs
    tb = op.attrs["transpose_b"]
    if op.attrs["transpose_a"] or len(b.shape) != 2 or len(a.shape) <= 2:
        raise ValueError("broadcast_matmul '%s': needs a of rank > 2, a 2-D b and no transpose of a, got %s, %s "
                         "(transpose_a=%s)" % (op.name, a.shape, b.shape, op.attrs["transpose_a"]))
    k, n = (b.shape[1], b.shape[0]) if tb else (b.shape[0], b.shape[1])
    if a.shape[-1] != k or a.dtype is not b.dtype:
        raise ValueError("broadcast_matmul '%s': %s %s and %s %s do not match (transpose_b=%s)" % (
            op.name, a.shape, a.dtype.name, b.shape, b.dtype.name, tb))
    return [TensorMeta(tuple(a.shape[:-1]) + (n,), a.dtype, a.is_dynamic or b.is_dynamic)]


def _sbp(op):
    nd = len(op.inputs[0].shape)
    tb = op.attrs["transpose_b"]
    k_b, n_ax = (1, 0) if tb else (0, 1)
    sigs = [_sig([S(i), B], [S(i)]) for i in range(nd - 1)]
    return sigs + [_sig([B, S(n_ax)], [S(nd - 1)]), _sig([S(nd - 1), S(k_b)], [P]), _sig([P, B], [P]),
                   _sig([B, P], [P]), _sig([B, B], [B])]


def _grad(op, dys):
    a, b = op.inputs
    tb, alpha = op.attrs["transpose_b"], op.attrs["alpha"]
    da = apply("broadcast_matmul", [dys[0], b], {"transpose_a": False, "transpose_b": not tb, "alpha": alpha})
    pair = [dys[0], a] if tb else [a, dys[0]]
    return [da, apply("broadcast_matmul_grad_b", pair, {"alpha": alpha})]


register(OpDef("broadcast_matmul", infer=_meta, kernel=linalg.broadcast_matmul,
               kernel_attrs=lambda op: {"transpose_b": op.attrs["transpose_b"], "alpha": op.attrs["alpha"]},
               sbp=_sbp, grad=_grad, fresh_output=True))


def _grad_b_meta(op):
    a, b = op.inputs
    if len(a.shape) != len(b.shape) or a.shape[:-1] != b.shape[:-1]:
        raise ValueError("broadcast_matmul_grad_b '%s': %s and %s must share their leading axes" % (
            op.name, a.shape, b.shape))
    return [TensorMeta((a.shape[-1], b.shape[-1]), a.dtype, a.is_dynamic or b.is_dynamic)]


def _grad_b_sbp(op):
    last = len(op.inputs[0].shape) - 1
    return ([_sig([S(i), S(i)], [P]) for i in range(last)]
            + [_sig([S(last), B], [S(0)]), _sig([B, S(last)], [S(1)]), _sig([B, B], [B])])


def _grad_b_grad(op, dys):
    a, b = op.inputs
    alpha = op.attrs["alpha"]
    # out = a.T b: da = b dy.T, db = a dy
    da = apply("broadcast_matmul", [b, dys[0]], {"transpose_a": False, "transpose_b": True, "alpha": alpha})
    db = apply("broadcast_matmul", [a, dys[0]], {"transpose_a": False, "transpose_b": False, "alpha": alpha})
    return [da, db]


register(OpDef("broadcast_matmul_grad_b", infer=_grad_b_meta, kernel=linalg.broadcast_matmul_grad_b,
               kernel_attrs=lambda op: {"alpha": op.attrs["alpha"]}, sbp=_grad_b_sbp, grad=_grad_b_grad,
               fresh_output=True))
