"""`flow.nn.functional` names built on the functional ops (the modules helper re-exports this module from
`flow.nn`, adding its own layers' functions such as dropout)."""
from oneflow_compat._global.functional import (  # noqa: F401
    l1_loss, leaky_relu, linear, log_softmax, mse_loss, one_hot, relu, sigmoid, softmax, tanh)
from oneflow_compat._global.dropout import dropout  # noqa: F401,E402
# nn ops family: activations
from oneflow_compat._global.nn_activations import (  # noqa: F401,E402
    elu, gelu, hardsigmoid, hardswish, hardtanh, logsigmoid, mish, prelu, relu6, silu, softplus)
# nn ops family: losses
from oneflow_compat._global.nn_losses import (  # noqa: F401,E402
    IGNORE_INDEX, binary_cross_entropy, binary_cross_entropy_with_logits, combined_margin_loss, cross_entropy,
    kl_div, margin_ranking_loss, nll_loss, smooth_l1_loss, triplet_margin_loss)
# nn ops family: normalization
from oneflow_compat._global.nn_norms import batch_norm, group_norm, instance_norm, layer_norm  # noqa: F401,E402
# nn ops family: convolutions
from oneflow_compat._global.nn_convs import (  # noqa: F401,E402
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d)
# nn ops family: pooling
from oneflow_compat._global.nn_pools import (  # noqa: F401,E402
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d,
    max_pool2d, max_pool3d)
# ctc helper: adaptive max pooling, max unpooling, the CTC greedy decoder
from oneflow_compat._global.nn_pool_indices import (  # noqa: F401,E402
    adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d, max_unpool1d, max_unpool2d, max_unpool3d)
from oneflow_compat._global.nn_ctc import ctc_greedy_decoder  # noqa: F401,E402
# nn ops family: embedding, pixel shuffle, interpolation, padding, channel dropout
from oneflow_compat._global.nn_misc import (  # noqa: F401,E402
    dropout1d, dropout2d, dropout3d, embedding, interpolate, pad, pixel_shuffle)
# issue 21 (global helper): normalize, grid sampling
from oneflow_compat._global.tensor_functions import normalize  # noqa: F401,E402
from oneflow_compat._global.nn_sampling import affine_grid, grid_sample  # noqa: F401,E402


def relu(input, inplace=False):  # noqa: A002,F811
    """OneFlow 0.9's `F.relu(input, inplace=False)` (flowvision's DenseNet passes inplace=True)."""
    from oneflow_compat._global import functional, nn_activations

    return nn_activations._maybe_inplace(input, functional.relu(input), inplace)
# nnextra helper (issue 21): further activations
from oneflow_compat._global.nn_activations_extra import (  # noqa: F401,E402
    celu, glu, hardshrink, quick_gelu, selu, softshrink, softsign, threshold)
from oneflow_compat._global.nn_fold import fold, unfold  # noqa: F401,E402
# api-nn: recurrent cells' and distances' functional forms, gumbel softmax, TensorFlow-style sparse softmax cross
# entropy, upsample (OneFlow 0.9 binds nn.Upsample here), deformable convolution
from oneflow_compat._global.nn_functional_extra import (  # noqa: F401,E402
    cosine_similarity, gumbel_softmax, pairwise_distance, sparse_softmax_cross_entropy, upsample)
from oneflow_compat._global.nn_deform_conv import deform_conv2d  # noqa: F401,E402
