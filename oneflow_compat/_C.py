"""`oneflow._C`: OneFlow 0.9's functional namespace (its C++ functional API bound to Python), which libraries
written for OneFlow (flowvision) call directly. Each name is the global API's functional form under the name and
keyword arguments `oneflow/core/functional/functional_api.yaml` gives it (v0.9.0), where they differ from the
`nn.functional` / top-level form: `reshape(x, shape=...)`, `transpose(x, perm=...)`, `cast(x, dtype=...)`,
`binary_cross_entropy_with_logits_loss(input, target, weight, pos_weight, reduction)`, ...
"""
from oneflow_compat._global import functional as _F
from oneflow_compat._global import nn_functional as _nnF
from oneflow_compat._global import tensor_functions as _T


def cast(x, dtype, pin_memory=False):
    return _F.cast(x, dtype)


def reshape(x, shape):
    return _F.reshape(x, tuple(shape))


def pad(x, pad, mode="constant", value=0):  # noqa: A002
    return _nnF.pad(x, pad, mode=mode, value=value)


def binary_cross_entropy_with_logits_loss(input, target, weight=None, pos_weight=None, reduction="mean"):  # noqa: A002
    return _nnF.binary_cross_entropy_with_logits(input, target, weight=weight, pos_weight=pos_weight,
                                                 reduction=reduction)


def cross_entropy(input, target, weight=None, ignore_index=_nnF.IGNORE_INDEX, reduction="mean",  # noqa: A002
                  label_smoothing=0.0):
    return _nnF.cross_entropy(input, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                              label_smoothing=label_smoothing)


def l1_loss(input, target, reduction="mean"):  # noqa: A002
    return _F.l1_loss(input, target, reduction=reduction)


# the names whose OneFlow _C form matches the functional form
from oneflow_compat._global.functional import (  # noqa: F401,E402
    cat as concat, clamp, div, exp, log, matmul, sigmoid, softmax, log_softmax, sum, tanh)
from oneflow_compat._global.nn_functional import (  # noqa: F401,E402
    dropout, gelu, interpolate, silu)
from oneflow_compat._global.tensor_functions import (  # noqa: F401,E402
    argsort, cumsum, flip, roll, sort, split, topk)
del _T


# ctc helper: CTC loss and decoder, adaptive max pooling (a (y, indices) pair, as OneFlow's TensorTuple), unpooling
from oneflow_compat._global.nn_ctc import ctc_greedy_decoder, ctc_loss  # noqa: F401,E402
from oneflow_compat._global.nn_pool_indices import max_unpool1d, max_unpool2d, max_unpool3d  # noqa: F401,E402


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    return _nnF.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d(input, output_size):  # noqa: A002
    return _nnF.adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d(input, output_size):  # noqa: A002
    return _nnF.adaptive_max_pool3d(input, output_size, return_indices=True)


# nnextra helper (issue 21): the further activations (the _C forms' keywords are the functional forms': celu alpha,
# hardshrink lambd, softshrink alpha, threshold threshold / value), cumprod, fmod
from oneflow_compat._global.nn_activations_extra import (  # noqa: F401,E402
    celu, glu, hardshrink, quick_gelu, selu, softshrink, softsign, threshold)
from oneflow_compat._global.math_extra import cumprod  # noqa: F401,E402


def unfold(x, kernel_size, dilation=1, padding=0, stride=1, data_format="channels_first"):
    if data_format != "channels_first":
        raise ValueError("unfold: only data_format='channels_first' is supported (as OneFlow 0.9), got %r"
                         % (data_format,))
    from oneflow_compat._global import nn_fold

    return nn_fold.unfold(x, kernel_size, dilation, padding, stride)


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1, data_format="channels_first"):
    if data_format != "channels_first":
        raise ValueError("fold: only data_format='channels_first' is supported (as OneFlow 0.9), got %r"
                         % (data_format,))
    from oneflow_compat._global import nn_fold

    return nn_fold.fold(x, output_size, kernel_size, dilation, padding, stride)


