"""OneFlow 0.9's other nn modules and functional forms for tensors: `Embedding` / `embedding`, `PixelShuffle`
(`PixelShufflev2`) / `pixel_shuffle`, `Upsample`, `UpsamplingNearest2d`, `UpsamplingBilinear2d` / `interpolate`,
the padding modules (`ReflectionPad1d/2d`, `ReplicationPad1d/2d`, `ConstantPad1d/2d/3d`, `ZeroPad2d`) / `pad`,
and the channel dropouts (`Dropout1d/2d/3d` / `dropout1d/2d/3d`), on the registry's ops (embedding, upsample,
reflection / replication padding, pad, reshape and transpose, multiply), eager, in `nn.Graph`, local or global.

Signatures, defaults and reprs: OneFlow 0.9's python/oneflow/nn/modules/sparse.py, pixelshuffle.py,
upsampling.py, interpolate.py, padding.py, dropout.py.
"""
from oneflow_compat._global import dropout as dropout_fn
from oneflow_compat._global import functional as F
from oneflow_compat._global import lazy, nn_init
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.modules import Module, Parameter


# --- embedding --------------------------------------------------------------------------------------------------
def embedding_renorm_(weight, indices, max_norm, norm_type=2.0):
    """OneFlow 0.9's `_C.embedding_renorm_`: the rows of `weight` that `indices` looks up whose norm_type-norm
    exceeds max_norm are scaled to max_norm / (norm + 1e-7) of themselves, in place (no gradient); returns weight."""
    from oneflow_compat.runtime import autograd

    with autograd.no_grad():
        apply_op("embedding_renorm", [weight, F._check(indices, "embedding_renorm_")],
                 {"max_norm": float(max_norm), "norm_type": float(norm_type)})
    return weight


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,  # noqa: A002
              sparse=False):
    """The rows of `weight` at `input`; padding_idx's row gets no gradient. max_norm: the rows looked up are first
    renormalised in the weight itself (`embedding_renorm_`); scale_grad_by_freq: each row's gradient divided by how
    often it is looked up in `input` (OneFlow 0.9 python/oneflow/nn/modules/sparse.py)."""
    assert sparse is False, "Not support sparse=True yet!"
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    attrs = {"padding_idx": -1 if padding_idx is None else int(padding_idx), "axis": 0}
    if scale_grad_by_freq:
        attrs["scale_grad_by_freq"] = True
    return apply_op("embedding", [weight, F._check(input, "embedding")], attrs)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, device=None, dtype=None):
        super().__init__()
        from oneflow_compat._global import creation

        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        assert sparse is False, "Not support sparse=True yet!"
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(creation.empty(num_embeddings, embedding_dim, dtype=dtype, device=device))
            self.reset_parameters()
        else:
            assert list(_weight.shape) == [num_embeddings, embedding_dim], \
                "Shape of weight does not match num_embeddings and embedding_dim"
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        nn_init.normal_(self.weight)
        if self.padding_idx is not None:  # the padding row starts at zeros
            full = self.weight.numpy().copy()
            full[self.padding_idx] = 0
            nn_init._fill(self.weight, full)

    def forward(self, indices):
        return embedding(indices, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                         self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = "{num_embeddings}, {embedding_dim}"
        if self.padding_idx is not None:
            s += ", padding_idx={padding_idx}"
        if self.max_norm is not None:
            s += ", max_norm={max_norm}"
        if self.norm_type != 2:
            s += ", norm_type={norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq={scale_grad_by_freq}"
        return s.format(**self.__dict__)


# --- pixel shuffle ----------------------------------------------------------------------------------------------
def pixel_shuffle(input, h_upscale_factor, w_upscale_factor=None):  # noqa: A002
    """(N, C·h·w, H, W) -> (N, C, H·h, W·w) (reshape, transpose, reshape)."""
    w_upscale_factor = h_upscale_factor if w_upscale_factor is None else w_upscale_factor
    x = F._check(input, "pixel_shuffle")
    # OneFlow 0.9's PixelShuffleFunctor checks: its RuntimeErrors and words (core/functional/impl/nn_functor.cpp)
    if x.ndim != 4:
        raise RuntimeError("Only Accept 4D Tensor")
    n, c, h, w = x.shape
    if c % (h_upscale_factor * w_upscale_factor):
        raise RuntimeError("The channels of input tensor must be divisible by (upscale_factor * upscale_factor) or "
                           "(h_upscale_factor * w_upscale_factor)")
    new_c = c // (h_upscale_factor * w_upscale_factor)
    y = F.reshape(x, (n, new_c, h_upscale_factor, w_upscale_factor, h, w))
    y = F.permute(y, (0, 1, 4, 2, 5, 3))
    return F.reshape(y, (n, new_c, h * h_upscale_factor, w * w_upscale_factor))


class PixelShufflev2(Module):
    def __init__(self, upscale_factor=None, h_upscale_factor=None, w_upscale_factor=None):
        super().__init__()
        if upscale_factor is None:
            assert h_upscale_factor is not None and w_upscale_factor is not None, \
                "h_upscale_factor and w_upscale_factor should be None if use upscale_factor"
        else:
            assert h_upscale_factor is None and w_upscale_factor is None, \
                "upscale_factor should be None if use h_upscale_factor and w_upscale_factor"
            h_upscale_factor = w_upscale_factor = upscale_factor
        assert h_upscale_factor > 0 and w_upscale_factor > 0, \
            "The scale factor of height and width must larger than zero"
        self.h_upscale_factor, self.w_upscale_factor = h_upscale_factor, w_upscale_factor

    def forward(self, input):  # noqa: A002
        return pixel_shuffle(input, self.h_upscale_factor, self.w_upscale_factor)

    def extra_repr(self):
        return "w_upscale_factor=%s, h_upscale_factor=%s" % (self.w_upscale_factor, self.h_upscale_factor)


# --- interpolation ----------------------------------------------------------------------------------------------
_MODES = {"nearest": ("nearest", None), "linear": ("linear", 1), "bilinear": ("linear", 2),
          "trilinear": ("linear", 3), "bicubic": ("cubic", 2), "area": ("area", None)}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None):
    """Resizes the spatial axes of (N, C, ...) to `size` or by `scale_factor`: nearest and area (1-3 spatial
    axes), linear (1), bilinear and bicubic (2), trilinear (3) (OneFlow 0.9 python/oneflow/nn/modules/interpolate.py:
    'area' is adaptive_avg_pool to the output size, its size from the scale factor recomputed)."""
    x = F._check(input, "interpolate")
    nd = x.ndim - 2
    if mode not in _MODES:
        raise ValueError('interpolation must be "nearest" or "bilinear" or "linear" or "area" or "bicubic" or '
                         '"trilinear".')
    kind, needs = _MODES[mode]
    if mode in ("nearest", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if (needs is not None and needs != nd) or not 1 <= nd <= 3:
        raise NotImplementedError("Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: "
                                  "nearest | linear | bilinear | bicubic | trilinear | area (got %s)"
                                  % (x.ndim, mode))
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None else
                         "either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    in_sizes = tuple(x.shape[2:])
    if size is not None:
        out = (size,) * nd if isinstance(size, int) else tuple(size)
        if len(out) != nd:
            raise ValueError("size shape must match input shape. Input is %dD, size is %d" % (nd, len(out)))
        scales = None
    else:
        factors = (scale_factor,) * nd if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        if len(factors) != nd:
            raise ValueError("scale_factor shape must match input shape. Input is %dD, scale_factor is %d"
                             % (nd, len(factors)))
        out = tuple(int(n * f) for n, f in zip(in_sizes, factors))
        scales = None if recompute_scale_factor else tuple(float(f) for f in factors)
    out = tuple(int(v) for v in out)
    if kind == "area":
        from oneflow_compat._global import nn_pools

        return getattr(nn_pools, "adaptive_avg_pool%dd" % nd)(x, out)
    return apply_op("upsample", [x], {"output_size": out, "mode": kind, "align_corners": bool(align_corners),
                                      "scales": scales, "half_pixel": False})


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, x):
        return interpolate(x, size=self.size, scale_factor=self.scale_factor, mode=self.mode,
                           align_corners=self.align_corners)

    def extra_repr(self):
        info = "scale_factor=" + str(self.scale_factor) if self.scale_factor is not None else "size=" + str(self.size)
        return info + ", mode=" + self.mode


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


