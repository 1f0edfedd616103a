"""Every name functional_api.yaml (OneFlow v0.9.0) marks `bind_python: True` is a function of oneflow._C here,
but for the commented exclusions. The names are listed in this file (a list of the names alone, in the yaml's
order), so the check runs without OneFlow's sources."""
import inspect

import pytest

from oneflow_compat import _C

BOUND_IN_V090 = """
amin less less_equal pow searchsorted floor_divide trunc_divide max min median reduce_max reduce_min reduce_sum
reduce_nansum reduce_mean reduce_all reduce_any reduce_prod reduce_min_device_stage reduce_max_device_stage
reduce_min_global_stage reduce_max_global_stage logsumexp logaddexp quantile transpose as_strided select
swapaxes swapdims amax permute T t reciprocal reciprocal_no_nan image_flip sin sin_ cos cosh cosh_grad log log2
log10 sqrt rsqrt square sqrt_square_sum std var rms_layer_norm relu hann_window hardtanh tan tan_grad tanh
tanh_grad threshold elu celu gelu fast_gelu quick_gelu gelu_with_approximate glu fused_glu sigmoid sigmoid_grad
hardsigmoid hardshrink softmax gumbel_softmax log_softmax hardswish leaky_relu normal normalization
normalization_add_relu eye eye_ erfinv erfinv_ arange global_arange flatten argmax argmin argwhere nonzero
broadcast_like cast global_tensor_constant tensor_constant constant global_constant empty global_empty bernoulli
bernoulli_ concat bias_add conv1d conv2d conv3d fake_quantization quantization min_max_observer
moving_average_min_max_observer deconv1d deconv2d deconv3d expand repeat repeat_interleave tile roll expand_dims
unsqueeze squeeze exp gather dim_gather embedding_renorm_ embedding arg_sort gather_nd scatternd
tensor_scatter_nd_update scatterndlike matmul mm fused_mlp fused_matmul_bias fused_matmul_bias_add_relu_dropout
batch_matmul baddbmm matrix_vector_product tensordot l1_loss mse_loss kl_div_loss nll_loss
binary_cross_entropy_loss binary_cross_entropy_with_logits_loss binary_cross_entropy_with_logits_loss_grad
sparse_cross_entropy distributed_sparse_cross_entropy cross_entropy sparse_softmax_cross_entropy
softmax_cross_entropy softmax_cross_entropy_grad smooth_l1_loss combined_margin_loss triplet_margin_loss
margin_ranking_loss ctc_loss affine_grid grid_sample movedim tensor_split hsplit vsplit negative
layer_norm_affine layer_norm rms_norm group_norm avg_pool2d_nhwc adaptive_avg_pool1d adaptive_avg_pool2d
adaptive_avg_pool3d max_pool1d max_pool2d max_pool3d max_unpool1d max_unpool2d max_unpool3d prelu reshape view
contiguous contiguous_ slice_view_1d_contiguous narrow slice slice_update copy to flip upsample
upsample_linear_1d upsample_nearest_1d upsample_nearest_2d upsample_bilinear_2d upsample_bicubic_2d
upsample_nearest_3d upsample_trilinear_3d fused_get_boundding_boxes_coord fused_get_ciou_result fused_get_iou
abs acos acosh asin asinh atan atan2 atanh ceil erf erfc expm1 floor floor_ lgamma log1p logsigmoid rint round
sign sinh softplus softshrink one_hot unsorted_segment_sum tril triu triu_ vector_norm matrix_norm norm inv
linalg_cross dropout dropout1d dropout2d dropout3d pad silu mish selu softsign diag diagonal scatter scatter_add
tensor_setitem avg_pool1d avg_pool2d avg_pool3d minimum maximum stack atleast_1d atleast_2d atleast_3d hstack
vstack dstack column_stack row_stack to_global to_local stream_touch comm_broadcast local_all_reduce
local_all_gather local_reduce_scatter local_reduce select_top_n identity amp_white_identity amp_black_identity
reshape_like reduce_sum_like rand randn randn_like randint randint_like randperm unfold_tensor unfold fold split
unbind chunk split_like pairwise_distance cosine_similarity normalize fused_self_attention fused_scale_tril
fused_bias_add_gelu fused_bias_add_dropout fused_scale_mask_softmax fused_scale_mask_softmax_dropout
fused_scale_tril_softmax_mask_scale fused_bias_add_scale_mask_softmax_dropout
fused_multi_head_attention_inference fused_get_center_dist fused_get_intersection_area
fused_get_ciou_diagonal_angle fused_get_convex_diagonal_squared grouped_matmul_bias grouped_matmul send recv
batch_gather ctc_greedy_decoder nms roi_align meshgrid index_select decode_onerec dot
fused_dot_feature_interaction fused_cross_feature_interaction tensor_buffer_to_tensor tensor_to_tensor_buffer
gen_tensor_buffer topk in_top_k cumsum cumprod one_embedding_id_shuffle one_embedding_embedding_shuffle
one_embedding_embedding_gradient_shuffle one_embedding_lookup one_embedding_fused_lookup
one_embedding_fused_lookup_grad one_embedding_unique_key_value_pair one_embedding_embedding_put
one_embedding_sgd_update one_embedding_adam_update one_embedding_adagrad_update one_embedding_ftrl_update einsum
pixel_shuffle isnan isinf isfinite roc_auc_score pin_memory fill_ index_add index_add_ rnn_tanh_cell
rnn_relu_cell lstm_cell gru_cell rnn_tanh rnn_relu lstm gru pack_padded_sequence multi_tensor_sgd_update
multi_tensor_yolov5_weight_update multi_tensor_momentum_update multi_tensor_adam_update trunc batch_norm_stats
batch_norm_gather_stats_with_counts batch_norm_elemt batch_norm_backward_reduce batch_norm_backward_elemt
adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d exponential_ multinomial deform_conv2d
broadcast_shapes broadcast_tensors broadcast_to bincount stft isclose uniform_ fused_fast_gelu_mul unique
fused_weighted_sum sort throw_error""".split()