# leftovers helper: Tensor.unfold's functional form (functional_api.yaml `unfold_tensor`, v0.9.0)
def unfold_tensor(x, dimension, size, step):
    from oneflow_compat._global import nn_fold

    return nn_fold.unfold_tensor(x, dimension, size, step)


# api-math: OneFlow 0.9's functional forms of the elementwise / reduction / attribute names of oneflow.rst and
# tensor.rst (functional_api.yaml @ v0.9.0: names and keywords as there)
from oneflow_compat._global.elementwise_extra import (  # noqa: F401,E402
    addcdiv, addcmul, clamp_max, clamp_min, isclose, log10, logical_xor, trunc)
from oneflow_compat._global.math_methods import (  # noqa: F401,E402
    addcdiv_, addcmul_, floor_, sin_)
from oneflow_compat._global.reductions_extra import hann_window, median  # noqa: F401,E402
from oneflow_compat._global.reductions_extra import nansum as reduce_nansum  # noqa: F401,E402
from oneflow_compat._global.nn_activations import mish, softplus  # noqa: F401,E402
from oneflow_compat._global.nn_activations import gelu as gelu_with_approximate  # noqa: F401,E402
from oneflow_compat._global.elementwise_extra import equal  # noqa: F401,E402
from oneflow_compat._global.tensor_attributes_extra import pin_memory  # noqa: F401,E402
from oneflow_compat._global.tensor_functions import acos, acosh, asin, asinh, atan, atanh  # noqa: F401,E402
from oneflow_compat._global.functional import negative  # noqa: F401,E402
# api-data: quantization (functional_api.yaml v0.9.0: fake_quantization, quantization, min_max_observer,
# moving_average_min_max_observer)
from oneflow_compat._global.nn_quantization import (  # noqa: F401,E402
    fake_quantization, min_max_observer, moving_average_min_max_observer, quantization)
# api-data: data pipeline (functional_api.yaml v0.9.0: decode_onerec, image_flip, tensor_buffer_to_tensor,
# tensor_to_tensor_buffer)
from oneflow_compat._global.nn_data import (  # noqa: F401,E402
    decode_onerec, tensor_to_tensor_buffer)


def image_flip(images, flip_code):
    from oneflow_compat._global.nn_data import ImageFlip

    return ImageFlip()(images, flip_code)


# api-nn: the recurrent layers' functional forms and packing (functional_api.yaml v0.9.0: rnn_tanh, rnn_relu,
# lstm, gru, their cells, pack_padded_sequence)
from oneflow_compat._global.nn_rnn import (  # noqa: F401,E402
    gru, gru_cell, lstm, lstm_cell, rnn_relu, rnn_relu_cell, rnn_tanh, rnn_tanh_cell)


def pack_padded_sequence(input, lengths, batch_first):  # noqa: A002
    from oneflow_compat._global import nn_rnn_utils

    return nn_rnn_utils._pack(input, lengths, batch_first)
# api-nn: distances, gumbel softmax, sparse softmax cross entropy (functional_api.yaml v0.9.0: logits first)
from oneflow_compat._global.nn_functional_extra import (  # noqa: F401,E402
    cosine_similarity, gumbel_softmax, pairwise_distance)


def sparse_softmax_cross_entropy(logits, label):
    from oneflow_compat._global import nn_functional_extra

    return nn_functional_extra.sparse_softmax_cross_entropy(label, logits)


def deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h,  # noqa: A002
                  dilation_w, groups, offset_groups, use_mask):
    """functional_api.yaml v0.9.0's `deform_conv2d` (the python form's groups are read from the shapes)."""
    from oneflow_compat._global import nn_deform_conv

    return nn_deform_conv.deform_conv2d(input, offset, weight, bias, (stride_h, stride_w), (pad_h, pad_w),
                                        (dilation_h, dilation_w), mask if use_mask else None)
# api-nn: RMS norms and batch norm + addend + relu (functional_api.yaml v0.9.0)
from oneflow_compat._global.nn_norms_extra import (  # noqa: F401,E402
    normalization_add_relu, rms_layer_norm, rms_norm)
