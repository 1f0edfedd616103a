"""The legacy convolutions and pools of OneFlow v0.3.4/v0.4.0 beside the 2-D ones: `flow.nn.conv1d`, `flow.nn.conv3d`,
`flow.nn.conv2d_transpose`, `flow.nn.torch_conv2d_transpose` (ops/nn_ops.py) and `flow.layers.conv1d`,
`flow.layers.conv3d` (ops/layers.py), `flow.nn.max_pool1d/3d`, `avg_pool1d/3d`, with OneFlow's argument checks,
padding rules and variable names.

Padding: "VALID", "SAME" (= "SAME_LOWER": the odd cell before), "SAME_UPPER", or one entry per axis of the input
(ints or (before, after) pairs, zeros on the batch and channel axes), as OneFlow's `calc_conv_padding`. OneFlow
padded with a separate pad op where cuDNN could not take the pads; the numbers are those of explicit pads, which
the ops here take directly.
"""
from oneflow_compat import initializer as init
from oneflow_compat import scope
from oneflow_compat._api import array_api, ops_api
from oneflow_compat.ir import builder
from oneflow_compat.nn.legacy_ops import bias_add
from oneflow_compat.ops import variable_ops
from oneflow_compat.ops.registry import apply


def _seq(value, n, what):
    """OneFlow's strides / dilations: an int, or a list of length n (ValueError otherwise)."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise AssertionError("%s length must be %d when passed as a list." % (what, n))
        return tuple(int(v) for v in value)
    if isinstance(value, int):
        return (value,) * n
    raise ValueError("%s must be an int or a list." % what)


def _same(size, k, d, s, lower):
    """OneFlow's calc_same_padding: out = ceil(size / s), the needed padding split small/large."""
    out = (size + s - 1) // s
    need = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
    small, large = need // 2, need - need // 2
    return (large, small) if lower else (small, large)


def nd_pads(padding, spatial, ks, dilations, strides, first, what):
    """Explicit (before, after) pads per spatial axis from OneFlow's padding argument."""
    nd = len(spatial)
    if isinstance(padding, str):
        p = padding.upper()
        if p == "SAME":
            p = "SAME_LOWER"
        if p not in ("VALID", "SAME_LOWER", "SAME_UPPER"):
            raise AssertionError("%s: padding must be 'VALID', 'SAME', 'SAME_LOWER' or 'SAME_UPPER', got %r"
                                 % (what, padding))
        if p == "VALID":
            return ((0, 0),) * nd
        return tuple(_same(n, k, d, s, p == "SAME_LOWER") for n, k, d, s in zip(spatial, ks, dilations, strides))
    if not isinstance(padding, (list, tuple)):
        raise ValueError("padding must be str or a list.")
    if len(padding) != nd + 2:
        raise AssertionError("%s: padding must have %d entries (one per axis of the input), got %d"
                             % (what, nd + 2, len(padding)))
    offset = 2 if first else 1
    pads = []
    for i, pad in enumerate(padding):
        if isinstance(pad, int):
            pad = (pad, pad)
        elif isinstance(pad, (list, tuple)):
            if len(pad) != 2:
                raise AssertionError("%s: padding entry %r is not a pair" % (what, pad))
            pad = (int(pad[0]), int(pad[1]))
        else:
            raise ValueError("padding must be list tuple or int")
        if offset <= i < offset + nd:
            pads.append(pad)
        elif pad != (0, 0):
            raise AssertionError("%s: padding of the batch and channel axes must be 0, got %r" % (what, padding))
    return tuple(pads)


