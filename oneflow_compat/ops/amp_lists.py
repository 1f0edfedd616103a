"""OneFlow's auto-mixed-precision lists (`oneflow/core/job_rewriter/auto_mixed_precision_lists.cpp`) and no-cast
inputs (`REGISTER_NO_CAST_REGISTRY`, `auto_mixed_precision.cpp`), per release: the one place that holds them.

Two rule sets (`Rules`), one per API generation:

* `V09` (@ v0.9.0): eager `flow.autocast("cuda")` (`_global/autocast_mode.py`, 0.9's TensorAutoCastProcessor) and
  nn.Graph's `config.enable_amp(True)` (`passes/amp.py`, 0.9's AutoMixedPrecision job pass) read them; an op
  declaration's `amp_color` and its kin (`ops/registry.py`) are its colour here;
* `V04` (@ v0.4.0; v0.3.4's lists are a subset): the legacy `func_config.enable_auto_mixed_precision(True)`, the same
  job pass (`passes/amp.py`) with v0.4's lists — forward ops only (no gradient op is on them: v0.4 ran the pass
  before GenerateBackwardAndOptimizerOpConfs, `job_build_and_infer_ctx.cpp` @ v0.4.0, so the backward is built from
  the rewritten forward and follows its dtypes), an empty black list, and no "gray/clear sink" start (0.9's
  FillWhiteSet added it). An op declaration's `amp_rules(V04)` answers for it.

Colours: white (computes in float16: matmul, conv, ...), gray and clear (float16 where their neighbours are, by each
reader's rule), black. The eager processor treats an op on no list as black (0.9's default there); the graph pass,
as 0.9's, distinguishes the black list proper ("amp_black_identity") from an op on no list: `color` answers BLACK
for both, `listed_black` only for the former.
"""
import collections

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
# the legacy `flow.layers.batch_normalization` in training is one OneFlow `normalization` op (v0.4.0 layers.py),
# here the batch statistics (channel_sum, centered_square_sum) and normalization_batch_stats, which normalizes with
# them: the latter is the normalization on the lists (its inputs mean, variance, gamma, beta never cast), the
# statistics read the input as the pass leaves it for a non-white reader (float32, as cuDNN's half batch norm
# accumulates them)
_ONEFLOW_TYPE["normalization_batch_stats"] = "normalization"
_ONEFLOW_TYPE.update({"%s_pool%dd_grad" % (kind, n): "%s_pool_%dd_grad" % (kind, n) for kind in ("max", "avg")
                      for n in (1, 2, 3)})

# inputs 0.9 never casts (REGISTER_NO_CAST_REGISTRY, auto_mixed_precision.cpp @ v0.9.0): normalization's running
# statistics and affine parameters (this project's inputs: x, moving mean, moving variance, gamma, beta; for
# normalization_batch_stats, the legacy batch norm's normalization: x, batch mean, batch variance, gamma, beta)
NO_CAST_INPUTS = {"normalization": frozenset((1, 2, 3, 4)), "normalization_batch_stats": frozenset((1, 2, 3, 4))}

# inputs read for their shape alone where 0.9's counterpart reads no blob, so 0.9's op graph has no edge there for
# the colouring to follow: this project's reshape gradient is reshape_like(dy, x), 0.9's is Reshape(dy, shape)
# (oneflow/core/autograd/gradient_funcs/reshape.cpp @ v0.9.0)
SHAPE_ONLY_INPUTS = {"reshape_like": frozenset((1,))}


def _oneflow_type(op_type):
    return _ONEFLOW_TYPE.get(op_type) or oneflow_op_type(op_type)