# api-misc1: the functional names of OneFlow 0.9's __init__ extras (functional_api.yaml v0.9.0; finfo / iinfo are
# bound on oneflow._C too: python/oneflow/__init__.py imports them from there)
from oneflow_compat._global.functional import clamp as clip  # noqa: F401,E402
from oneflow_compat._global.inplace_functions import (  # noqa: F401,E402
    clamp_, clamp_max_, clamp_min_, clip_, contiguous, div_, erfinv_, masked_fill_)
from oneflow_compat._global.tensor_functions import erfinv  # noqa: F401,E402
from oneflow_compat._global.type_info import finfo, iinfo  # noqa: F401,E402
from oneflow_compat._global.logaddexp import logaddexp  # noqa: F401,E402
from oneflow_compat._global.stft import stft  # noqa: F401,E402
from oneflow_compat._global.roi_align import roi_align  # noqa: F401,E402
from oneflow_compat._global.nn_init import eye_  # noqa: F401,E402


def quantile(x, q, dim, keepdim=False, interpolation="linear", out=None):
    """`_C.quantile(x, q, dim, keepdim, interpolation, out)`: functional_api.yaml's positional form."""
    from oneflow_compat._global.quantile import quantile as _quantile

    return _quantile(x, q, dim, keepdim, interpolation=interpolation, out=out)

# --- api-shape team (OneFlow 0.9's API reference): the functional names functional_api.yaml (v0.9.0) binds to Python
# for the shape / indexing / product / linalg functions (`nms` here is OneFlow's _C.nms: the mask of sorted boxes;
# `norm` here is OneFlow's _C.norm, the linalg one)
from oneflow_compat._global.shape_extra import (  # noqa: F401,E402
    as_strided, atleast_1d, atleast_2d, atleast_3d, broadcast_tensors, broadcast_to, column_stack,
    diagonal, dstack, hsplit, hstack, movedim, row_stack, select, swapaxes, swapdims, tensor_split, vsplit, vstack)
from oneflow_compat._global import shape_extra as _shape_extra  # noqa: E402
from oneflow_compat._global.creation_like import randint_like, randn_like  # noqa: F401,E402
from oneflow_compat._global.index_extra import (  # noqa: F401,E402
    batch_gather, bincount, index_add, repeat_interleave, roc_auc_score, searchsorted)
from oneflow_compat._global.nd_functions import diag, in_top_k  # noqa: F401,E402
from oneflow_compat._global.index_extra import c_nms as nms  # noqa: F401,E402
from oneflow_compat._global.products_extra import (  # noqa: F401,E402
    inv, linalg_cross, matrix_norm, vector_norm)
from oneflow_compat._global.products_extra import mv as matrix_vector_product  # noqa: F401,E402


def index_add_(input, dim, index, source, alpha=1):  # noqa: A002
    """The in-place form: `input` takes the sum (Tensor.index_add_)."""
    return input.index_add_(dim, index, source, alpha=alpha)


def broadcast_shapes(shapes):
    """`_C.broadcast_shapes(shapes)`: one list of shapes (functional_api.yaml `Shape (ShapeList shapes)`), where
    `flow.broadcast_shapes(*shapes)` takes them one by one."""
    return _shape_extra.broadcast_shapes(*shapes)
# api-misc2: the fused MLP functionals and the local all-reduce (functional_api.yaml v0.9.0, bind_python: True)
from oneflow_compat._global.nn_fused_mlp import (  # noqa: F401,E402
    fused_matmul_bias_add_relu_dropout, fused_mlp)
# acceptance-09: the fused functionals OneFlow 0.9's module tests call (functional_api.yaml v0.9.0), composed from
# registered ops (_global/fused_functionals.py), and _C.tril
from oneflow_compat._global.fused_functionals import (  # noqa: F401,E402
    bias_add, fast_gelu, fused_bias_add_dropout, fused_bias_add_gelu, fused_fast_gelu_mul, fused_glu,
    fused_scale_mask_softmax, fused_scale_mask_softmax_dropout, fused_scale_tril, fused_scale_tril_softmax_mask_scale,
    fused_weighted_sum)
