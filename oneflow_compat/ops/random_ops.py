"""`flow.random.bernoulli` and `generate_random_batch_permutation_indices` (OneFlow v0.3.4 `oneflow/user/ops/
bernoulli_op.cpp`, `generate_random_batch_permutation_indices_op.cpp`).

As every random op here (data_ops.py, nn_ops.py's dropout), a draw depends on the op's seed — the user's, else one
derived from the session's root seed and the job and op names — and on the op's call count, never on the layout:
bernoulli's uniforms are those of the logical tensor's flat indices (each device keeps its piece; in the mirrored
view each device draws its own tensor), and the permutation is drawn whole on every device (B).
"""
from oneflow_compat.ir import dtypes
from oneflow_compat.ir import sbp as S
from oneflow_compat.ir.graph import TensorMeta
from oneflow_compat.kernels import random as random_k
from oneflow_compat.kernels import random_draws as K
from oneflow_compat.ops import sbp_rules
from oneflow_compat.ops.data_ops import _call_counter
from oneflow_compat.ops.nn_ops import dropout_seed as op_seed
from oneflow_compat.ops.registry import OpDef, register


def _bernoulli_meta(op):
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise TypeError("bernoulli '%s': the probabilities must be a floating blob, got %s" % (op.name, x.dtype.name))
    return [TensorMeta(x.shape, op.attrs["dtype"], x.is_dynamic)]


def _bernoulli_build(op, dev):
    seed = op_seed(op, dev.session)
    next_call = _call_counter(op, dev)
    logical = tuple(op.inputs[0].shape)
    sbp = dev.sbp_in[0]
    mirrored = sbp == S.M
    piece = () if mirrored else S.local_slices(logical, sbp, dev.index, dev.parallel_num)
    dtype = op.attrs["dtype"].np

    def run(p):
        call = next_call()
        if mirrored:
            return K.bernoulli(dev.xp, p, random_k.call_key(seed, call, dev.index), tuple(p.shape), (), dtype)
        return K.bernoulli(dev.xp, p, random_k.call_key(seed, call), logical, piece, dtype)

    return run


register(OpDef("bernoulli", infer=_bernoulli_meta, build=_bernoulli_build, sbp=sbp_rules.unary))


def _permutation_build(op, dev):
    seed = op_seed(op, dev.session)
    next_call = _call_counter(op, dev)
    n = op.inputs[0].shape[0]

    def run(x):
        # every device draws the same whole permutation (the call counter advances alike on each)
        return K.batch_permutation(dev.xp, seed, next_call(), n if dev.sbp_in[0] != S.M else x.shape[0])

    return run


def _permutation_sbp(op):
    """x is read for its row count only: any layout of it gives the whole permutation on every device."""
    nd = len(op.inputs[0].shape)
    return [((S.S(i),), (S.B,)) for i in range(nd)] + [((S.B,), (S.B,)), ((S.P,), (S.B,))]


register(OpDef("generate_random_batch_permutation_indices",
               infer=lambda op: [TensorMeta((op.inputs[0].shape[0],), dtypes.int32, op.inputs[0].is_dynamic)],
               build=_permutation_build, sbp=_permutation_sbp))


# --- distributed_partial_fc_sample (OneFlow v0.3.4 oneflow/user/ops/partial_fc_sample_op.cpp) -----------------------
def _partial_fc_meta(op):
    weight, label = op.inputs
    n, k = op.placement.parallel_num, op.attrs["num_sample"]
    if k % n or weight.shape[0] % n:
        raise ValueError("distributed_partial_fc_sample '%s': num_sample (%d) and the classes (%d) must divide "
                         "among the %d devices" % (op.name, k, weight.shape[0], n))
    if label.dtype.np is None or label.dtype.np.kind not in "iu":
        raise TypeError("distributed_partial_fc_sample '%s': label must be an integer blob" % op.name)
    return [TensorMeta(label.shape, label.dtype, label.is_dynamic), TensorMeta((k,), label.dtype),
            TensorMeta((k,) + tuple(weight.shape[1:]), weight.dtype)]


def _partial_fc_build(op, dev):
    seed = op_seed(op, dev.session)
    next_call = _call_counter(op, dev)
    n = dev.parallel_num
    per_rank_classes = op.inputs[0].shape[0] // n
    per_rank_samples = op.attrs["num_sample"] // n

    def run(weight, label):
        return K.partial_fc_sample(dev.xp, weight, label, num_sample_per_rank=per_rank_samples,
                                   num_classes_per_rank=per_rank_classes, shard=dev.index, seed=seed,
                                   call=next_call())

    return run


def _partial_fc_grad(op, dys):
    from oneflow_compat.ops.registry import apply

    weight = op.inputs[0]
    if dys[2] is None:
        return [None, None]
    return [apply("unsorted_segment_sum_like", [dys[2], op.outputs[1], weight], {"axis": 0}), None]


register(OpDef("distributed_partial_fc_sample", infer=_partial_fc_meta, build=_partial_fc_build,
               sbp=lambda op: [((S.S(0), S.B), (S.B, S.S(0), S.S(0)))], grad=_partial_fc_grad))
