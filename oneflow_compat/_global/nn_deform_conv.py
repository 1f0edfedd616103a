"""OneFlow 0.9's `flow.nn.functional.deform_conv2d` (deformable convolution v1, and v2 with a `mask`), composed
of registered ops: every kernel tap of every output position samples the input bilinearly at its regular place
plus its learned offset (zero outside the image: a corner outside contributes 0, as torchvision's and OneFlow's
kernels), times its mask value (v2); the samples, laid out as im2col columns (N, C·kh·kw, out_h·out_w), then meet
the weight in one grouped product. The corner reads are `dim_gather`s, the bilinear weights products of the
offsets' fractional parts, so gradients reach the input, the offsets, the mask, the weight and the bias.

Signature, checks and messages: OneFlow v0.9.0's python/oneflow/nn/functional/functional_deform_conv.py
(`deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), mask=None)`;
offset channel 2·(g·kh·kw + k) is tap k's row offset in offset group g, the next its column offset; mask channel
g·kh·kw + k). Integers are accepted for stride, padding and dilation as well as pairs.
"""
import numpy as np

from oneflow_compat import sbp as flow_sbp
from oneflow_compat.ir import dtypes
from oneflow_compat._global import creation
from oneflow_compat._global import functional as F
from oneflow_compat._global import tensor_functions as TF


def _pair(v, what):
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(e) for e in v)
    if len(v) != 2:
        raise ValueError("deform_conv2d: %s must be an int or a pair, got %r" % (what, v))
    return v


def _const(values, like, dtype):
    if like.is_local:
        return creation.tensor(values, dtype=dtype, device=like._device)
    return creation.tensor(values, dtype=dtype, placement=like.placement, sbp=[flow_sbp.broadcast] * len(like.sbp))


def deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1),  # noqa: A002
                  mask=None):
    use_mask = mask is not None
    weights_h, weights_w = weight.shape[-2:]
    if weights_h != weights_w:  # OneFlow 0.9's kernel: square kernels only
        raise NotImplementedError("Rectangle convolution is not supported currently.")
    if use_mask and len(mask.shape) != 4:
        raise RuntimeError("The dimension of mask tensor weight must be 4")
    if len(input.shape) != 4:
        raise RuntimeError("The dimension of input tensor weight must be 4")
    if len(weight.shape) != 4:
        raise RuntimeError("The dimension of weight tensor weight must be 4")
    if len(offset.shape) != 4:
        raise RuntimeError("The dimension of offset tensor weight must be 4")
    n, c, h, w = input.shape
    kh, kw = weights_h, weights_w
    taps = kh * kw
    n_offset_grps = offset.shape[1] // (2 * taps)
    if n_offset_grps == 0:
        raise RuntimeError("The shape of the offset tensor at dimension 1 is not valid. It should be a multiple of "
                           "2 * weight.size[2] * weight.size[3].\nGot offset.shape[1]=%d, while 2 * weight.size[2] "
                           "* weight.size[3]=%d" % (offset.shape[1], 2 * taps))
    n_weight_grps = c // weight.shape[1]
    (sh, sw), (ph, pw), (dh, dw) = _pair(stride, "stride"), _pair(padding, "padding"), _pair(dilation, "dilation")
    # the deform_conv2d op's checks, order and words (OneFlow 0.9 user/ops/deform_conv_op.cpp)
    if not (sw > 0 and sh > 0):
        raise RuntimeError("The stride must be greater than 0,but got %d and %d" % (sw, sh))
    if not (pw >= 0 and ph >= 0):
        raise RuntimeError("The pad must be greater than or equal to 0,but got %d and %d" % (pw, ph))
    if not (dw > 0 and dh > 0):
        raise RuntimeError("The dilation must be greater than 0,but got %d and %d" % (dh, dw))
    if use_mask and mask.shape[1] != n_offset_grps * taps:
        raise RuntimeError("mask.shape[1] is not valid: got: %d expected: %d" % (mask.shape[1], n_offset_grps * taps))
    if offset.shape[0] != n:
        raise RuntimeError("invalid batch size of offset:got: %d ,expected: %d" % (offset.shape[0], n))
    out_h = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    out_w = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    if not (out_w > 0 and out_h > 0):
        raise RuntimeError("Calculated output size too small - out_h: %d ,out_w: %d" % (out_h, out_w))
    if offset.shape[2] != out_h or offset.shape[3] != out_w:
        raise RuntimeError("invalid offset output dims: got ( %d, %d),expected: (%d, %d)"
                           % (offset.shape[2], offset.shape[3], out_h, out_w))
    if n_weight_grps == 0 or c % n_weight_grps or weight.shape[0] % n_weight_grps:
        raise RuntimeError("deform_conv2d: input channels %d and weight %s do not make whole groups"
                           % (c, tuple(weight.shape)))
    if c % n_offset_grps:
        raise RuntimeError("deform_conv2d: input channels %d are not divisible by the %d offset groups"
                           % (c, n_offset_grps))
    if tuple(offset.shape) != (n, 2 * n_offset_grps * taps, out_h, out_w):
        raise RuntimeError("deform_conv2d: offset of shape %s, expected %s (batch, 2 * offset_groups * kh * kw, "
                           "out_h, out_w)" % (tuple(offset.shape), (n, 2 * n_offset_grps * taps, out_h, out_w)))
    if use_mask and tuple(mask.shape) != (n, n_offset_grps * taps, out_h, out_w):
        raise RuntimeError("deform_conv2d: mask of shape %s, expected %s (batch, offset_groups * kh * kw, out_h, "
                           "out_w)" % (tuple(mask.shape), (n, n_offset_grps * taps, out_h, out_w)))
    x = F._floating(input)
    dt = x.dtype
    G, L = n_offset_grps, out_h * out_w
    off = F.reshape(offset, (n, G, taps, 2, L))
    off_y, off_x = F.index(off, (slice(None), slice(None), slice(None), 0)), \
        F.index(off, (slice(None), slice(None), slice(None), 1))
    # each tap's regular sampling place: out_row·stride - pad + tap_row·dilation (likewise for columns)
    ki, kj = np.divmod(np.arange(taps), kw)
    oy, ox = np.divmod(np.arange(L), out_w)
    base_y = (oy[None, :] * sh - ph + ki[:, None] * dh).astype(dt.np)
    base_x = (ox[None, :] * sw - pw + kj[:, None] * dw).astype(dt.np)
    py = F.add(off_y, _const(base_y, x, dt))  # (n, G, taps, L)
    px = F.add(off_x, _const(base_x, x, dt))
    y0, x0 = F.floor(py).detach(), F.floor(px).detach()
    ly, lx = F.sub(py, y0), F.sub(px, x0)
    hy, hx = F.sub(1.0, ly), F.sub(1.0, lx)
    cg = c // G
    rows = F.reshape(x, (n, G, cg, h * w))
    sampled = None
    for dy, dx, wy, wx in ((0, 0, hy, hx), (0, 1, hy, lx), (1, 0, ly, hx), (1, 1, ly, lx)):
        yc, xc = (F.add(y0, float(dy)) if dy else y0), (F.add(x0, float(dx)) if dx else x0)
        inside = F.mul(F.mul(F.cast(F.ge(yc, 0.0), dt), F.cast(F.le(yc, float(h - 1)), dt)),
                       F.mul(F.cast(F.ge(xc, 0.0), dt), F.cast(F.le(xc, float(w - 1)), dt)))
        flat = F.add(F.mul(F.clamp(yc, 0.0, float(h - 1)), float(w)), F.clamp(xc, 0.0, float(w - 1)))
        index = F.cast(F.reshape(flat, (n, G, 1, taps * L)), dtypes.int64)
        values = F.gather(rows, 3, TF.expand(index, n, G, cg, taps * L))
        weight_ = F.reshape(F.mul(F.mul(wy, wx), inside), (n, G, 1, taps * L))
        term = F.mul(values, weight_)
        sampled = term if sampled is None else F.add(sampled, term)
    if use_mask:
        sampled = F.mul(sampled, F.reshape(mask, (n, G, 1, taps * L)))
    # columns (n, groups, C/groups · taps, L) · weight (groups, O/groups, C/groups · taps)
    o = weight.shape[0]
    gw = n_weight_grps
    cols = F.reshape(sampled, (n, gw, (c // gw) * taps, L))
    wmat = F.reshape(weight, (1, gw, o // gw, (c // gw) * taps))
    out = F.matmul(TF.expand(wmat, n, gw, o // gw, (c // gw) * taps), cols)
    out = F.reshape(out, (n, o, out_h, out_w))
    if bias is not None:
        out = F.add(out, F.reshape(bias, (1, o, 1, 1)))
    return out
