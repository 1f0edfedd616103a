"""`oneflow._C`'s neural-network names (OneFlow v0.9.0 functional_api.yaml; functors in
`oneflow/core/functional/impl/nn_functor.cpp`, `activation_functor.cpp`): convolutions, pooling, upsampling,
losses, normalizations and activations under the yaml's argument names, order and defaults, over the registered
ops `nn.functional` uses.

`data_format` / `channel_pos` "channels_last" is served by moving the channel axis around the channels-first op
(OneFlow's channels-last weight layout for convolutions is (out, *kernel, in / groups)).
"""
import math
import numbers

from oneflow_compat._global import functional as _F
from oneflow_compat._global import inplace as _inplace
from oneflow_compat._global import loss_op_checks as _checks
from oneflow_compat._global import nn_activations as _act
from oneflow_compat._global import nn_convs as _convs
from oneflow_compat._global import nn_functional as _nnF
from oneflow_compat._global import nn_losses as _losses
from oneflow_compat._global import nn_misc as _misc
from oneflow_compat._global import nn_norms as _norms
from oneflow_compat._global import nn_pools as _pools
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import Tensor

_FORMATS = ("channels_first", "channels_last")


def _tensor(x, fn, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument '%s' must be Tensor, not %s" % (fn, arg, type(x).__name__))
    return x


def _format(fmt, fn):
    if fmt not in _FORMATS:
        raise ValueError("%s: data_format must be 'channels_first' or 'channels_last', got %r" % (fn, fmt))
    return fmt == "channels_last"


def _to_first(x):
    return _F.permute(x, 0, x.ndim - 1, *range(1, x.ndim - 1))


def _to_last(x):
    return _F.permute(x, 0, *range(2, x.ndim), 1)


def _channels_last(fn, x, *rest):
    """fn run channels-first on a channels-last x; its (first) output moved back to channels last."""
    out = fn(_to_first(x), *rest)
    if isinstance(out, tuple):
        return tuple(_to_last(o) for o in out)
    return _to_last(out)


# --- convolutions ---------------------------------------------------------------------------------------------------
def _conv(fn, name, input, weight, bias, stride, padding, dilation, groups, fmt):  # noqa: A002
    _tensor(input, name), _tensor(weight, name, "weight")
    if _format(fmt, name):
        return _channels_last(lambda x: fn(x, _to_first(weight), bias, stride, padding, dilation, groups), input)
    return fn(input, weight, bias, stride, padding, dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,  # noqa: A002
           channel_pos="channels_first"):
    return _conv(_convs.conv1d, "conv1d", input, weight, bias, stride, padding, dilation, groups, channel_pos)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,  # noqa: A002
           channel_pos="channels_first"):
    return _conv(_convs.conv3d, "conv3d", input, weight, bias, stride, padding, dilation, groups, channel_pos)


def _deconv(fn, name, input, weight, bias, stride, padding, output_padding, groups, dilation, fmt):  # noqa: A002
    _tensor(input, name), _tensor(weight, name, "weight")
    if _format(fmt, name):
        return _channels_last(lambda x: fn(x, weight, bias, stride, padding, output_padding, groups, dilation), input)
    return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)


def deconv1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,  # noqa: A002
             data_format="channels_first"):
    return _deconv(_convs.conv_transpose1d, "deconv1d", input, weight, bias, stride, padding, output_padding,
                   groups, dilation, data_format)


def deconv2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,  # noqa: A002
             data_format="channels_first"):
    return _deconv(_convs.conv_transpose2d, "deconv2d", input, weight, bias, stride, padding, output_padding,
                   groups, dilation, data_format)


def deconv3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,  # noqa: A002
             data_format="channels_first"):
    return _deconv(_convs.conv_transpose3d, "deconv3d", input, weight, bias, stride, padding, output_padding,
                   groups, dilation, data_format)


# --- pooling --------------------------------------------------------------------------------------------------------
def _max_pool(nd, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode, fmt):  # noqa: A002
    """MaxPoolND: the (y, indices) pair, as OneFlow's functor, but for 2-D channels_last without indices or dilation
    (its TF-style path): (y,)."""
    name = "max_pool%dd" % nd
    _tensor(input, name)
    run = lambda x: tuple(_pools._max_pool(nd, x, kernel_size, stride, padding, dilation, True, ceil_mode))  # noqa
    if not _format(fmt, name):
        return run(input)
    out = _channels_last(run, input)
    dil = [dilation] if isinstance(dilation, numbers.Integral) else list(dilation)
    if nd == 2 and not return_indices and all(int(d) == 1 for d in dil):
        return out[:1]  # OneFlow's channels-last 2-D path (the legacy TF max pool) gives y alone
    return out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, return_indices=True, ceil_mode=False,  # noqa
               data_format="channels_first"):
    return _max_pool(1, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode, data_format)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, return_indices=True, ceil_mode=False,  # noqa
               data_format="channels_first"):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode, data_format)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, return_indices=True, ceil_mode=False,  # noqa
               data_format="channels_first"):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, return_indices, ceil_mode, data_format)


