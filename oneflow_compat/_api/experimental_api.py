"""The functions of OneFlow v0.3.4's `flow.experimental` beyond the slices: unique_with_counts,
indexed_slices_reduce_sum, square_sum, ssp_variable_proxy, get/set_interface_blob_value, dynamic_binary_split /
dynamic_binary_concat (signatures and names after `oneflow/python/experimental/*.py`)."""
from oneflow_compat.ir import builder, dtypes
from oneflow_compat.ir.graph import LazyBlob
from oneflow_compat.ops.registry import apply


def _unique(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """(y, idx, count, num_unique) of the 1-d x: its unique values in order of first occurrence (y[:num_unique]),
    each entry's position among them, how often each occurs."""
    return tuple(apply("unique_with_counts", [x], {"out_idx": dtypes.as_dtype(out_idx)},
                       name=_unique(name, "UniqueWithCounts_", "flow.experimental.unique_with_counts")))


def indexed_slices_reduce_sum(indices, values, name=None):
    """(unique indices, the summed value rows per index, num_unique): the rows of `values` whose indices are
    equal added together (an IndexedSlices gradient made dense-free)."""
    return tuple(apply("indexed_slices_reduce_sum", [indices, values],
                       name=_unique(name, "IndexedSlicesReduceSum_", "flow.experimental.indexed_slices_reduce_sum")))


def square_sum(x, name=None):
    """(1,): Σ x²."""
    return apply("square_sum", [x], name=_unique(name, "SquareSum_", "flow.experimental.square_sum"))


def ssp_variable_proxy(var, buffer_size=1, name=None):
    """(ref, value): `ref` writes the variable (flow.assign(ref, ...)); `value` is the variable as it was
    `buffer_size` calls ago (its initial value for the first buffer_size calls)."""
    value = apply("ssp_variable_proxy", [var], {"buffer_size": int(buffer_size)},
                  name=_unique(name, "SspVariableProxy_", "flow.experimental.ssp_variable_proxy"))
    return var, value


def _variable_named(op_name, what):
    from oneflow_compat import checkpoint
    from oneflow_compat.framework import session as sess

    sess.sync_default_session()
    variables = checkpoint.get_all_variables()
    if op_name not in variables:
        raise KeyError("flow.experimental.%s: no interface op named %r: the variables are %s" % (
            what, op_name, ", ".join(sorted(variables)) or "none (no job compiled yet)"))
    return variables[op_name]


def get_interface_blob_value(op_name):
    """The value (numpy) of the variable `op_name` (OneFlow reads any interface op; variables are the ones a
    program can name here)."""
    return _variable_named(op_name, "get_interface_blob_value").numpy()


def set_interface_blob_value(op_name, ndarray):
    """Writes ndarray into the variable `op_name` (its shape; cast to its dtype)."""
    from oneflow_compat import checkpoint

    _variable_named(op_name, "set_interface_blob_value")
    checkpoint.load_variables({op_name: ndarray}, ignore_mismatch=False)


def dynamic_binary_split(x, base_shift=2, out_num=2, name=None):
    """x as `out_num` int8 chunks (capacities 2^base_shift · (1, 1, 2, 4, …), largest first)."""
    out = apply("dynamic_binary_split", [x], {"base_shift": int(base_shift), "out_num": int(out_num)},
                name=_unique(name, "DynamicBinarySplit_", "flow.experimental.dynamic_binary_split"))
    return list(out) if isinstance(out, list) else [out]


def dynamic_binary_concat(input_blob_list, source_blob, source_sbp="S:0", name=None):
    """The blob dynamic_binary_split cut into `input_blob_list`, with source_blob's static shape and dtype."""
    if not isinstance(source_blob, LazyBlob):
        raise TypeError("flow.experimental.dynamic_binary_concat: source_blob must be a blob")
    if not any(k in source_sbp for k in "SBP"):
        raise ValueError("flow.experimental.dynamic_binary_concat: invalid sbp str %r" % (source_sbp,))
    return apply("dynamic_binary_concat", list(input_blob_list),
                 {"shape": tuple(source_blob.shape), "dtype": source_blob.dtype, "is_dynamic": source_blob.is_dynamic},
                 name=_unique(name, "DynamicBinaryConcat_", "flow.experimental.dynamic_binary_concat"))


def categorical_ordinal_encode(table, size, input_tensor, hash_precomputed=True, name=None):
    """flow.categorical_ordinal_encode: each hash of input_tensor mapped to its ordinal (1, 2, … by first
    appearance), remembered in the variables `table` (2 · capacity,) and `size` (1,); one device only."""
    assert hash_precomputed is True
    return apply("CategoricalOrdinalEncode", [input_tensor, table, size], {"hash_precomputed": True},
                 name=name or _unique(None, "CategoricalOrdinalEncode_", "flow.categorical_ordinal_encode"))


def categorical_ordinal_encoder(input_tensor, capacity, hash_precomputed=True, name="CategoricalOrdinalEncoder"):
    """flow.layers.categorical_ordinal_encoder: the encoder with its variables `<name>-Table` and `<name>-Size`."""
    from oneflow_compat import initializer, scope
    from oneflow_compat._api import ops_api

    assert hash_precomputed is True
    dtype = input_tensor.dtype
    with scope.namespace(name):
        table = ops_api.get_variable(name="Table", shape=(capacity * 2,), dtype=dtype,
                                     initializer=initializer.constant_initializer(0, dtype=dtype), trainable=False,
                                     reuse=False)
        size = ops_api.get_variable(name="Size", shape=(1,), dtype=dtype,
                                    initializer=initializer.constant_initializer(0, dtype=dtype), trainable=False,
                                    reuse=False)
        return categorical_ordinal_encode(table=table, size=size, input_tensor=input_tensor, name="Encode")


def distributed_partial_fc_sample(weight, label, num_sample, name=None):
    """(mapped_label, sampled_label, sampled_weight): of the class weights (split by class over the current
    placement), every class among the labels and random others, num_sample in all (num_sample / devices per
    shard); the labels renumbered into the sample (the partial FC of face recognition)."""
    n = builder.current("flow.distributed_partial_fc_sample").placement.parallel_num
    assert num_sample % n == 0
    assert weight.shape[0] % n == 0
    return tuple(apply("distributed_partial_fc_sample", [weight, label], {"num_sample": int(num_sample), "seed": None},
                       name=_unique(name, "DistributedPartialFcSample_", "flow.distributed_partial_fc_sample")))
