"""The legacy `flow.nn.*` functions: activations, convolution, pooling, dropout and losses on job-function blobs
(`oneflow_compat/nn/__init__.py` binds them as `flow.nn.*`)."""
from oneflow_compat import distribute as _dist
from oneflow_compat import math as _math
from oneflow_compat.ir import builder
from oneflow_compat.kernels import nn as nn_k
from oneflow_compat.ops.registry import apply

relu = _math.relu
sigmoid = _math.sigmoid
tanh = _math.tanh
softmax = _math.softmax
leaky_relu = _math.leaky_relu


def bias_add(value, bias, data_format=None, name=None):
    # OneFlow v0.3.4/v0.4.0 ops/nn_ops.py `bias_add`: no data_format is axis 1 (the channels of NC... data, the
    # features of 2-D data), "NC..." axis 1, "N...C" the last axis (nn ops family: None was the last axis here)
    nd = len(value.shape)
    if data_format is None or data_format.startswith("NC") or data_format == "channels_first":
        axis = 1 if nd > 1 else 0
    elif (data_format.startswith("N") and data_format.endswith("C")) or data_format == "channels_last":
        axis = nd - 1
    else:
        raise ValueError("data_format must be of the form `N...C` or `NC...`")
    return apply("bias_add", [value, bias], {"axis": axis}, name=name)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    if not (labels is not None and logits is not None):
        raise AssertionError("labels and logits are required")
    if len(labels.shape) == len(logits.shape):
        if not (labels.shape[-1] == 1):
            raise AssertionError("labels of shape %s do not fit logits of shape %s" % (labels.shape, logits.shape))
        labels = apply("reshape", [labels], {"shape": tuple(labels.shape[:-1])})
    if tuple(labels.shape) != tuple(logits.shape[:-1]):
        raise ValueError("sparse_softmax_cross_entropy_with_logits: labels shape %s must be logits shape %s without "
                         "its last axis" % (labels.shape, logits.shape))
    if labels.dtype.np.kind not in "iu":
        raise TypeError("sparse_softmax_cross_entropy_with_logits: labels must be int32/int64, got %s" % labels.dtype.name)
    if logits.distribute is _dist.split(len(logits.shape) - 1):
        # logits split along the classes (a model-parallel dense layer's output, read with_distribute(split(-1))):
        # OneFlow's sparse_softmax_cross_entropy_ms (nn ops family, nn/legacy_losses.py)
        from oneflow_compat.nn import legacy_losses

        if name is None:
            name = builder.current("flow.nn.sparse_softmax_cross_entropy_with_logits").job.unique_name(
                "SparseSoftmaxCrossEntropyMs_")
        return legacy_losses.sparse_softmax_cross_entropy_ms(labels, logits, name)
    loss, _ = apply("sparse_softmax_cross_entropy", [logits, labels], name=name)
    return loss


def _pair(v, what, n=2):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError("{} should be of length 1 or {} but was {}".format(what, n, len(v)))
    return v


def _spatial(x, data_format):
    return tuple(x.shape[2:4]) if data_format.startswith("NC") else tuple(x.shape[1:3])


def pads_for(padding, in_hw, k_hw, strides, dilations, data_format, what):
    """Explicit ((top, bottom), (left, right)) from 'VALID' / 'SAME' (= SAME_LOWER) / 'SAME_UPPER' / a list."""
    if isinstance(padding, str):
        p = padding.upper()
        if p == "VALID":
            return ((0, 0), (0, 0))
        if p not in ("SAME", "SAME_LOWER", "SAME_UPPER"):
            raise ValueError("%s: padding must be 'VALID', 'SAME', 'SAME_LOWER', 'SAME_UPPER' or explicit pairs, "
                             "got %r" % (what, padding))
        return nn_k.same_pads(in_hw, k_hw, strides, dilations, lower=p != "SAME_UPPER")
    pads = [tuple(int(v) for v in pr) for pr in padding]
    if len(pads) == 4:
        pads = pads[2:] if data_format.startswith("NC") else pads[1:3]
    if len(pads) != 2 or any(len(pr) != 2 for pr in pads):
        raise ValueError("%s: explicit padding must be per-dimension pairs, got %r" % (what, padding))
    return tuple(pads)