def _avg_pool(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,  # noqa: A002
              fmt):
    name = "avg_pool%dd" % nd
    _tensor(input, name)
    div = int(divisor_override) or None  # OneFlow: 0 means the window's size
    run = lambda x: _pools._avg_pool(nd, x, kernel_size, stride, padding, ceil_mode, count_include_pad, div)  # noqa
    return _channels_last(run, input) if _format(fmt, name) else run(input)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=0, data_format="channels_first"):
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     data_format)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=0, data_format="channels_first"):
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     data_format)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=0, data_format="channels_first"):
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     data_format)


def avg_pool2d_nhwc(x, kernel_size, stride, padding, padding_before, padding_after, data_format="channels_first",
                    ceil_mode=False):
    """TFAvgPool2D (the legacy `avg_pool2d` op): padding "VALID", "SAME" or "customized" (padding_before /
    padding_after per spatial axis); the padded positions are left out of each window's mean."""
    from oneflow_compat.nn.legacy_ops import pads_for

    _tensor(x, "avg_pool2d_nhwc", "x")
    last = _format(data_format, "avg_pool2d_nhwc")
    fmt = "NHWC" if last else "NCHW"
    k, s = tuple(int(v) for v in kernel_size), tuple(int(v) for v in stride)
    if padding.upper() == "CUSTOMIZED":
        pads = tuple((int(b), int(a)) for b, a in zip(padding_before, padding_after))
    else:
        hw = tuple(x.shape[1:3]) if last else tuple(x.shape[2:4])
        pads = pads_for(padding, hw, k, s, (1, 1), fmt, "avg_pool2d_nhwc")
    return apply_op("avg_pool2d", [x], {"ksize": k, "strides": s, "pads": pads, "data_format": fmt,
                                        "ceil_mode": bool(ceil_mode)})


def adaptive_avg_pool1d(x, output_size):
    return _pools.adaptive_avg_pool1d(_tensor(x, "adaptive_avg_pool1d", "x"), output_size)


def adaptive_avg_pool2d(x, output_size):
    return _pools.adaptive_avg_pool2d(_tensor(x, "adaptive_avg_pool2d", "x"), output_size)


def adaptive_avg_pool3d(x, output_size):
    return _pools.adaptive_avg_pool3d(_tensor(x, "adaptive_avg_pool3d", "x"), output_size)


# --- upsampling (OneFlow's scales: the output is floor(size * scale) unless output_size is given) ------------------
def _upsample(name, x, scales, output_size, mode, align_corners, fmt, nd):
    _tensor(x, name, "x")
    if x.ndim != nd + 2:
        raise RuntimeError("%s: x must be %d-D (N, C, %s), got %d dims" % (name, nd + 2, "spatial axes", x.ndim))
    last = _format(fmt, name)
    if last:
        x = _to_first(x)
    sizes = tuple(x.shape[2:])
    if output_size is not None:
        out, src = tuple(int(v) for v in output_size), None
    else:
        if any(float(s) <= 0 for s in scales):
            raise RuntimeError("%s: output_size or positive scale factors are needed" % name)
        out = tuple(int(math.floor(n * float(s))) for n, s in zip(sizes, scales))
        src = tuple(float(s) for s in scales)
    y = apply_op("upsample", [x], {"output_size": out, "mode": mode, "align_corners": bool(align_corners),
                                   "scales": src, "half_pixel": False})
    return _to_last(y) if last else y


def upsample(x, height_scale, width_scale, align_corners, interpolation, data_format="channels_first"):
    """Upsample: 2-D, interpolation "nearest" or "bilinear"."""
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("upsample: interpolation must be 'nearest' or 'bilinear', got %r" % (interpolation,))
    mode = "nearest" if interpolation == "nearest" else "linear"
    return _upsample("upsample", x, (height_scale, width_scale), None, mode,
                     align_corners and mode == "linear", data_format, 2)


def upsample_linear_1d(x, scale_factor=0.0, align_corners=False, output_size=None, data_format="channels_first"):
    return _upsample("upsample_linear_1d", x, (scale_factor,), output_size, "linear", align_corners, data_format, 1)


def upsample_nearest_1d(x, scale_factor=0.0, output_size=None, data_format="channels_first"):
    return _upsample("upsample_nearest_1d", x, (scale_factor,), output_size, "nearest", False, data_format, 1)