# --- padding ----------------------------------------------------------------------------------------------------
def _crop_negative(x, pad):
    """Negative pads crop (OneFlow 0.9's pad / reflection / replication kernels read a negative pad as entries
    dropped at that side): x sliced to what survives, and the pads left >= 0."""
    k = len(pad) // 2
    index = [slice(None)] * x.ndim
    cropped = False
    for i in range(k):
        axis = x.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if before < 0 or after < 0:
            n = x.shape[axis]
            start, stop = max(0, -before), n - max(0, -after)
            if stop < start:  # (cropping to size 0 is legal: OneFlow 0.9's pad infers x + before + after,
                # user/ops/pad_op.cpp:33-44 at v0.9.0, as torch's constant pad does)
                raise RuntimeError("pad: the pads (%d, %d) crop dim %d of size %d below nothing" % (before, after,
                                                                                                  axis, n))
            index[axis] = slice(start, stop)
            cropped = True
    if cropped:
        x = F.index(x, tuple(index))
    return x, [max(0, p) for p in pad]


def pad(input, pad, mode="constant", value=0):  # noqa: A002
    """`pad` lists (before, after) per axis from the last: (left, right[, top, bottom[, front, back]]); a negative
    pad crops. Modes as OneFlow 0.9's PadFunctor (oneflow/core/functional/impl/nn_functor.cpp): constant (any number
    of axes), reflect and replicate (1 axis of 2-D/3-D inputs, 2 axes of 3-D/4-D inputs)."""
    x = F._check(input, "pad")
    pad = [int(p) for p in pad]
    if len(pad) > 2 * x.ndim:
        raise RuntimeError("Pad size should less than or equal to input axes * 2.")
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals %d" % len(pad))
    k = len(pad) // 2
    if mode not in ("constant", "reflect", "replicate"):
        raise NotImplementedError("Pad mode is %s, but only constant, reflect and replicate are valid." % (mode,))
    if mode != "constant":
        if k == 3:
            raise NotImplementedError("5D %s padding are not supported for now" % mode)
        if k not in (1, 2) or x.ndim not in (k + 1, k + 2):
            raise NotImplementedError("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now"
                                      if k not in (1, 2) else
                                      "%dD or %dD (batch mode) tensor expected for input, but got: %d"
                                      % (k + 1, k + 2, x.ndim))
        if mode == "reflect":
            for i in range(k):
                n = x.shape[x.ndim - 1 - i]
                if pad[2 * i] >= n or pad[2 * i + 1] >= n:
                    raise RuntimeError("Padding size should be less than the corresponding input dimension, but "
                                       "got: padding (%d, %d) at dimension %d of input %d"
                                       % (pad[2 * i], pad[2 * i + 1], x.ndim - 1 - i, x.ndim))
    x, pad = _crop_negative(x, pad)
    if mode == "constant":
        pairs = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
        fill = value if x.dtype.is_floating else int(value)
        return apply_op("pad", [x], {"paddings": tuple(pairs), "constant_value": fill})
    if mode == "reflect":
        for i in range(k):  # (after a crop the reflected side may have become too short)
            n = x.shape[x.ndim - 1 - i]
            if pad[2 * i] >= n or pad[2 * i + 1] >= n:
                raise RuntimeError("Padding size should be less than the corresponding input dimension, but got: "
                                   "padding (%d, %d) at dimension %d of input %d"
                                   % (pad[2 * i], pad[2 * i + 1], x.ndim - 1 - i, x.ndim))
    op = {"reflect": "reflection_pad", "replicate": "replication_pad"}[mode]
    batched = x.ndim == k + 2
    y = x if batched else F.unsqueeze(x, 0)
    y = apply_op(op + ("1d" if k == 1 else "2d"), [y], {"padding": tuple(pad)})
    return y if batched else F.squeeze(y, 0)