def _conv(op_type, input, filters, strides, padding, data_format, dilations, groups, name, nd, formats,
          default_name):
    fmt = data_format.upper()
    if fmt not in formats:
        raise ValueError("data_format must be \"%s\" or \"%s\"." % formats)
    if len(input.shape) != nd + 2 or len(filters.shape) != nd + 2:
        raise AssertionError("%s: input %s and filters %s must have %d axes" % (op_type, input.shape, filters.shape,
                                                                               nd + 2))
    strides = _seq(strides, nd, "strides")
    dilations = _seq(dilations if dilations is not None else 1, nd, "dilations")
    first = fmt == formats[0]
    ks = tuple(filters.shape[2:]) if first else tuple(filters.shape[1:-1])
    if not (isinstance(groups, int) and groups > 0):
        raise AssertionError("%s: groups must be a positive int, got %r" % (op_type, groups))
    if groups > 1:
        if not first:
            raise ValueError("data_format %s not support groups > 1" % formats[1])
        c = input.shape[1]
        if not (groups <= filters.shape[0] and filters.shape[0] % groups == 0 and groups <= c and c % groups == 0
                and filters.shape[1] == c // groups):
            raise AssertionError("%s: groups=%d does not fit input channels %d and filters %s" % (
                op_type, groups, c, filters.shape))
    spatial = tuple(input.shape[2:]) if first else tuple(input.shape[1:-1])
    pads = nd_pads(padding, spatial, ks, dilations, strides, first, op_type)
    if name is None:
        name = builder.current("flow.nn." + op_type).job.unique_name(default_name)
    return apply(op_type, [input, filters], {"strides": strides, "pads": pads, "dilations": dilations,
                                             "groups": int(groups), "data_format": fmt}, name=name)


def conv1d(input, filters, strides, padding, data_format="NCW", dilations=None, groups=1, name=None):  # noqa: A002
    return _conv("conv1d", input, filters, strides, padding, data_format, dilations, groups, name, 1,
                 ("NCW", "NWC"), "Conv1d_")


def conv3d(input, filters, strides, padding, data_format="NCDHW", dilations=None, groups=1,  # noqa: A002
           name=None):
    """NDHWC is computed channels first, as OneFlow did (input and filters transposed, the output transposed
    back)."""
    if data_format.upper() == "NDHWC":
        input = array_api.transpose(input, perm=[0, 4, 1, 2, 3])  # noqa: A001
        filters = array_api.transpose(filters, perm=[0, 4, 1, 2, 3])
        if isinstance(padding, (list, tuple)):
            padding = list(padding)
            padding[1], padding[4] = padding[4], padding[1]
        out = _conv("conv3d", input, filters, strides, padding, "NCDHW", dilations, groups, name, 3,
                    ("NCDHW", "NDHWC"), "Conv3d_")
        return array_api.transpose(out, perm=[0, 2, 3, 4, 1])
    return _conv("conv3d", input, filters, strides, padding, data_format, dilations, groups, name, 3,
                 ("NCDHW", "NDHWC"), "Conv3d_")


def _deconv2d_op(input, filters, out_spatial, strides, pads, dilations, fmt, name):
    first = fmt == "NCHW"
    channels = filters.shape[1] if first else filters.shape[3]
    n = input.shape[0]
    out_shape = (n, channels) + tuple(out_spatial) if first else (n,) + tuple(out_spatial) + (channels,)
    if name is None:
        name = builder.current("flow.nn.conv2d_transpose").job.unique_name("Deconv2d_")
    return apply("deconv2d", [input, filters], {"strides": strides, "pads": tuple(pads), "dilations": dilations,
                                                "groups": 1, "data_format": fmt, "output_shape": out_shape},
                 name=name)


def _one_of(a, b, what):
    if (a is not None) == (b is not None):
        raise AssertionError("only one of `%s` and `%s` could be not None" % what)
    return a if a is not None else b


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="VALID",  # noqa: A002
                     data_format="NCHW", name=None, input=None, filters=None, dilations=None):  # noqa: A002
    """The transpose of conv2d to `output_shape` (padding "VALID" or "SAME"; OneFlow's output padding and its
    odd-SAME cropping)."""
    filters = _one_of(filter, filters, ("filter", "filters"))
    input = _one_of(value, input, ("input", "value"))  # noqa: A001
    if len(input.shape) != 4 or len(filters.shape) != 4 or len(output_shape) != 4:
        raise AssertionError("conv2d_transpose: input, filters and output_shape must have 4 axes")
    if output_shape[0] != input.shape[0]:
        raise AssertionError("conv2d_transpose: output_shape[0] must be the batch size %d" % input.shape[0])
    dilations = _seq(dilations if dilations is not None else 1, 2, "dilations")
    fmt = data_format.upper()
    if fmt == "NCHW":
        in_hw, ks, channels = tuple(input.shape[2:]), tuple(filters.shape[2:4]), filters.shape[1]
        if output_shape[1] != channels:
            raise AssertionError("conv2d_transpose: output_shape[1] must be the filters' %d channels" % channels)
        out_hw = tuple(output_shape[2:4])
    elif fmt == "NHWC":
        in_hw, ks, channels = tuple(input.shape[1:3]), tuple(filters.shape[1:3]), filters.shape[3]
        if output_shape[3] != channels:
            raise AssertionError("conv2d_transpose: output_shape[3] must be the filters' %d channels" % channels)
        out_hw = tuple(output_shape[1:3])
        if dilations != (1, 1):
            raise AssertionError("dialtions must be 1 when data format is NHWC ")
    else:
        raise ValueError('data_format must be "NHWC" or "NCHW".')
    strides = _seq(strides, 2, "strides")
    pads = []
    if padding.upper() == "VALID":
        for i in range(2):
            eff = (ks[i] - 1) * dilations[i] + 1
            if (out_hw[i] + strides[i] - eff) // strides[i] != in_hw[i]:
                raise AssertionError("conv2d_transpose: output size %d does not fit input size %d (VALID)"
                                     % (out_hw[i], in_hw[i]))
            pads.append((0, 0))
    elif padding.upper() == "SAME":
        for i in range(2):
            if (out_hw[i] + strides[i] - 1) // strides[i] != in_hw[i]:
                raise AssertionError("conv2d_transpose: output size %d does not fit input size %d (SAME)"
                                     % (out_hw[i], in_hw[i]))
            eff = (ks[i] - 1) * dilations[i] + 1
            need = max(0, (in_hw[i] - 1) * strides[i] + eff - out_hw[i])
            pads.append((need // 2, need - need // 2))
        if any(b != a for b, a in pads) and fmt != "NCHW":
            raise AssertionError("conv2d_transpose: odd SAME padding needs NCHW")
    else:
        raise ValueError('padding must be "SAME" or "VALID".')
    return _deconv2d_op(input, filters, out_hw, strides, pads, dilations, fmt, name)


def torch_conv2d_transpose(value=None, filter=None, output_padding=None, strides=None,  # noqa: A002
                           padding_needed=None, data_format="NCHW", name=None, input=None, filters=None,  # noqa: A002
                           dilations=None):
    """v0.4.0's PyTorch-style transpose: `padding_needed` (even, split in halves) and `output_padding`."""
    filters = _one_of(filter, filters, ("filter", "filters"))
    input = _one_of(value, input, ("input", "value"))  # noqa: A001
    dilations = _seq(dilations if dilations is not None else 1, 2, "dilations")
    fmt = data_format.upper()
    if fmt not in ("NCHW", "NHWC"):
        raise ValueError('data_format must be "NHWC" or "NCHW".')
    first = fmt == "NCHW"
    in_hw = tuple(input.shape[2:]) if first else tuple(input.shape[1:3])
    ks = tuple(filters.shape[2:4]) if first else tuple(filters.shape[1:3])
    strides = _seq(strides, 2, "strides")
    if padding_needed is None or len(padding_needed) != 2:
        raise AssertionError("torch_conv2d_transpose: padding_needed must have 2 entries")
    if any(p % 2 for p in padding_needed):
        raise AssertionError("torch_conv2d_transpose: padding_needed must be even")
    output_padding = tuple(output_padding) if output_padding is not None else (0, 0)
    pads = [(p // 2, p // 2) for p in padding_needed]
    out_hw = tuple((n - 1) * s - b - a + (k - 1) * d + 1 + op for n, s, (b, a), k, d, op in
                   zip(in_hw, strides, pads, ks, dilations, output_padding))
    return _deconv2d_op(input, filters, out_hw, strides, pads, dilations, fmt, name)


# --- flow.layers ----------------------------------------------------------------------------------------------
def _layer(conv, inputs, filters, kernel_size, strides, padding, data_format, dilation_rate, groups, activation,
           use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, trainable, name,
           weight_name, bias_name, weight_shape):
    if kernel_initializer is None:
        kernel_initializer = init.xavier_uniform_initializer(data_format=data_format)
    builder.current("flow.layers." + conv.__name__)
    if weight_name is None:
        with scope.namespace(name):
            weight = ops_api.get_variable("weight", shape=weight_shape, dtype=inputs.dtype,
                                          initializer=kernel_initializer, regularizer=kernel_regularizer,
                                          trainable=trainable, model_name="weight", reuse=False)
    else:
        weight = variable_ops.get_variable(weight_name, weight_shape, inputs.dtype, kernel_initializer,
                                           kernel_regularizer, trainable, "weight", reuse=False)
    output = conv(inputs, weight, strides, padding, data_format, dilation_rate, groups=groups, name=name)
    if use_bias:
        if bias_initializer is None:
            bias_initializer = init.constant_initializer(0)
        if bias_name is None:
            with scope.namespace(name):
                bias = ops_api.get_variable("bias", shape=(filters,), dtype=inputs.dtype, initializer=bias_initializer,
                                            regularizer=bias_regularizer, trainable=trainable, model_name="bias",
                                            reuse=False)
        else:
            bias = variable_ops.get_variable(bias_name, (filters,), inputs.dtype, bias_initializer, bias_regularizer,
                                             trainable, "bias", reuse=False)
        output = bias_add(output, bias, data_format, name="%s-bias_add" % name)
    if callable(activation):
        output = activation(output, name="%s-activation" % name)
    return output


def _kernel_size(kernel_size, n):
    if isinstance(kernel_size, int):
        return (kernel_size,) * n
    if not (isinstance(kernel_size, (list, tuple)) and len(kernel_size) == n):
        raise AssertionError("kernel_size must be an int or a list of %d ints, got %r" % (n, kernel_size))
    return tuple(kernel_size)


def _check_groups(groups, filters):
    if not (isinstance(groups, int) and 0 < groups <= filters and filters % groups == 0):
        raise AssertionError("groups (%r) must be a positive int dividing filters (%d)" % (groups, filters))


def layers_conv1d(inputs, filters, kernel_size=1, strides=1, padding="VALID", data_format="NCW", dilation_rate=None,
                  groups=1, activation=None, use_bias=True, kernel_initializer=None, bias_initializer=None,
                  kernel_regularizer=None, bias_regularizer=None, trainable=True, name="Conv1d", weight_name=None,
                  bias_name=None):
    """A 1-D convolution layer: `<name>-weight` (filters, C/groups, k) NCW or (filters, k, C) NWC, `<name>-bias`."""
    kernel_size = _kernel_size(kernel_size, 1)
    _check_groups(groups, filters)
    if data_format.upper() == "NCW":
        c = inputs.shape[1]
        if not (groups <= c and c % groups == 0):
            raise AssertionError("groups (%d) must divide the input channels (%d)" % (groups, c))
        weight_shape = (filters, c // groups) + kernel_size
    elif data_format.upper() == "NWC":
        if groups != 1:
            raise AssertionError("NWC conv1d supports groups == 1 only")
        weight_shape = (filters, kernel_size[0], inputs.shape[2])
    else:
        raise ValueError("data_format must be in NCW or NWC")
    return _layer(conv1d, inputs, filters, kernel_size, strides, padding, data_format, dilation_rate, groups,
                  activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                  trainable, name, weight_name, bias_name, weight_shape)


def layers_conv3d(inputs, filters, kernel_size=1, strides=1, padding="VALID", data_format="NCDHW",
                  dilation_rate=None, groups=1, activation=None, use_bias=True, kernel_initializer=None,
                  bias_initializer=None, kernel_regularizer=None, bias_regularizer=None, trainable=True,
                  name="Conv3d", weight_name=None, bias_name=None):
    """A 3-D convolution layer: `<name>-weight` (filters, C/groups, kd, kh, kw) (NDHWC inputs are transposed to
    NCDHW and the output back, the weight staying channels first, as OneFlow did), `<name>-bias`."""
    need_transpose = data_format.upper() == "NDHWC"
    if need_transpose:
        inputs = array_api.transpose(inputs, perm=[0, 4, 1, 2, 3])
        data_format = "NCDHW"
        if isinstance(padding, (list, tuple)):
            padding = list(padding)
            padding[1], padding[4] = padding[4], padding[1]
    kernel_size = _kernel_size(kernel_size, 3)
    _check_groups(groups, filters)
    if data_format.upper() != "NCDHW":
        raise ValueError("data_format must be in NCHW or NHWC")
    c = inputs.shape[1]
    if not (groups <= c and c % groups == 0):
        raise AssertionError("groups (%d) must divide the input channels (%d)" % (groups, c))
    weight_shape = (filters, c // groups) + kernel_size
    output = _layer(conv3d, inputs, filters, kernel_size, strides, padding, data_format, dilation_rate, groups,
                    activation, use_bias, kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                    trainable, name, weight_name, bias_name, weight_shape)
    if need_transpose:
        output = array_api.transpose(output, perm=[0, 2, 3, 4, 1])
    return output


# --- pooling of 1 and 3 dimensions (v0.3.4/v0.4.0 ops/nn_ops.py `max_pool1d`, `avg_pool1d`, `max_pool3d`,
# `avg_pool3d`). OneFlow's own 1-D pools raised NotImplementedError ("TODO: fix cuDNN bugs in pooling_1d"); these
# compute them, with the signatures and defaults OneFlow declared (max_pool1d's default format is "NWC").
def _pool(op_type, input, ksize, strides, padding, data_format, ceil_mode, name, nd, formats,  # noqa: A002
          default_name):
    fmt = data_format.upper()
    if fmt not in formats:
        raise AssertionError("%s: data_format must be one of %s, got %r" % (op_type, list(formats), data_format))
    if len(input.shape) != nd + 2:
        raise AssertionError("%s: input must have %d axes, got shape %s" % (op_type, nd + 2, input.shape))
    from oneflow_compat.nn.legacy_ops import _pair  # OneFlow's _GetSequence rule: 1 value or n

    ksize, strides = _pair(ksize, "ksize", nd), _pair(strides, "strides", nd)
    first = fmt.startswith("NC")
    spatial = tuple(input.shape[2:]) if first else tuple(input.shape[1:-1])
    pads = nd_pads(padding, spatial, ksize, (1,) * nd, strides, first, op_type)
    if name is None:
        name = builder.current("flow.nn." + op_type).job.unique_name(default_name)
    return apply(op_type, [input], {"ksize": tuple(ksize), "strides": tuple(strides), "pads": pads,
                                    "data_format": fmt, "ceil_mode": bool(ceil_mode)}, name=name)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool("max_pool1d", input, ksize, strides, padding, data_format, False, name, 1, ("NCW", "NWC"),
                 "MaxPool1D_")


def avg_pool1d(input, ksize, strides, padding, data_format="NCW", name=None):  # noqa: A002
    return _pool("avg_pool1d", input, ksize, strides, padding, data_format, False, name, 1, ("NCW", "NWC"),
                 "AvgPool1D_")


def max_pool3d(input, ksize, strides, padding, data_format="NCDHW", ceil_mode=False, name=None):  # noqa: A002
    return _pool("max_pool3d", input, ksize, strides, padding, data_format, ceil_mode, name, 3, ("NCDHW", "NDHWC"),
                 "MaxPool3D_")


def avg_pool3d(input, ksize, strides, padding, data_format="NCDHW", ceil_mode=False, name=None):  # noqa: A002
    return _pool("avg_pool3d", input, ksize, strides, padding, data_format, ceil_mode, name, 3, ("NCDHW", "NDHWC"),
                 "AvgPool3D_")