def upsample_nearest_2d(x, height_scale=0.0, width_scale=0.0, output_size=None, data_format="channels_first"):
    return _upsample("upsample_nearest_2d", x, (height_scale, width_scale), output_size, "nearest", False,
                     data_format, 2)


def upsample_bilinear_2d(x, height_scale=0.0, width_scale=0.0, align_corners=False, output_size=None,
                         data_format="channels_first"):
    return _upsample("upsample_bilinear_2d", x, (height_scale, width_scale), output_size, "linear", align_corners,
                     data_format, 2)


def upsample_nearest_3d(x, depth_scale=0.0, height_scale=0.0, width_scale=0.0, output_size=None,
                        data_format="channels_first"):
    return _upsample("upsample_nearest_3d", x, (depth_scale, height_scale, width_scale), output_size, "nearest",
                     False, data_format, 3)


def upsample_trilinear_3d(x, depth_scale=0.0, height_scale=0.0, width_scale=0.0, align_corners=False,
                          output_size=None, data_format="channels_first"):
    return _upsample("upsample_trilinear_3d", x, (depth_scale, height_scale, width_scale), output_size, "linear",
                     align_corners, data_format, 3)


# --- losses ---------------------------------------------------------------------------------------------------------
def mse_loss(input, target, reduction="mean"):  # noqa: A002
    return _F.mse_loss(_tensor(input, "mse_loss"), target, reduction=reduction)


def kl_div_loss(input, target, log_target=False, reduction="mean"):  # noqa: A002
    return _losses.kl_div(_tensor(input, "kl_div_loss"), target, reduction=reduction, log_target=log_target)


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):  # noqa: A002
    return _losses.nll_loss(_tensor(input, "nll_loss"), target, weight=weight, ignore_index=ignore_index,
                            reduction=reduction)


def binary_cross_entropy_loss(input, target, weight=None, reduction="mean"):  # noqa: A002
    return _losses.binary_cross_entropy(_tensor(input, "binary_cross_entropy_loss"), target, weight=weight,
                                        reduction=reduction)


def binary_cross_entropy_with_logits_loss_grad(dy, input, target, weight=None, pos_weight=None):  # noqa: A002
    """The gradient of the unreduced binary cross entropy with logits at `input`: dy * w * (sigmoid(x) - t), with
    pos_weight pw: dy * w * ((pw * t + 1 - t) * sigmoid(x) - pw * t)."""
    _tensor(input, "binary_cross_entropy_with_logits_loss_grad")
    s = _F.sigmoid(input)
    if pos_weight is None:
        g = _F.sub(s, target)
    else:
        pt = _F.mul(pos_weight, target)
        g = _F.sub(_F.mul(_F.add(pt, _F.sub(1.0, target)), s), pt)
    if weight is not None:
        g = _F.mul(g, weight)
    return _F.mul(dy, g)


def sparse_cross_entropy(prediction, label, depth):
    """SparseCrossEntropy: -log(prediction[label]) per row (prediction holds probabilities)."""
    _tensor(prediction, "sparse_cross_entropy", "prediction")
    _checks.sparse_cross_entropy(prediction, _tensor(label, "sparse_cross_entropy", "label"))
    return apply_op("sparse_cross_entropy", [prediction, label], {"depth": int(depth)})


def distributed_sparse_cross_entropy(prediction, label, depth):
    """SparseCrossEntropyMs: the model-parallel form (prediction split on its class axis); the numbers are
    SparseCrossEntropy's, the op's SBP signatures serve the split."""
    _tensor(prediction, "distributed_sparse_cross_entropy", "prediction")
    _checks.sparse_cross_entropy(prediction, _tensor(label, "distributed_sparse_cross_entropy", "label"))
    return apply_op("sparse_cross_entropy", [prediction, label], {"depth": int(depth)})


def softmax_cross_entropy(logits, label):
    """SoftmaxCrossEntropy: -sum(label * log_softmax(logits)) over the last axis."""
    _checks.softmax_cross_entropy(_tensor(logits, "softmax_cross_entropy", "logits"),
                                  _tensor(label, "softmax_cross_entropy", "label"))
    return apply_op("softmax_cross_entropy", [logits, label])


def softmax_cross_entropy_grad(dy, label, prob):
    """SoftmaxCrossEntropyGrad: dy * (prob - label)."""
    _checks.softmax_cross_entropy_grad(_tensor(dy, "softmax_cross_entropy_grad", "dy"),
                                       _tensor(label, "softmax_cross_entropy_grad", "label"),
                                       _tensor(prob, "softmax_cross_entropy_grad", "prob"))
    return apply_op("softmax_cross_entropy_grad", [dy, prob, label])