from oneflow_compat._global.fused_functionals import fused_matmul_bias  # noqa: F401,E402
from oneflow_compat._global.tensor_functions import tril  # noqa: F401,E402



# --- api-gaps team: the functional forms (functional_api.yaml, v0.9.0) of embedding with scale_grad_by_freq and
# embedding_renorm_, upsample_bicubic_2d, grid_sample / affine_grid (2-D and 3-D), scatter with reduce
def embedding(weight, indices, padding_idx=None, scale_grad_by_freq=False):
    from oneflow_compat._global import nn_misc

    return nn_misc.embedding(indices, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq)


def embedding_renorm_(weight, indices, max_norm, norm_type):
    from oneflow_compat._global import nn_misc

    return nn_misc.embedding_renorm_(weight, indices, max_norm, norm_type)


def upsample_bicubic_2d(x, height_scale=0.0, width_scale=0.0, align_corners=False, output_size=None,
                        data_format="channels_first"):
    """OneFlow 0.9's UpsampleBicubic2D: the output size given, or floor(size * scale) with the scales as the
    source steps (1 / scale)."""
    from oneflow_compat._global.dispatch import apply_op

    if data_format != "channels_first":
        raise RuntimeError("upsample_bicubic_2d: data_format must be 'channels_first', got %r" % (data_format,))
    if x.ndim != 4:
        raise RuntimeError("upsample_bicubic_2d: input must be 4-D (N, C, H, W), got %d dims" % x.ndim)
    if output_size is not None:
        out, scales = tuple(int(v) for v in output_size), None
    else:
        if height_scale <= 0 or width_scale <= 0:
            raise RuntimeError("upsample_bicubic_2d: output_size or positive height_scale and width_scale are needed")
        out = (int(x.shape[2] * height_scale), int(x.shape[3] * width_scale))
        scales = (float(height_scale), float(width_scale))
    return apply_op("upsample", [x], {"output_size": out, "mode": "cubic", "align_corners": bool(align_corners),
                                      "scales": scales, "half_pixel": False})


