"""OneFlow 0.9's auto-mixed-precision lists (`oneflow/core/job_rewriter/auto_mixed_precision_lists.cpp` @ v0.9.0)
and its no-cast inputs (`REGISTER_NO_CAST_REGISTRY`, `auto_mixed_precision.cpp` @ v0.9.0): the one place that holds
them. Eager `flow.autocast("cuda")` (`_global/autocast_mode.py`, 0.9's TensorAutoCastProcessor) and nn.Graph's
`config.enable_amp(True)` (`passes/amp.py`, 0.9's AutoMixedPrecision job pass) read them; an op declaration's
`amp_color` (`ops/registry.py`) is its colour here.

Colours: white (computes in float16: matmul, conv, ...), gray and clear (float16 where their neighbours are, by each
reader's rule), black. The eager processor treats an op on no list as black (0.9's default there); the graph pass,
as 0.9's, distinguishes the black list proper ("amp_black_identity") from an op on no list: `color` answers BLACK
for both, `listed_black` only for the former.
"""
from oneflow_compat.ops.op_names import oneflow_op_type

WHITE, GRAY, CLEAR, BLACK = "white", "gray", "clear", "black"

# auto_mixed_precision_lists.cpp @ v0.9.0, by OneFlow op type (the ops this project has, and their OneFlow names);
# the black list is 0.9's whole black list
LISTS = {
    WHITE: ("matmul", "batch_matmul", "conv2d", "conv_data_grad", "conv_filter_grad", "conv_bias_grad",
             "amp_white_identity", "broadcast_matmul", "broadcast_matmul_grad_b",
             "fused_self_attention_query_mul_key_and_value", "fused_self_attention_query_mul_key_and_value_grad",
             "prelu", "prelu_grad", "tf_prelu", "tf_prelu_grad", "cublas_fused_mlp", "cublas_fused_mlp_grad",
             "fused_matmul_bias", "cublas_bias_add_relu_matmul_grad", "fused_glu",
             "fused_matmul_bias_add_relu_dropout", "fused_relu_dropout_grad", "fused_dot_feature_interaction",
             "fused_dot_feature_interaction_grad", "one_embedding_fused_lookup", "one_embedding_fused_lookup_grad",
             "binary_cross_entropy_with_logits_reduce_mean", "binary_cross_entropy_with_logits_reduce_mean_grad",
             "fused_cross_feature_interaction", "fused_cross_feature_interaction_v1_grad",
             "fused_cross_feature_interaction_v2_grad", "fused_multi_head_attention_inference",
             "grouped_matmul_bias"),
    GRAY: ("add_n", "tf_avg_pool_1d", "tf_avg_pool_1d_grad", "tf_avg_pool_2d", "tf_avg_pool_2d_grad",
            "tf_avg_pool_3d", "tf_avg_pool_3d_grad", "avg_pool_1d", "avg_pool_1d_grad", "avg_pool_2d",
            "avg_pool_2d_grad", "avg_pool_3d", "avg_pool_3d_grad", "bias_add", "reduce_sum", "reduce_sum_like",
            "sigmoid_grad", "tanh", "tanh_grad", "sqrt", "sqrt_grad", "scalar_mul", "scalar_mul_by_tensor",
            "scalar_add", "scalar_div", "scalar_pow", "broadcast_add", "broadcast_sub", "broadcast_mul",
            "broadcast_div", "layer_norm", "layer_norm_param_grad", "layer_norm_grad", "rms_norm", "rms_norm_grad",
            "rms_norm_param_grad", "dropout", "dropout_grad", "softmax", "softmax_grad", "log_softmax",
            "log_softmax_grad", "gelu", "gelu_grad", "fast_gelu", "fast_gelu_grad", "normalization",
            "normalization_grad", "normalization_add_relu", "normalization_add_relu_grad",
            "sparse_softmax_cross_entropy", "sparse_softmax_cross_entropy_grad", "nll", "nll_grad",
            "fused_tril_scale_softmax_mask_scale", "fused_tril_scale_softmax_mask_scale_grad",
            "fused_scale_mask_softmax_dropout", "fused_scale_mask_softmax_dropout_grad", "fused_scale_mask_softmax",
            "fused_scale_mask_softmax_grad", "fused_bias_add_scale_mask_softmax_dropout", "fused_bias_add_gelu",
            "fused_bias_add_gelu_grad", "fused_bias_add_mask_scale", "fused_fast_gelu_mul",
            "fused_fast_gelu_mul_grad", "acc", "reciprocal", "reciprocal_no_nan", "group_norm",
            "group_norm_param_grad", "group_norm_grad", "silu", "silu_grad", "fused_weighted_sum"),
    CLEAR: ("broadcast_like", "gather", "gather_nd", "scatter_nd", "scatter_nd_like", "unsorted_segment_sum_like",
             "tf_max_pool_1d", "tf_max_pool_1d_grad", "tf_max_pool_2d", "tf_max_pool_2d_grad", "tf_max_pool_3d",
             "tf_max_pool_3d_grad", "max_pool_1d", "max_pool_1d_grad", "max_pool_2d", "max_pool_2d_grad",
             "max_pool_3d", "max_pool_3d_grad", "reshape", "reshape_like", "relu", "relu_grad", "transpose",
             "random_mask_like", "concat", "split_like", "pad", "same_padding", "same_padding_grad", "tril", "slice",
             "slice_grad", "fused_scale_tril", "identity", "squeeze", "embedding", "embedding_grad", "expand",
             "expand_dims", "cast_to_static_shape", "parallel_cast", "hierarchical_parallel_cast",
             "hierarchical_parallel_cast_like", "repeat", "unpack", "pack", "nvtx_start", "nvtx_end", "narrow",
             "narrow_grad", "ones_like", "pinned_identity", "to_contiguous", "copy", "upsample_nearest_2d"),
    BLACK: ("amp_black_identity",),
}
_COLOR = {name: color for color, names in LISTS.items() for name in names}