def smooth_l1_loss(logits, label, beta, reduction):
    return _losses.smooth_l1_loss(_tensor(logits, "smooth_l1_loss", "logits"), label, reduction=reduction,
                                  beta=beta)


def combined_margin_loss(x, label, m1, m2, m3):
    return _losses.combined_margin_loss(_tensor(x, "combined_margin_loss", "x"), label, m1, m2, m3)


def triplet_margin_loss(anchor, positive, negative, *, margin, p, eps, swap, reduction):
    return _losses.triplet_margin_loss(anchor, positive, negative, margin=margin, p=p, eps=eps, swap=swap,
                                       reduction=reduction)


def margin_ranking_loss(input_1, input_2, target, margin, reduction):
    return _losses.margin_ranking_loss(input_1, input_2, target, margin=margin, reduction=reduction)


# --- normalizations -------------------------------------------------------------------------------------------------
def normalization(x, moving_mean=None, moving_variance=None, gamma=None, beta=None, axis=1, epsilon=1e-5,
                  momentum=0.9, is_training=False):
    """Normalization (batch norm). `momentum` is torch's (the functor hands the op 1 - momentum): the running
    statistics become (1 - momentum) * running + momentum * batch."""
    _tensor(x, "normalization", "x")
    return _norms.batch_norm(x, moving_mean, moving_variance, gamma, beta, training=is_training,
                             momentum=momentum, eps=epsilon, axis=axis)


def layer_norm_affine(x, gamma, beta, begin_norm_axis, begin_params_axis, epsilon):
    """LayerNormAffine: normalized over the axes from begin_norm_axis on, then gamma * y + beta with the
    parameters shaped as x's axes from begin_params_axis on."""
    _tensor(x, "layer_norm_affine", "x")
    bn, bp = int(begin_norm_axis) % x.ndim, int(begin_params_axis) % x.ndim
    if bn == bp:
        return _norms.layer_norm(x, tuple(x.shape[bn:]), gamma, beta, epsilon)
    y = _norms.layer_norm(x, tuple(x.shape[bn:]), None, None, epsilon)
    return _F.add(_F.mul(y, gamma), beta)


def group_norm(x, gamma=None, beta=None, affine=False, num_groups=1, epsilon=1e-5, data_format="channels_first",
               activation="none"):
    """GroupNorm (gamma / beta used when `affine`), then "none" or "silu"."""
    _tensor(x, "group_norm", "x")
    if activation not in ("none", "silu"):
        raise ValueError("group_norm: activation must be 'none' or 'silu', got %r" % (activation,))
    last = _format(data_format, "group_norm")
    if last:
        x = _to_first(x)
    y = _norms.group_norm(x, int(num_groups), gamma if affine else None, beta if affine else None, epsilon)
    if activation == "silu":
        y = _nnF.silu(y)
    return _to_last(y) if last else y


# --- activations and dropouts ---------------------------------------------------------------------------------------
def hardtanh(x, min_val, max_val):
    return _act.hardtanh(_tensor(x, "hardtanh", "x"), min_val, max_val)


def elu(x, alpha):
    return _act.elu(_tensor(x, "elu", "x"), alpha)


def hardsigmoid(input, inplace=False):  # noqa: A002
    return _act.hardsigmoid(_tensor(input, "hardsigmoid"), inplace=inplace)


def hardswish(x):
    return _act.hardswish(_tensor(x, "hardswish", "x"))


def leaky_relu(x, alpha, inplace=False):
    out = _F.leaky_relu(_tensor(x, "leaky_relu", "x"), alpha)
    return _inplace.rebind(x, out) if inplace else out


def logsigmoid(x):
    return _act.logsigmoid(_tensor(x, "logsigmoid", "x"))


def prelu(x, alpha):
    return _act.prelu(_tensor(x, "prelu", "x"), alpha)


def dropout1d(input, p=0.5, training=True):  # noqa: A002
    return _misc.dropout1d(_tensor(input, "dropout1d"), p, training)


def dropout2d(input, p=0.5, training=True):  # noqa: A002
    return _misc.dropout2d(_tensor(input, "dropout2d"), p, training)


def dropout3d(input, p=0.5, training=True):  # noqa: A002
    return _misc.dropout3d(_tensor(input, "dropout3d"), p, training)


def pixel_shuffle(input, h_upscale_factor, w_upscale_factor):  # noqa: A002
    if not isinstance(h_upscale_factor, numbers.Integral) or not isinstance(w_upscale_factor, numbers.Integral):
        raise TypeError("pixel_shuffle: the upscale factors must be ints")
    return _misc.pixel_shuffle(_tensor(input, "pixel_shuffle"), h_upscale_factor, w_upscale_factor)