def _boundary(padding, n, what):
    if isinstance(padding, int):
        return [padding] * n
    if isinstance(padding, (tuple, list)):
        if len(padding) != n:
            raise AssertionError("%s: padding length must be %d" % (what, n))
        return list(padding)
    raise ValueError("padding must be int or list or tuple!")


class _Pad(Module):
    mode, n = "constant", 4

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _boundary(padding, self.n, type(self).__name__)
        self.value = value

    def forward(self, x):
        return pad(x, self.padding, self.mode, self.value)


class _EdgePad(_Pad):
    def __init__(self, padding):
        super().__init__(padding)

    def extra_repr(self):
        return "{}".format(self.padding)


class ReflectionPad1d(_EdgePad):
    mode, n = "reflect", 2


class ReflectionPad2d(_EdgePad):
    mode, n = "reflect", 4


class ReplicationPad1d(_EdgePad):
    mode, n = "replicate", 2


class ReplicationPad2d(_EdgePad):
    mode, n = "replicate", 4


class ConstantPad1d(_Pad):
    n = 2


class ConstantPad2d(_Pad):
    n = 4


class ConstantPad3d(_Pad):
    n = 6


class ZeroPad2d(_Pad):
    n = 4

    def __init__(self, padding):
        super().__init__(padding, 0.0)