# auto_mixed_precision_lists.cpp @ v0.4.0, by OneFlow op type: forward ops alone (the pass ran before the backward
# existed); the black list is empty ("TODO(niuchong): reduce_mean?"). v0.4's `multiply` (same shapes) and `sigmoid`
# are gray there; this project's multiply is 0.9's broadcast_mul (gray in both). v0.4's reduce_mean is reduce_sum
# (on no list) then a scalar multiply (reduce_mean.py @ v0.4.0): this project's one reduce_mean op, named reduce_sum
# here, is on no list.
LISTS_V04 = {
    WHITE: ("matmul", "batch_matmul", "conv2d", "amp_white_identity", "broadcast_matmul",
             "fused_self_attention_query_mul_key_and_value"),
    GRAY: ("add_n", "avg_pool_1d", "avg_pool_2d", "avg_pool_3d", "bias_add", "multiply", "sigmoid", "tanh", "sqrt",
            "scalar_mul", "scalar_add", "broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
            "layer_norm", "dropout", "softmax", "gelu", "normalization", "normalization_add_relu",
            "sparse_softmax_cross_entropy", "fused_tril_scale_softmax_mask_scale", "fused_bias_add_gelu",
            "fused_bias_add_mask_scale", "acc"),
    CLEAR: ("gather", "max_pool_1d", "max_pool_2d", "max_pool_3d", "reshape", "relu", "transpose",
             "random_mask_like", "concat", "pad", "same_padding", "tril", "slice", "fused_scale_tril", "identity",
             "flatten", "squeeze", "expand_dims", "cast_to_static_shape", "parallel_cast",
             "hierarchical_parallel_cast", "hierarchical_parallel_cast_like", "repeat", "unpack", "pack",
             "nvtx_start", "nvtx_end"),
    BLACK: (),
}
# v0.4's no-cast inputs: normalization's (and normalization_add_relu's, which this project's legacy op does not
# produce as one op) moving mean, moving variance, gamma and beta; none of a gradient op's (there were none to see)
NO_CAST_INPUTS_V04 = {"normalization": frozenset((1, 2, 3, 4)), "normalization_batch_stats": frozenset((1, 2, 3, 4))}

AmpInfo = collections.namedtuple("AmpInfo", "color black_listed no_cast shape_only")


class Rules:
    """The AMP rules of one OneFlow release: the lists, the no-cast inputs, whether a gray or clear op with no
    consumer starts the white set (0.9's IsWhiteOrSinkAndAllowedToRunHalf; v0.4 started from white ops alone), and
    whether the pass runs before the backward is built (v0.4: forward ops, the backward follows their dtypes) or
    after (0.9: forward and backward ops, before the optimizer's)."""

    def __init__(self, release, lists, no_cast, sinks_start_white, before_backward):
        self.release = release
        self.sinks_start_white = sinks_start_white
        self.before_backward = before_backward
        self._color = {name: c for c, names in lists.items() for name in names}
        self.no_cast_table = no_cast  # {op type: input indices} (a per-op-type table, as NO_CAST_INPUTS)

    def info(self, op_type):
        """(color, on the black list itself, no-cast input indices, shape-only input indices) of this project's op
        `op_type`: `color` is BLACK for an op on no list too."""
        listed = self._color.get(_oneflow_type(op_type))
        return AmpInfo(listed or BLACK, listed == BLACK, self.no_cast_table.get(op_type, frozenset()),
                       SHAPE_ONLY_INPUTS.get(op_type, frozenset()))

    def __repr__(self):
        return "<AMP rules of OneFlow %s>" % self.release


V09 = Rules("v0.9.0", LISTS, NO_CAST_INPUTS, sinks_start_white=True, before_backward=False)
V04 = Rules("v0.4.0", LISTS_V04, NO_CAST_INPUTS_V04, sinks_start_white=False, before_backward=True)


def color(op_type):
    """The colour of this project's op `op_type` on 0.9's lists: WHITE, GRAY, CLEAR or BLACK (on no list, or on the
    black list)."""
    return V09.info(op_type).color


def listed_black(op_type):
    """Whether `op_type` is on 0.9's black list itself (not merely on no list)."""
    return V09.info(op_type).black_listed


def no_cast_inputs(op_type):
    """The input indices of `op_type` 0.9's AMP casts leave alone."""
    return V09.info(op_type).no_cast


def shape_only_inputs(op_type):
    """The input indices of `op_type` that 0.9's op graph has no edge for (read for their shape alone)."""
    return SHAPE_ONLY_INPUTS.get(op_type, frozenset())