# the entries marked `bind_python: true` (lower case: the same YAML boolean, bound to Python as well)
BOUND_IN_V090_LOWER_CASE = """
add sub mul mul_ addcmul addcmul_ addcdiv addcdiv_ div div_ equal broadcast_equal not_equal greater
greater_equal logical_and logical_or logical_not logical_xor fmod where masked_fill masked_fill_ clamp clamp_
clamp_min clamp_min_ clamp_max clamp_max_ clip clip_
""".split()

# tensor_api.yaml's names (the tensor constructors), bound too
BOUND_IN_V090_TENSOR_API = ["tensor", "_legacy_tensor_ctor", "assign_local_tensor", "from_numpy", "from_dlpack"]

# Names left unbound, each with the reason (empty when every name is bound).
EXCLUDED = {
}


def test_the_lists_are_the_yamls_386_and_31_names():
    assert len(BOUND_IN_V090) == 386
    assert len(BOUND_IN_V090_LOWER_CASE) == 31
    assert len(set(BOUND_IN_V090) | set(BOUND_IN_V090_LOWER_CASE)) == 417


@pytest.mark.parametrize("name", [n for n in BOUND_IN_V090 + BOUND_IN_V090_LOWER_CASE + BOUND_IN_V090_TENSOR_API
                                  if n not in EXCLUDED])
def test_bound_and_callable(name):
    fn = getattr(_C, name, None)
    assert fn is not None, "oneflow._C.%s is not bound" % name
    assert callable(fn)


def test_the_exclusions_are_yaml_names_still_unbound():
    for name in EXCLUDED:
        assert name in BOUND_IN_V090
        assert not hasattr(_C, name), "%s is bound now: drop it from EXCLUDED" % name


# a sample of the yaml's signatures: the argument names (and defaults) a keyword call needs
SIGNATURES = {
    "reduce_max": ["x", "axis", "keepdim"],
    "reduce_sum": ["x", "dim", "keepdim"],
    "max_pool2d": ["input", "kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode",
                   "data_format"],
    "upsample_trilinear_3d": ["x", "depth_scale", "height_scale", "width_scale", "align_corners", "output_size",
                              "data_format"],
    "normalization": ["x", "moving_mean", "moving_variance", "gamma", "beta", "axis", "epsilon", "momentum",
                      "is_training"],
    "one_hot": ["input", "num_classes", "on_value", "off_value"],
    "conv2d": ["input", "weight", "bias", "stride", "padding", "dilation", "groups", "channel_pos"],
    "normalize": ["input", "p", "dim", "eps", "use_l2_norm_kernel"],
    "batch_norm_backward_elemt": ["grad_out", "input", "mean", "invstd", "weight", "sum_dy", "sum_dy_xmu", "count",
                                  "axis"],
    "fused_multi_head_attention_inference": [
        "query", "key", "value", "num_heads", "causal", "query_hidden_slice_start", "query_hidden_slice_end",
        "key_hidden_slice_start", "key_hidden_slice_end", "value_hidden_slice_start", "value_hidden_slice_end"],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_argument_names_and_order_are_the_yamls(name):
    params = list(inspect.signature(getattr(_C, name)).parameters)
    assert params == SIGNATURES[name]


def test_each_name_is_bound_once():
    """Every function of oneflow._C is bound by one statement of `_C.py` (no import or def that a later one
    replaces: `_C.add`, `normalize`, `mm`, `dot` were bound three times). The only names bound twice are wrappers
    of their first binding (`name = _yaml_names.renamed(name, ...)`: the yaml's argument names)."""
    import ast

    tree = ast.parse(open(_C.__file__).read())
    lines = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            names = [a.asname or a.name for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            wraps = (isinstance(node.value, ast.Call) and node.value.args and isinstance(node.value.args[0], ast.Name)
                     and [t.id for t in node.targets if isinstance(t, ast.Name)] == [node.value.args[0].id])
            names = [] if wraps else [t.id for t in node.targets if isinstance(t, ast.Name)]
        else:
            continue
        for name in names:
            lines.setdefault(name, []).append(node.lineno)
    assert {name: at for name, at in lines.items() if len(at) > 1} == {}
    from oneflow_compat._global import add_forms, l2_normalize, matrix_checks

    assert (_C.add, _C.normalize, _C.mm, _C.dot) == (add_forms.add, l2_normalize.normalize, matrix_checks.mm,
                                                     matrix_checks.dot)
