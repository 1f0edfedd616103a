"""OneFlow 0.9's `inv` user op (flow.linalg.inv): the inverse of square matrices, batched over leading axes; and its
`searchsorted` user op (flow.searchsorted; kernels/search.py) and its `nms` user op (flow.nms; kernels/nms.py), which
have no gradient.

The op type and its input/output are OneFlow v0.9.0's (oneflow/core/functional/impl/math_functor.cpp InvFunctor:
`OpBuilder("inv").Input("x").Output("y")`), so a duplicate on another branch shows as a registration clash. Its
gradient is OneFlow's (oneflow/core/autograd/gradient_funcs/inv.cpp): dx = -y^T dy y^T, built from matmuls.
Kernel: `kernels/linalg.inv`.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, S
from oneflow_compat.kernels import linalg as K
from oneflow_compat.kernels import nms as nms_k
from oneflow_compat.kernels import search as search_k
from oneflow_compat.ops.registry import OpDef, apply, register


def _inv_meta(op):
    x = op.inputs[0]
    if len(x.shape) < 2:
        raise ValueError("inv '%s': linalg.inv: The input tensor must be at least 2 dimensions." % op.name)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError("inv '%s': linalg.inv: A must be batches of square matrices, but they are %d by %d matrices"
                         % (op.name, x.shape[-2], x.shape[-1]))
    if not x.dtype.is_floating:
        raise TypeError("inv '%s': linalg.inv: expected a floating tensor, got %s" % (op.name, x.dtype.name))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


def _inv_sbp(op):
    """Split on a batch axis (each matrix whole on one device), or broadcast; no partial sum (not linear)."""
    nd = len(op.inputs[0].shape)
    return [((S(i),), (S(i),)) for i in range(nd - 2)] + [((B,), (B,))]


def _inv_grad(op, dys):
    y = op.outputs[0]
    yt_dy = apply("matmul", [y, dys[0]], {"transpose_a": True, "transpose_b": False, "alpha": 1.0})
    return [apply("matmul", [yt_dy, y], {"transpose_a": False, "transpose_b": True, "alpha": -1.0})]


register(OpDef("inv", infer=_inv_meta, kernel=K.inv, sbp=_inv_sbp, grad=_inv_grad))


# --- searchsorted (OneFlow v0.9.0's `searchsorted` user op: inputs sorted_sequence, values; attrs out_int32, right)
def _searchsorted_meta(op):
    seq, vals = op.inputs
    if len(vals.shape) == 0 or len(seq.shape) == 0:
        raise ValueError("searchsorted '%s': sorted_sequence and values must have at least 1 dimension, got %s and %s"
                         % (op.name, seq.shape, vals.shape))
    if len(seq.shape) != 1 and tuple(seq.shape[:-1]) != tuple(vals.shape[:-1]):
        raise ValueError("searchsorted '%s': sorted_sequence %s should be 1 dimension or share the first N-1 "
                         "dimensions of values %s" % (op.name, seq.shape, vals.shape))
    if seq.dtype is not vals.dtype:
        raise TypeError("searchsorted '%s': sorted_sequence and values differ in dtype (%s, %s)"
                        % (op.name, seq.dtype.name, vals.dtype.name))
    return [TensorMeta(vals.shape, dtypes.int32 if op.attrs["out_int32"] else dtypes.int64,
                       seq.is_dynamic or vals.is_dynamic)]


def _searchsorted_sbp(op):
    """A 1-D sequence: broadcast, values split on any axis; rows of an N-D sequence: both split alike on a leading
    axis. Or both broadcast."""
    seq, vals = op.inputs
    if len(seq.shape) == 1:
        sigs = [((B, S(i)), (S(i),)) for i in range(len(vals.shape))]
    else:
        sigs = [((S(i), S(i)), (S(i),)) for i in range(len(vals.shape) - 1)]
    return sigs + [((B, B), (B,))]


register(OpDef("searchsorted", infer=_searchsorted_meta, kernel=search_k.searchsorted,
               kernel_attrs=lambda op: {"out_int32": op.attrs["out_int32"], "right": op.attrs["right"]},
               sbp=_searchsorted_sbp))


# --- nms (OneFlow v0.9.0's `nms` user op: input "in" boxes sorted by score, output "out" int8, attrs iou_threshold,
# keep_n); flow.nms sorts by score, runs it and keeps the marked indices (on the host: their count depends on them)
def _nms_meta(op):
    boxes = op.inputs[0]
    if len(boxes.shape) != 2 or boxes.shape[1] != 4:
        raise ValueError("nms '%s': boxes must be (N, 4), got %s" % (op.name, boxes.shape))
    if not boxes.dtype.is_floating:
        raise TypeError("nms '%s': boxes must be floating, got %s" % (op.name, boxes.dtype.name))
    return [TensorMeta((boxes.shape[0],), dtypes.int8, boxes.is_dynamic)]


register(OpDef("nms", infer=_nms_meta, kernel=nms_k.nms,
               kernel_attrs=lambda op: {"iou_threshold": op.attrs["iou_threshold"], "keep_n": op.attrs["keep_n"]},
               sbp=lambda op: [((B,), (B,))]))  # every box is compared with every earlier one: whole on a device
