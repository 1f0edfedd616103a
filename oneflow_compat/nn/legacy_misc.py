"""The nn ops family's other legacy functions of OneFlow v0.3.4/v0.4.0: `flow.nn.random_mask_like`,
`flow.nn.PixelShuffle` / `PixelShufflev2` (ops/nn_ops.py), `flow.layers.upsample_2d` (ops/layers.py),
`flow.reflection_pad2d`, `replication_pad2d`, `constant_pad2d`, `zero_pad2d`, `same_padding` (ops/pad.py)."""
from oneflow_compat._api import array_api, ops_api
from oneflow_compat.ir import builder
from oneflow_compat.ops.registry import apply


def _unique(name, prefix, what):
    return name if name is not None else builder.current(what).job.unique_name(prefix)


def random_mask_like(like, rate, seed=None, noise_shape=None, name=None):
    """An int8 mask shaped like `like`: 1 (kept) with probability 1 - rate, drawn anew at every call."""
    if not (rate is not None and 0.0 <= rate < 1.0):
        raise AssertionError("rate must be in [0, 1), got %r" % (rate,))
    if noise_shape is not None:
        raise AssertionError("noise_shape will be supported later.")
    if seed is not None and name is None:
        raise AssertionError("random_mask_like with a seed requires a name")
    name = _unique(name, "RandomMaskLike_", "flow.nn.random_mask_like")
    return apply("random_mask_like", [like], {"rate": float(rate), "seed": seed}, name=name)


def pixel_shufflev2(input, h_upscale_factor, w_upscale_factor, name=None):  # noqa: A002
    """(N, C·h·w, H, W) -> (N, C, H·h, W·w), composed as OneFlow composed it (reshape, reshape, transpose,
    reshape)."""
    if not (h_upscale_factor > 0 and w_upscale_factor > 0):
        raise AssertionError("The scale factor of height and width must larger than zero")
    if len(input.shape) != 4:
        raise AssertionError("Only Accept 4D Blob")
    n, c, h, w = input.shape
    if c % (h_upscale_factor * w_upscale_factor):
        raise AssertionError("The channels of input tensor must be divisible by (h_upscale_factor * "
                             "w_upscale_factor)")
    name = _unique(name, "PixelShufflev2", "flow.nn.PixelShufflev2")
    new_c = c // (h_upscale_factor * w_upscale_factor)
    out = ops_api.reshape(input, [n, new_c, h_upscale_factor * w_upscale_factor, h, w], name=name + "_reshape1")
    out = ops_api.reshape(out, [n, new_c, h_upscale_factor, w_upscale_factor, h, w], name=name + "_reshape2")
    out = array_api.transpose(out, [0, 1, 4, 2, 5, 3], name=name + "_transpose")
    return ops_api.reshape(out, [n, new_c, h * h_upscale_factor, w * w_upscale_factor], name=name + "_reshape3")


def pixel_shuffle(input, upscale_factor, name=None):  # noqa: A002
    return pixel_shufflev2(input, upscale_factor, upscale_factor, name=name)


def upsample_2d(x, size=(2, 2), align_corners=False, data_format="NCHW", interpolation="nearest",
                name="Upsample2D"):
    """Resizes H and W by the factors `size` (OneFlow's upsample op: output = input size · factor)."""
    if isinstance(size, int):
        hs = ws = size
    else:
        if not (isinstance(size, (list, tuple)) and len(size) == 2):
            raise AssertionError("size must be an int or a pair, got %r" % (size,))
        hs, ws = size
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError('interpolation must be "nearest" or "bilinear".')
    if interpolation == "nearest" and align_corners:
        raise ValueError('interpolation "nearest" does not support align_corners.')
    if data_format.upper() not in ("NCHW", "NHWC"):
        raise ValueError('data_format must be "NHWC" or "NCHW".')
    transpose = data_format.upper() == "NHWC"
    if transpose:
        x = array_api.transpose(x, perm=[0, 3, 1, 2])
    out_hw = (int(x.shape[2] * hs), int(x.shape[3] * ws))
    y = apply("upsample", [x], {"output_size": out_hw, "mode": "nearest" if interpolation == "nearest" else "linear",
                                "align_corners": bool(align_corners), "scales": (float(hs), float(ws)),
                                "half_pixel": interpolation == "nearest"}, name=name)
    return array_api.transpose(y, perm=[0, 2, 3, 1]) if transpose else y


def _boundary(x, padding, what):
    """OneFlow's (left, right, top, bottom) of a 4-D input; each smaller than the axis it pads."""
    h, w = x.shape[2], x.shape[3]
    if isinstance(padding, (tuple, list)):
        if len(padding) != len(x.shape):
            raise AssertionError("padding boundry must be the same size of input dims")
        if not (padding[2] < h and padding[3] < h and padding[0] < w and padding[1] < w):
            raise AssertionError("Padding size should be less than the corresponding input dimension!")
        return tuple(int(p) for p in padding[:4])
    if isinstance(padding, int):
        if not (padding < h and padding < w):
            raise AssertionError("Padding size should be less than the corresponding input dimension!")
        return (padding,) * 4
    raise ValueError("padding must be in or list or tuple!")


def reflection_pad2d(x, padding, name=None):
    boundary = _boundary(x, padding, "reflection_pad2d")
    return apply("reflection_pad2d", [x], {"padding": boundary},
                 name=_unique(name, "Reflection_Pad2d_", "flow.reflection_pad2d"))


def replication_pad2d(x, padding, name=None):
    boundary = _boundary(x, padding, "replication_pad2d")
    return apply("replication_pad2d", [x], {"padding": boundary},
                 name=_unique(name, "Replication_Pad2d_", "flow.replication_pad2d"))


def constant_pad2d(x, padding, constant_value=0, name=None):
    left, right, top, bottom = _boundary(x, padding, "constant_pad2d")
    value = constant_value if x.dtype.is_floating else int(constant_value)
    return array_api.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_value=value,
                         name=_unique(name, "Constant_Pad2d_", "flow.constant_pad2d"))


def zero_pad2d(x, padding, name=None):
    return constant_pad2d(x, padding, 0.0, _unique(name, "Zero_Pad2d_", "flow.zero_pad2d"))


def same_padding(x, padding, data_format, kernel_size, strides, dilation_rate, name=None):
    """x zero-padded as a convolution with these windows pads it for "SAME_LOWER" / "SAME_UPPER"."""
    from oneflow_compat.nn.legacy_convs import nd_pads

    if not (isinstance(padding, str) and padding.upper() in ("SAME_LOWER", "SAME_UPPER")):
        raise AssertionError('padding must be "SAME_LOWER" or "SAME_UPPER".')
    nd = len(x.shape) - 2
    for v, what in ((kernel_size, "kernel_size"), (strides, "strides"), (dilation_rate, "dilation_rate")):
        if not (isinstance(v, (list, tuple)) and len(v) == nd):
            raise AssertionError("same_padding: %s must be a list of %d values" % (what, nd))
    first = data_format.startswith("NC")
    spatial = tuple(x.shape[2:]) if first else tuple(x.shape[1:-1])
    pads = nd_pads(padding, spatial, tuple(kernel_size), tuple(dilation_rate), tuple(strides), first,
                   "same_padding")
    full = ((0, 0), (0, 0)) + pads if first else ((0, 0),) + pads + ((0, 0),)
    return array_api.pad(x, full, name=_unique(name, "SamePadding_", "flow.same_padding"))
