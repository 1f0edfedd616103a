"""Ops behind OneFlow v0.3.4's `flow.experimental.*`: unique_with_counts, indexed_slices_reduce_sum (system ops in
`oneflow/core/operator/`), square_sum / multi_square_sum and ssp_variable_proxy (`oneflow/user/ops/`).

unique_with_counts and indexed_slices_reduce_sum keep their input's (static) length and give the valid count as
num_unique, as OneFlow does; they run whole on every device (B). ssp_variable_proxy returns, as `value`, the
variable as it was `buffer_size` calls ago (OneFlow's ring buffer of stale-synchronous-parallel training; the
initial value until then), and the variable itself as `ref` for writes.
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.ir.sbp import B, P, S
from oneflow_compat.kernels import binary_blob as B_K
from oneflow_compat.kernels import unique as K
from oneflow_compat.ops.data_ops import _call_counter, _session_state
from oneflow_compat.ops.registry import OpDef, register


def _sig(ins, outs):
    return (tuple(ins), tuple(outs))


def _check_index(op, blob, what):
    if blob.dtype.np is None or blob.dtype.np.kind not in "iu":
        raise TypeError("%s '%s': %s must be an integer blob, got %s" % (op.type, op.name, what, blob.dtype.name))


def _unique_meta(op):
    x = op.inputs[0]
    if len(x.shape) != 1:
        raise ValueError("unique_with_counts '%s': x must be 1-d, got shape %s" % (op.name, x.shape))
    idx = op.attrs["out_idx"]
    if idx.np is None or idx.np.kind not in "iu":
        raise TypeError("unique_with_counts '%s': out_idx must be an integer dtype, got %s" % (op.name, idx.name))
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic), TensorMeta(x.shape, idx, x.is_dynamic),
            TensorMeta(x.shape, idx, x.is_dynamic), TensorMeta((1,), idx)]


register(OpDef("unique_with_counts", infer=_unique_meta, kernel=K.unique_with_counts,
               kernel_attrs=lambda op: {"out_idx": op.attrs["out_idx"].np},
               sbp=lambda op: [_sig([B], [B] * 4)]))


def _indexed_slices_meta(op):
    indices, values = op.inputs
    _check_index(op, indices, "indices")
    if len(indices.shape) >= len(values.shape) or tuple(values.shape[:len(indices.shape)]) != tuple(indices.shape):
        raise ValueError("indexed_slices_reduce_sum '%s': values %s must start with the indices' shape %s" % (
            op.name, values.shape, indices.shape))
    n = 1
    for d in indices.shape:
        n *= d
    m = 1
    for d in values.shape[len(indices.shape):]:
        m *= d
    return [TensorMeta((n,), indices.dtype), TensorMeta((n, m), values.dtype), TensorMeta((1,), dtypes.int64)]


register(OpDef("indexed_slices_reduce_sum", infer=_indexed_slices_meta, kernel=K.indexed_slices_reduce_sum,
               sbp=lambda op: [_sig([B, B], [B, B, B])]))


register(OpDef("square_sum", infer=lambda op: [TensorMeta((1,), op.inputs[0].dtype)], kernel=K.square_sum,
               sbp=lambda op: [_sig([S(i)], [P]) for i in range(len(op.inputs[0].shape))] + [_sig([B], [B])]))


def _multi_square_meta(op):
    first = op.inputs[0].dtype
    if any(x.dtype is not first for x in op.inputs):
        raise TypeError("multi_square_sum '%s': every input must have one dtype" % op.name)
    return [TensorMeta((1,), first)]


register(OpDef("multi_square_sum", infer=_multi_square_meta, kernel=K.multi_square_sum,
               sbp=lambda op: [_sig([S(i)] * len(op.inputs), [P]) for i in range(min(len(x.shape)
                                                                                    for x in op.inputs))]
               + [_sig([B] * len(op.inputs), [B])]))


# --- ssp_variable_proxy ---------------------------------------------------------------------------------------------
def _ssp_meta(op):
    var = op.inputs[0]
    if var.op.defn.role != "variable":
        raise TypeError("ssp_variable_proxy '%s': var must be a variable (flow.get_variable)" % op.name)
    if op.attrs["buffer_size"] < 1:
        raise ValueError("ssp_variable_proxy '%s': buffer_size must be >= 1" % op.name)
    return [TensorMeta(var.shape, var.dtype)]


def _ssp_build(op, dev):
    size = op.attrs["buffer_size"]
    next_call = _call_counter(op, dev)
    state = _session_state(dev.session)
    key = ("ssp_ring", op.job.name, op.name, dev.index)

    def run(var):
        call = next_call()
        ring = state.get(key)
        if ring is None:  # the first call: every slot holds the variable's value as it starts
            ring = state[key] = [var.copy() for _ in range(size)]
        else:  # the variable now holds what the previous call left: the value `size` calls from then
            ring[(call - 1) % size] = var.copy()
        return ring[call % size].copy()

    return run


def _ssp_sbp(op):
    nd = len(op.inputs[0].shape)
    return [_sig([S(i)], [S(i)]) for i in range(nd)] + [_sig([B], [B])]


register(OpDef("ssp_variable_proxy", infer=_ssp_meta, build=_ssp_build, sbp=_ssp_sbp, stateful=True))


# --- dynamic_binary_split / dynamic_binary_concat -----------------------------------------------------------------
def _binary_split_meta(op):
    x = op.inputs[0]
    caps = B_K.chunk_sizes(op.attrs["base_shift"], op.attrs["out_num"])
    if op.attrs["out_num"] < 2:
        raise ValueError("dynamic_binary_split '%s': out_num must be >= 2" % op.name)
    elements = 1
    for d in x.shape:
        elements *= d
    need = 8 * (1 + len(x.shape)) + x.dtype.np.itemsize * elements
    if need > sum(caps):
        raise ValueError("dynamic_binary_split '%s': %s %s needs up to %d bytes, base_shift %d and out_num %d give "
                         "%d" % (op.name, x.dtype.name, x.shape, need, op.attrs["base_shift"], op.attrs["out_num"],
                                 sum(caps)))
    return [TensorMeta((c,), dtypes.int8, True) for c in caps]


def _binary_concat_meta(op):
    return [TensorMeta(op.attrs["shape"], op.attrs["dtype"], op.attrs["is_dynamic"])]


register(OpDef("dynamic_binary_split", infer=_binary_split_meta, kernel=B_K.dynamic_binary_split,
               kernel_attrs=lambda op: {"capacities": tuple(y.shape[0] for y in op.outputs)},
               sbp=lambda op: [_sig([B], [B] * len(op.outputs))]))
register(OpDef("dynamic_binary_concat", infer=_binary_concat_meta, kernel=B_K.dynamic_binary_concat,
               kernel_attrs=lambda op: {"dtype": op.attrs["dtype"].np},
               sbp=lambda op: [_sig([B] * len(op.inputs), [B])]))


# --- CategoricalOrdinalEncode (OneFlow v0.3.4 oneflow/user/ops/categorical_ordinal_encode_op.cpp) ------------------
def _encode_meta(op):
    x, table, size = op.inputs
    if x.dtype.np is None or x.dtype.np.kind not in "iu" or table.dtype is not x.dtype or size.dtype is not x.dtype:
        raise TypeError("CategoricalOrdinalEncode '%s': in, table and size must share one integer dtype, got %s, %s, "
                        "%s" % (op.name, x.dtype.name, table.dtype.name, size.dtype.name))
    if len(table.shape) != 1 or table.shape[0] % 2 or tuple(size.shape) != (1,):
        raise ValueError("CategoricalOrdinalEncode '%s': table must be (2 · capacity,) and size (1,), got %s and %s" % (
            op.name, table.shape, size.shape))
    if op.placement.parallel_num != 1:
        raise ValueError("CategoricalOrdinalEncode '%s': runs on one device only (OneFlow checks parallel_num == 1), "
                         "its placement has %d" % (op.name, op.placement.parallel_num))
    if table.op.defn.role != "variable" or size.op.defn.role != "variable":
        raise TypeError("CategoricalOrdinalEncode '%s': table and size must be variables" % op.name)
    return [TensorMeta(x.shape, x.dtype, x.is_dynamic)]


register(OpDef("CategoricalOrdinalEncode", infer=_encode_meta, kernel=K.categorical_ordinal_encode,
               sbp=lambda op: [_sig([B, B, B], [B])], stateful=True))