def conv2d(input, filters, strides, padding, data_format="NCHW", dilations=None, groups=1, name=None):  # noqa: A002
    data_format = _norm_format(data_format)
    strides = _pair(strides, "strides")
    dilations = _pair(dilations if dilations is not None else 1, "dilations")
    k_hw = tuple(filters.shape[2:4]) if data_format == "NCHW" else tuple(filters.shape[1:3])
    pads = pads_for(padding, _spatial(input, data_format), k_hw, strides, dilations, data_format, "conv2d")
    return apply("conv2d", [input, filters], {"strides": strides, "pads": pads, "dilations": dilations,
                                              "groups": int(groups), "data_format": data_format}, name=name)


def compat_conv2d(input, filters, strides, padding, data_format="NCHW", dilations=None, groups=1,  # noqa: A002
                  name=None):
    """`conv2d` with TensorFlow's "SAME": the odd padding cell goes after (bottom/right), i.e. "SAME_UPPER"
    (v0.3.4/v0.4.0 ops/nn_ops.py `tf_conv2d`, exported as nn.compat_conv2d); `conv2d`'s "SAME" is SAME_LOWER."""
    if isinstance(padding, str) and padding.upper() == "SAME":
        padding = "SAME_UPPER"
    return conv2d(input, filters, strides, padding, data_format, dilations, groups, name)


def _norm_format(f):
    if f in ("NCHW", "channels_first"):
        return "NCHW"
    if f in ("NHWC", "channels_last"):
        return "NHWC"
    raise ValueError("data_format must be 'NCHW' or 'NHWC', got %r" % (f,))


def _pool(op_type, input, ksize, strides, padding, data_format, ceil_mode, name):  # noqa: A002
    data_format = _norm_format(data_format)
    ksize = _pair(ksize, "ksize")
    strides = _pair(strides, "strides")
    pads = pads_for(padding, _spatial(input, data_format), ksize, strides, (1, 1), data_format, op_type)
    return apply(op_type, [input], {"ksize": ksize, "strides": strides, "pads": pads, "data_format": data_format,
                                    "ceil_mode": bool(ceil_mode)}, name=name)


def max_pool2d(input, ksize, strides, padding, data_format="NCHW", ceil_mode=False, name=None):  # noqa: A002
    return _pool("max_pool2d", input, ksize, strides, padding, data_format, ceil_mode, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NCHW", ceil_mode=False, name=None):  # noqa: A002
    return _pool("avg_pool2d", input, ksize, strides, padding, data_format, ceil_mode, name)


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    # The order of checks is OneFlow's (v0.3.4/v0.4.0 ops/nn_ops.py `dropout`, then `random_mask_like`): an
    # untrainable job or rate 0 returns x before `seed` and `noise_shape` are looked at.
    if not (rate is not None and 0 <= rate < 1):
        raise AssertionError("rate must be in [0, 1), got %r" % (rate,))
    ctx = builder.current("flow.nn.dropout")
    if not ctx.job.is_train or rate == 0:
        return x
    if seed is not None:
        if name is None:
            raise AssertionError("dropout with a seed requires a name")
    if noise_shape is not None:
        raise AssertionError("noise_shape will be supported later.")
    if name is None:
        name = ctx.job.unique_name("Dropout")
    out = apply("dropout", [x], {"rate": float(rate), "seed": seed}, name=name)
    return out[0] if isinstance(out, list) else out  # (y, mask): the mask only feeds the gradient


def softmax_cross_entropy_with_logits(labels, logits, name=None):
    return apply("softmax_cross_entropy", [logits, labels], name=name)


def sigmoid_cross_entropy_with_logits(labels, logits, name=None):
    return apply("sigmoid_cross_entropy", [logits, labels], name=name)