# --- channel dropout --------------------------------------------------------------------------------------------
def _channel_dropout(input, p, training, nd, what):  # noqa: A002
    """Zeroes whole channels (each sample's) with probability p, scaling the rest by 1 / (1 - p)."""
    x = F._check(input, what)
    if not 0 <= p <= 1:
        raise ValueError("dropout probability has to be between 0 and 1, but got %r" % (p,))
    if x.ndim not in (nd + 1, nd + 2):
        raise ValueError("%s: expected %dD or %dD input, got shape %s" % (what, nd + 1, nd + 2, tuple(x.shape)))
    if not training or p == 0:
        return x
    spatial = list(range(x.ndim - nd, x.ndim))
    # one value per (sample, channel): the same mask machinery as dropout's (eager: the generators; in a graph:
    # the dropout op, a fresh mask per call)
    channels = apply_op("fill_like", [F.sum(x.detach(), spatial, keepdim=True)], {"value": 1.0})
    if p == 1:
        return F.mul(x, 0.0)
    if lazy.tracer_active():
        mask = apply_op("dropout", [channels], {"rate": float(p), "seed": None})[0]
    else:
        mask = dropout_fn._mask_like(channels, p, None)
    return F.mul(x, mask)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _channel_dropout(input, p, training, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _channel_dropout(input, p, training, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _channel_dropout(input, p, training, 3, "dropout3d")


class _DropoutNd(Module):
    nd = 2

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError("dropout probability has to be between 0 and 1, but got %r" % (p,))
        self.p, self.inplace = float(p), inplace

    def forward(self, x):
        return _channel_dropout(x, self.p, self.training, self.nd, "dropout%dd" % self.nd)

    def extra_repr(self):
        return "p=%s, inplace=%s" % (self.p, self.inplace)


class Dropout1d(_DropoutNd):
    nd = 1


class Dropout2d(_DropoutNd):
    nd = 2


class Dropout3d(_DropoutNd):
    nd = 3