def grid_sample(input, grid, *, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    from oneflow_compat._global import nn_sampling

    return nn_sampling.grid_sample(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid(theta, *, size, align_corners):
    from oneflow_compat._global import nn_sampling

    return nn_sampling.affine_grid(theta, size, align_corners)


def scatter(input, dim, index, src, *, reduce=None, inplace=False):  # noqa: A002
    if inplace:  # Tensor.scatter_ (the tensor takes the result, recorded for autograd)
        return input.scatter_(dim, index, src, reduce=reduce)
    from oneflow_compat._global import tensor_functions  # (`_T` is deleted above)

    return tensor_functions.scatter(input, dim, index, src, reduce=reduce)



def norm(input, ord=None, dim=None, keepdim=False, *, dtype=None, for_norm=False):  # noqa: A002
    """OneFlow 0.9's `_C.norm` (functional_api.yaml `Norm`): the linalg norm, or with `for_norm=True` (what
    `flow.norm` / `Tensor.norm` pass when ord is no string and dim is None) flow.norm's reading of an integer ord
    of magnitude >= 2 as the entrywise norm (`_global/norm_forms.py`)."""
    from oneflow_compat._global import norm_forms, products_extra

    if for_norm and not isinstance(ord, str) and dim is None:
        return norm_forms.norm(input, ord, None, keepdim, dtype)
    return products_extra.norm(input, ord, dim, keepdim, dtype)


# --- one-embedding team: OneFlow 0.9's flow._C.one_embedding_fused_lookup (functional_api.yaml) ----------------------
from oneflow_compat.one_embedding.embedding import one_embedding_fused_lookup  # noqa: F401,E402


# --- cbind team: the rest of functional_api.yaml's `bind_python: True` names (OneFlow v0.9.0), by family, in
# _global/c_bindings_*.py (each binding takes the yaml signature's names, order and defaults; tests in
# tests/test_c_bindings_*.py, the yaml coverage in tests/test_c_bindings_coverage.py)
from oneflow_compat._global.c_bindings_math import (  # noqa: F401,E402,A004
    abs, amax, amin, argmin, atan2, ceil, cos, cosh, cosh_grad, erf, erfc, expm1, floor, floor_divide, isfinite,
    isinf, isnan, less, less_equal, lgamma, log1p, log2, logsumexp, max, maximum, min, minimum, pow, reciprocal,
    reciprocal_no_nan, reduce_all, reduce_any, reduce_max, reduce_max_device_stage, reduce_max_global_stage,
    reduce_mean, reduce_min, reduce_min_device_stage, reduce_min_global_stage, reduce_prod, reduce_sum, rint, round,
    rsqrt, sigmoid_grad, sign, sin, sinh, sqrt, sqrt_square_sum, square, std, tan, tan_grad, tanh_grad,
    trunc_divide, var)
from oneflow_compat._global.c_bindings_shape import (  # noqa: F401,E402
    T, amp_black_identity, amp_white_identity, arg_sort, argwhere, baddbmm, batch_matmul, broadcast_like, chunk,
    contiguous_, dim_gather, einsum, expand, expand_dims, fill_, flatten, gather, gather_nd, identity,
    index_select, meshgrid, narrow, nonzero, one_hot, permute, reduce_sum_like, repeat, reshape_like,
    scatter_add, scatternd, scatterndlike, select_top_n, slice, slice_update, slice_view_1d_contiguous,
    split_like, squeeze, stack, t, tensor_scatter_nd_update, tensor_setitem, tile, triu, triu_, unbind, unique,
    unsorted_segment_sum, unsqueeze, view)
from oneflow_compat._global.c_bindings_creation import (  # noqa: F401,E402
    arange, bernoulli, constant, empty, exponential_, eye, global_arange, global_constant, global_empty,
    global_tensor_constant, multinomial, normal, rand, randint, randn, randperm, tensor_constant, uniform_)
from oneflow_compat._global.c_bindings_nn import (  # noqa: F401,E402
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, avg_pool1d, avg_pool2d, avg_pool2d_nhwc,
    avg_pool3d, binary_cross_entropy_loss, binary_cross_entropy_with_logits_loss_grad, combined_margin_loss, conv1d,
    conv3d, deconv1d, deconv2d, deconv3d, distributed_sparse_cross_entropy, dropout1d, dropout2d, dropout3d, elu,
    group_norm, hardsigmoid, hardswish, hardtanh, kl_div_loss, layer_norm_affine, leaky_relu, logsigmoid,
    margin_ranking_loss, max_pool1d, max_pool2d, max_pool3d, mse_loss, nll_loss, normalization, pixel_shuffle,
    prelu, smooth_l1_loss, softmax_cross_entropy, softmax_cross_entropy_grad, sparse_cross_entropy,
    triplet_margin_loss, upsample, upsample_bilinear_2d, upsample_linear_1d, upsample_nearest_1d,
    upsample_nearest_2d, upsample_nearest_3d, upsample_trilinear_3d)
from oneflow_compat._global.c_bindings_fused import (  # noqa: F401,E402
    fused_bias_add_scale_mask_softmax_dropout, fused_cross_feature_interaction, fused_dot_feature_interaction,
    fused_get_boundding_boxes_coord, fused_get_center_dist, fused_get_ciou_diagonal_angle, fused_get_ciou_result,
    fused_get_convex_diagonal_squared, fused_get_intersection_area, fused_get_iou, fused_multi_head_attention_inference,
    fused_self_attention, grouped_matmul, grouped_matmul_bias)
from oneflow_compat._global.c_bindings_norm_optim import (  # noqa: F401,E402
    batch_norm_backward_elemt, batch_norm_backward_reduce, batch_norm_elemt, batch_norm_gather_stats_with_counts,
    batch_norm_stats, multi_tensor_adam_update, multi_tensor_momentum_update, multi_tensor_sgd_update,
    multi_tensor_yolov5_weight_update)
from oneflow_compat._global.c_bindings_comm import (  # noqa: F401,E402
    comm_broadcast, copy, gen_tensor_buffer, local_all_gather, local_reduce, local_reduce_scatter, recv, send,
    stream_touch, throw_error, to, to_global, to_local)
from oneflow_compat._global.c_bindings_one_embedding import (  # noqa: F401,E402
    one_embedding_adagrad_update, one_embedding_adam_update, one_embedding_embedding_gradient_shuffle,
    one_embedding_embedding_put, one_embedding_embedding_shuffle, one_embedding_ftrl_update,
    one_embedding_fused_lookup_grad, one_embedding_id_shuffle, one_embedding_lookup, one_embedding_sgd_update,
    one_embedding_unique_key_value_pair)
# the `bind_python: true` (lower-case) names, and the yaml's full signatures of sub / mul / relu / layer_norm /
# conv2d / local_all_reduce (supersets of the forms bound above, which they replace)
from oneflow_compat._global.c_bindings_yaml_forms import (  # noqa: F401,E402,F811
    broadcast_equal, conv2d, greater, greater_equal, layer_norm, local_all_reduce, logical_and, logical_not,
    logical_or, masked_fill, mul, mul_, not_equal, relu, sub, where)
# the yaml's argument names for names bound above under the functional forms' names (the old keywords stay aliases);
# gelu_with_approximate, eye_, erfinv_, swapaxes, swapdims, inv, cosine_similarity, logaddexp, roi_align, clamp_max_
# and tensor_to_tensor_buffer keep theirs:
# they are the very functions of flow / nn.functional (tests assert it), whose names are OneFlow's python ones
from oneflow_compat._global import c_bindings_yaml_names as _yaml_names  # noqa: E402
from oneflow_compat._global.c_bindings_yaml_names import (  # noqa: F401,E402,F811
    argmax, bernoulli_, fmod, tensor_buffer_to_tensor, tensordot, transpose)
for _name in ("log", "log10", "tanh", "exp", "negative", "sigmoid", "gelu", "quick_gelu", "erfinv", "acos",
              "acosh", "asin", "asinh", "atan", "atanh", "floor_", "sin_", "silu", "mish", "selu", "softsign",
              "softmax", "log_softmax", "softplus", "threshold", "celu", "hardshrink", "softshrink",
              "tril", "diag", "diagonal", "broadcast_to"):
    globals()[_name] = _yaml_names.renamed(globals()[_name], _name, input="x")
image_flip = _yaml_names.renamed(image_flip, "image_flip", images="x")
concat = _yaml_names.renamed(concat, "concat", tensors="inputs")
randint_like = _yaml_names.renamed(randint_like, "randint_like", input="x")
pin_memory = _yaml_names.renamed(pin_memory, "pin_memory", self="input")
del _name
# tensor_api.yaml (v0.9.0): the tensor constructors bound on oneflow._C too
from oneflow_compat._global.c_bindings_tensor_api import (  # noqa: F401,E402
    _legacy_tensor_ctor, assign_local_tensor, from_dlpack, from_numpy, tensor)

# bound once each, with OneFlow 0.9's signatures, checks and words (functional_api.yaml @ v0.9.0): _C.add — the
# yaml's Add / ScalarAdd (alpha, inplace), and add_n of three or more tensors or a list with add_n's checks
# (`_global/add_forms.py`); _C.normalize with the l2 kernel's axis checks (`_global/l2_normalize.py`); _C.mm and
# _C.dot (`_global/matrix_checks.py`)
from oneflow_compat._global.l2_normalize import normalize  # noqa: F401,E402
from oneflow_compat._global.add_forms import add  # noqa: F401,E402
from oneflow_compat._global.matrix_checks import dot, mm  # noqa: F401,E402
