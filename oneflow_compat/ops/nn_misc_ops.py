"""The nn ops family's other ops: l2_normalize, embedding, upsample (nearest / linear resampling), reflection and
replication padding, random_mask_like.

Kernels: `kernels/norm.py`, `kernels/indexing.py`, `kernels/resample.py`, `kernels/random.py`.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import indexing
from oneflow_compat.kernels import norm as norm_k
from oneflow_compat.kernels import random as random_k
from oneflow_compat.kernels import resample as resample_k
from oneflow_compat.ops import shape_ops
from oneflow_compat.ops.registry import OpDef, apply, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


# --- l2_normalize -------------------------------------------------------------------------------------------------
def _l2_meta(op):
    x = op.inputs[0]
    nd = len(x.shape)
    axis = op.attrs["axis"]
    if not (0 <= axis < nd):
        raise ValueError("l2_normalize '%s': axis %r out of range for input of shape %s" % (op.name, axis, x.shape))
    if not x.dtype.is_floating:
        raise TypeError("l2_normalize '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    kept = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic), TensorMeta(kept, x.dtype, x.is_dynamic)]


def _l2_attrs(op):
    return {"axis": op.attrs["axis"], "epsilon": op.attrs["epsilon"]}


def _l2_sbp(op):
    """Every axis but the normalized one may be split (OneFlow's l2_normalize_op.cpp)."""
    nd, axis = len(op.inputs[0].shape), op.attrs["axis"]
    n_in, n_out = len(op.inputs), len(op.outputs)
    return [_sig([S.S(i)] * n_in, [S.S(i)] * n_out) for i in range(nd) if i != axis] + \
        [_sig([S.B] * n_in, [S.B] * n_out)]


def _l2_grad(op, dys):
    # square_x_sum is the op's saved statistic (OneFlow's kernel keeps it for the gradient): no gradient flows
    # back through it
    if dys[0] is None:
        return [None]
    y, square_x_sum = op.outputs
    return [apply("l2_normalize_grad", [dys[0], y, square_x_sum], dict(_l2_attrs(op)))]


register(OpDef("l2_normalize", infer=_l2_meta, kernel=norm_k.l2_normalize, kernel_attrs=_l2_attrs, sbp=_l2_sbp,
               grad=_l2_grad, num_outputs=2))
register(OpDef("l2_normalize_grad", infer=lambda op: [TensorMeta(op.inputs[0].shape, op.inputs[0].dtype,
                                                                 op.inputs[0].is_dynamic)],
               kernel=norm_k.l2_normalize_grad, kernel_attrs=_l2_attrs, sbp=_l2_sbp))


# --- embedding (OneFlow 0.9's op: gather's rows along axis 0 (its attr `axis` is 0), signatures and offsets;
# padding_idx's row gets no gradient; padding_idx -1: none) ---------------------------------------------------------
def _embedding_meta(op):
    weight, indices = op.inputs
    if len(weight.shape) != 2:
        raise ValueError("embedding '%s': weight must be (num_embeddings, embedding_dim), got %s" % (
            op.name, tuple(weight.shape)))
    if indices.dtype.np is None or indices.dtype.np.kind not in "iu":
        raise TypeError("embedding '%s': indices must be integers, got %s" % (op.name, indices.dtype.name))
    return [TensorMeta(tuple(indices.shape) + (weight.shape[1],), weight.dtype,
                       weight.is_dynamic or indices.is_dynamic)]


def _embedding_grad_rule(op, dys):
    weight, indices = op.inputs
    attrs = {"padding_idx": op.attrs["padding_idx"], "axis": 0}
    if op.attrs.get("scale_grad_by_freq"):  # (OneFlow 0.9's attr; absent in rows and legacy callers: False)
        attrs["scale_grad_by_freq"] = True
    return [apply("embedding_grad", [dys[0], indices, weight], attrs), None]


def _padding_idx(op):
    return {"padding_idx": op.attrs["padding_idx"]}


def _embedding_grad_attrs(op):
    return {"padding_idx": op.attrs["padding_idx"], "scale_grad_by_freq": bool(op.attrs.get("scale_grad_by_freq"))}


def _embedding_grad_sbp(op):
    """gather_grad's signatures; with scale_grad_by_freq only those reading `indices` whole (B): the frequency of
    an index is counted over every index, which a split of the indices would see only a part of."""
    sigs = shape_ops._gather_grad_sbp(op)
    if op.attrs.get("scale_grad_by_freq"):
        sigs = [sig for sig in sigs if sig[0][1] == S.B]
    return sigs


register(OpDef("embedding", infer=_embedding_meta, kernel=indexing.embedding, kernel_attrs=_padding_idx,
               local_attrs=shape_ops._gather_local, sbp=shape_ops._gather_sbp, grad=_embedding_grad_rule))
register(OpDef("embedding_grad", infer=lambda op: [TensorMeta(op.inputs[2].shape, op.inputs[0].dtype)],
               kernel=indexing.embedding_grad, kernel_attrs=_embedding_grad_attrs,
               local_attrs=shape_ops._gather_grad_local, sbp=_embedding_grad_sbp))


# --- api-gaps: embedding_renorm (OneFlow 0.9's user op embedding_renorm, `_C.embedding_renorm_`: in place on the
# weight, before the lookup of nn.Embedding(max_norm=...)) ---------------------------------------------------------
def _embedding_renorm_sig(op):
    """The weight renormalised where it lies: broadcast (every replica alike) or rows split (each device its rows,
    `offset`); the indices whole."""
    weight = op.inputs[0]
    held = weight.op.sbp_out[weight.index] if weight.op.sbp_out else None
    if held is not None and (held == S.B or held == S.S(0)):
        return [((held, S.B), ())]
    return [((S.B, S.B), ()), ((S.S(0), S.B), ())]


def _embedding_renorm_meta(op):
    weight, indices = op.inputs
    if len(weight.shape) != 2:
        raise ValueError("embedding_renorm '%s': weight must be (num_embeddings, embedding_dim), got %s" % (
            op.name, tuple(weight.shape)))
    if indices.dtype.np is None or indices.dtype.np.kind not in "iu":
        raise TypeError("embedding_renorm '%s': indices must be integers, got %s" % (op.name, indices.dtype.name))
    return []


register(OpDef("embedding_renorm", infer=_embedding_renorm_meta, kernel=indexing.embedding_renorm,
               kernel_attrs=lambda op: {"max_norm": float(op.attrs["max_norm"]),
                                        "norm_type": float(op.attrs["norm_type"]),
                                        "num_embeddings": int(op.inputs[0].shape[0])},
               local_attrs=lambda op, dev: {"offset": shape_ops._split_offset(dev.sbp_in[0], 0,
                                                                              op.inputs[0].shape, dev)},
               sbp=_embedding_renorm_sig, in_place=True))


# --- upsample (legacy flow.layers.upsample_2d, OneFlow 0.9's interpolate: nearest and (bi/tri)linear) -------------
_UPSAMPLE_ATTRS = ("output_size", "mode", "align_corners", "scales", "half_pixel")


def _upsample_attrs(op):
    return {k: op.attrs[k] for k in _UPSAMPLE_ATTRS}


def _upsample_meta(op):
    x = op.inputs[0]
    out = tuple(op.attrs["output_size"])
    if len(x.shape) != len(out) + 2:
        raise ValueError("upsample '%s': output_size %s does not fit input of shape %s (N, C, spatial)" % (
            op.name, out, tuple(x.shape)))
    if op.attrs["mode"] not in ("nearest", "linear", "cubic"):  # (cubic: api-gaps, OneFlow 0.9 upsample_bicubic_2d)
        raise ValueError("upsample '%s': mode must be 'nearest', 'linear' or 'cubic', got %r" % (
            op.name, op.attrs["mode"]))
    if not x.dtype.is_floating:
        raise TypeError("upsample '%s': input must be floating, got %s" % (op.name, x.dtype.name))
    return [TensorMeta(tuple(x.shape[:2]) + out, x.dtype, x.is_dynamic)]


def _channels_sbp(op):
    """Resampling / padding of the spatial axes: batch and channels split; linear (partial sums pass)."""
    return [_sig([S.S(0)], [S.S(0)]), _sig([S.S(1)], [S.S(1)]), _sig([S.B], [S.B]), _sig([S.P], [S.P])]


register(OpDef("upsample", infer=_upsample_meta, kernel=resample_k.upsample, kernel_attrs=_upsample_attrs,
               sbp=_channels_sbp,
               grad=lambda op, dys: [apply("upsample_grad", [dys[0]],
                                           dict(_upsample_attrs(op), input_shape=tuple(op.inputs[0].shape)))]))
register(OpDef("upsample_grad", infer=lambda op: [TensorMeta(op.attrs["input_shape"], op.inputs[0].dtype,
                                                             op.inputs[0].is_dynamic)],
               kernel=resample_k.upsample_grad, kernel_attrs=_upsample_attrs,
               local_attrs=lambda op, dev: {"input_shape": tuple(dev.out_shapes[0])}, sbp=_channels_sbp))


# --- reflection / replication padding (OneFlow's reflection_pad2d, replication_pad2d; 0.9's 1d forms) -------------
def _edge_pads(op):
    """OneFlow's padding attr (left, right[, top, bottom]) as (before, after) pairs of the trailing axes."""
    p = tuple(op.attrs["padding"])
    return ((p[0], p[1]),) if len(p) == 2 else ((p[2], p[3]), (p[0], p[1]))


def _edge_meta(nd, mode):
    def infer(op):
        x = op.inputs[0]
        if len(x.shape) != nd + 2 or len(op.attrs["padding"]) != 2 * nd:
            raise ValueError("%s '%s': input %s and padding %s must be %d-D" % (op.type, op.name, tuple(x.shape),
                                                                              op.attrs["padding"], nd))
        pads = _edge_pads(op)
        spatial = x.shape[2:]
        for n, (b, a) in zip(spatial, pads):
            if min(b, a) < 0 or (mode == "reflect" and max(b, a) >= n):
                raise ValueError("%s '%s': Padding size should be less than the corresponding input dimension, but "
                                 "got: padding %s, input of shape %s" % (op.type, op.name, op.attrs["padding"],
                                                                         tuple(x.shape)))
        out = tuple(x.shape[:2]) + tuple(n + b + a for n, (b, a) in zip(spatial, pads))
        return [TensorMeta(out, x.dtype, x.is_dynamic)]
    return infer


def _register_edge_pad(name, nd, mode):
    def attrs(op):
        return {"pads": _edge_pads(op), "mode": mode}

    register(OpDef(name, infer=_edge_meta(nd, mode), kernel=resample_k.pad_edges, kernel_attrs=attrs,
                   sbp=_channels_sbp,
                   grad=lambda op, dys: [apply(name + "_grad", [dys[0]], {"padding": op.attrs["padding"]})]))
    register(OpDef(name + "_grad", infer=lambda op: [TensorMeta(
        tuple(op.inputs[0].shape[:2]) + tuple(n - b - a for n, (b, a) in zip(op.inputs[0].shape[2:], _edge_pads(op))),
        op.inputs[0].dtype, op.inputs[0].is_dynamic)],
        kernel=resample_k.pad_edges_grad, kernel_attrs=attrs, sbp=_channels_sbp))


_register_edge_pad("reflection_pad1d", 1, "reflect")
_register_edge_pad("reflection_pad2d", 2, "reflect")
_register_edge_pad("replication_pad1d", 1, "replicate")
_register_edge_pad("replication_pad2d", 2, "replicate")


# --- random_mask_like (legacy flow.nn.random_mask_like: dropout's keep-mask, 1 where kept) -------------------------
def _random_mask_build(op, dev):
    """As dropout's mask: a function of the op's seed, the call index and the logical shape only (each device
    takes its piece), so 1 and N devices draw the same mask."""
    from oneflow_compat.ops import nn_ops

    xp, rate = dev.xp, op.attrs["rate"]
    seed = nn_ops.dropout_seed(op, dev.session)
    logical = tuple(op.inputs[0].shape)
    piece = S.local_slices(logical, dev.sbp_in[0], dev.index, dev.parallel_num)
    calls = nn_ops._call_counters(dev.session)
    counter = (op.job.name, op.name, dev.index)

    def run(like):
        call = calls.get(counter, 0)
        calls[counter] = call + 1
        if dev.sbp_in[0] == S.M:
            return random_k.dropout_mask(xp, random_k.call_key(seed, call, dev.index), tuple(like.shape), rate)
        return random_k.dropout_mask(xp, random_k.call_key(seed, call), logical, rate, piece)

    return run


def _random_mask_sbp(op):
    nd = len(op.inputs[0].shape)
    return [_sig([S.S(i)], [S.S(i)]) for i in range(nd)] + [_sig([S.B], [S.B]), _sig([S.P], [S.B])]


register(OpDef("random_mask_like", infer=lambda op: [TensorMeta(op.inputs[0].shape, dtypes.int8,
                                                                op.inputs[0].is_dynamic)],
               build=_random_mask_build, sbp=_random_mask_sbp))