# this project's op types whose OneFlow 0.9 op type (the name on the lists) differs from `op_names.py`'s map:
# 0.9's `x + y` is broadcast_add (add_n for same shapes: gray too); flow.mean is reduce_sum then scalar_mul
# (math_functor.cpp ReduceMeanFunctor); the conv gradients are conv_data_grad / conv_filter_grad; matmul_bias_act
# is fused_matmul_bias (+ an activation); unsqueeze is expand_dims; this project's sparse_softmax_cross_entropy is
# 0.9's op of that name (op_names.py maps it to the _ms variant for grad_fn names); the gradient of a broadcast
# input (reduce_to_shape here) is 0.9's reduce_sum_like (BroadcastReduceSumLike in the broadcast ops' backward)
_ONEFLOW_TYPE = {"add": "broadcast_add", "reduce_mean": "reduce_sum", "conv2d_grad_input": "conv_data_grad",
                 "conv2d_grad_weight": "conv_filter_grad", "matmul_bias_act": "fused_matmul_bias",
                 "expand_dims": "expand_dims", "sparse_softmax_cross_entropy": "sparse_softmax_cross_entropy",
                 "reduce_to_shape": "reduce_sum_like"}
# the pools' gradients: 0.9's max_pool_2d_grad, avg_pool_2d_grad, ... (op_names.py maps the forward ops)
_ONEFLOW_TYPE.update({"%s_pool%dd_grad" % (kind, n): "%s_pool_%dd_grad" % (kind, n) for kind in ("max", "avg")
                      for n in (1, 2, 3)})

# inputs 0.9 never casts (REGISTER_NO_CAST_REGISTRY, auto_mixed_precision.cpp @ v0.9.0): normalization's running
# statistics and affine parameters (this project's inputs: x, moving mean, moving variance, gamma, beta)
NO_CAST_INPUTS = {"normalization": frozenset((1, 2, 3, 4))}

# inputs read for their shape alone where 0.9's counterpart reads no blob, so 0.9's op graph has no edge there for
# the colouring to follow: this project's reshape gradient is reshape_like(dy, x), 0.9's is Reshape(dy, shape)
# (oneflow/core/autograd/gradient_funcs/reshape.cpp @ v0.9.0)
SHAPE_ONLY_INPUTS = {"reshape_like": frozenset((1,))}


def _oneflow_type(op_type):
    return _ONEFLOW_TYPE.get(op_type) or oneflow_op_type(op_type)


def color(op_type):
    """The colour of this project's op `op_type`: WHITE, GRAY, CLEAR or BLACK (on no list, or on the black list)."""
    return _COLOR.get(_oneflow_type(op_type), BLACK)


def listed_black(op_type):
    """Whether `op_type` is on 0.9's black list itself (not merely on no list)."""
    return _COLOR.get(_oneflow_type(op_type)) == BLACK


def no_cast_inputs(op_type):
    """The input indices of `op_type` the AMP casts leave alone."""
    return NO_CAST_INPUTS.get(op_type, frozenset())


def shape_only_inputs(op_type):
    """The input indices of `op_type` that 0.9's op graph has no edge for (read for their shape alone)."""
    return SHAPE_ONLY_INPUTS.get(op_type, frozenset())
