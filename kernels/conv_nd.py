"""Convolutions of 1, 2 or 3 spatial dimensions, forward and backward, channels first ("NCW", "NCHW", "NCDHW") or
last ("NWC", "NHWC", "NDHWC"), and the transposed convolution (its forward is the convolution's input gradient).

Two spatial dimensions run on `nn.py`'s tuned 2-D kernels; one dimension does too, as a 2-D convolution of height
1 (the same weights seen with a unit kernel height), so conv1d gets conv2d's speed. Three dimensions run here: one
tensordot per kernel offset over strided views of the padded input (numpy's BLAS does the products; no patch
matrix), which is also the reference definition the tests compare the 2-D kernels' wrappers against.

Weights: (F, C/groups, *kernel) channels first, (F, *kernel, C/groups) channels last. Pads are explicit pairs
(before, after) per spatial dimension.
"""
import itertools

from . import nn as nn2d
from .half_products import through_float32

_FIRST = {"NCW": 1, "NCHW": 2, "NCDHW": 3}
_LAST = {"NWC": 1, "NHWC": 2, "NDHWC": 3}


def spatial_dims(data_format):
    if data_format in _FIRST:
        return _FIRST[data_format]
    if data_format in _LAST:
        return _LAST[data_format]
    raise ValueError("data_format must be one of %s, got %r" % (sorted(_FIRST) + sorted(_LAST), data_format))


def channels_first(data_format):
    spatial_dims(data_format)
    return data_format in _FIRST


def out_size(size, k, s, pads, d=1, ceil_mode=False):
    """floor((size + pads - ((k - 1) d + 1)) / s) + 1 (the ceiling with ceil_mode, dropping a window that would
    start in the end padding); ValueError when the window is larger than the padded input."""
    before, after = pads
    span = size + before + after - ((k - 1) * d + 1)
    if span < 0 and ceil_mode and (span + 2 * s - 1) // s >= 1 and size + before > 0:
        # the window is longer than the padded input, but ceil_mode keeps one that starts inside it (OneFlow 0.9's
        # GetWindowedOutputShape, max_pool_kernel_util.cpp: (span + 2 stride - 1) / stride, as torch)
        return 1
    if span < 0:
        raise ValueError("window %d (dilation %d) larger than padded input %d" % (k, d, size + before + after))
    if ceil_mode:
        n = -(-span // s) + 1
        if (n - 1) * s >= size + before:
            n -= 1
        return n
    return span // s + 1


def conv_out_shape(x_shape, w_shape, strides, pads, dilations, groups, data_format):
    """The output shape of a convolution; ValueError naming what does not fit."""
    nd = spatial_dims(data_format)
    first = channels_first(data_format)
    if len(x_shape) != nd + 2 or len(w_shape) != nd + 2:
        raise ValueError("input %s and weight %s must both have %d axes (%s)" % (tuple(x_shape), tuple(w_shape),
                                                                                 nd + 2, data_format))
    c = x_shape[1] if first else x_shape[-1]
    f = w_shape[0]
    cg = w_shape[1] if first else w_shape[-1]
    ks = tuple(w_shape[2:]) if first else tuple(w_shape[1:-1])
    if groups < 1 or c != cg * groups or f % groups:
        raise ValueError("%d input channels, weight of %d filters x %d channels and groups=%d do not fit"
                         % (c, f, cg, groups))
    spatial = tuple(x_shape[2:]) if first else tuple(x_shape[1:-1])
    outs = tuple(out_size(n, k, s, p, d) for n, k, s, p, d in zip(spatial, ks, strides, pads, dilations))
    return (x_shape[0], f) + outs if first else (x_shape[0],) + outs + (f,)


# --- layout helpers: everything below works channels first ------------------------------------------------------
def _to_first(xp, a, first):
    if first:
        return a
    nd = a.ndim - 2
    return a.transpose((0, nd + 1) + tuple(range(1, nd + 1)))


def _from_first(xp, a, first):
    if first:
        return a
    nd = a.ndim - 2
    return xp.ascontiguousarray(a.transpose((0,) + tuple(range(2, nd + 2)) + (1,)))


def _weight_first(w, first):
    """A channels-last weight (F, *k, C/g) as (F, C/g, *k)."""
    if first:
        return w
    nd = w.ndim - 2
    return w.transpose((0, nd + 1) + tuple(range(1, nd + 1)))


def _weight_from_first(xp, w, first):
    if first:
        return w
    nd = w.ndim - 2
    return xp.ascontiguousarray(w.transpose((0,) + tuple(range(2, nd + 2)) + (1,)))


def _as_2d_format(data_format):
    return "NCHW" if channels_first(data_format) else "NHWC"


def _height_one(a, first):
    """A 1-D array (N, C, W) / (N, W, C) as 2-D of height 1."""
    return a[:, :, None, :] if first else a[:, None, :, :]


def _pair_attrs(strides, pads, dilations):
    return (1,) + tuple(strides), ((0, 0),) + tuple(tuple(p) for p in pads), (1,) + tuple(dilations)


def _offsets(ks):
    return itertools.product(*[range(k) for k in ks])


def _window(a, offset, outs, strides, dilations):
    """The cells at kernel `offset` of every window: a strided view of the trailing (spatial) axes."""
    sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, n, s, d in zip(offset, outs, strides, dilations))
    return a[(Ellipsis,) + sl]


def _padded(xp, x, pads):
    if all(b == 0 and a == 0 for b, a in pads):
        return x
    width = ((0, 0), (0, 0)) + tuple(tuple(p) for p in pads)
    return xp.pad(x, width)


def _geometry(x_shape, w_shape, strides, pads, dilations, groups, first):
    xs = tuple(x_shape) if first else (x_shape[0], x_shape[-1]) + tuple(x_shape[1:-1])
    ws = tuple(w_shape) if first else (w_shape[0], w_shape[-1]) + tuple(w_shape[1:-1])
    n, c, spatial = xs[0], xs[1], xs[2:]
    f, cg, ks = ws[0], ws[1], ws[2:]
    outs = tuple(out_size(size, k, s, p, d) for size, k, s, p, d in zip(spatial, ks, strides, pads, dilations))
    return n, c, spatial, f, cg, ks, outs


# --- the N-d kernels (3-D; any N as reference) ------------------------------------------------------------------
def _conv_nd(xp, x, w, strides, pads, dilations, groups, first):
    n, c, spatial, f, cg, ks, outs = _geometry(x.shape, w.shape, strides, pads, dilations, groups, first)
    dtype = xp.result_type(x, w)
    xf = _padded(xp, _to_first(xp, x, first).astype(dtype, copy=False), pads)
    wf = _weight_first(w, first).astype(dtype, copy=False)
    fg = f // groups
    out = xp.zeros((n, f) + outs, dtype=dtype)
    for off in _offsets(ks):
        view = _window(xf, off, outs, strides, dilations)
        for g in range(groups):
            # (n, cg, *outs) . (fg, cg) -> (n, *outs, fg)
            part = xp.tensordot(view[:, g * cg:(g + 1) * cg], wf[g * fg:(g + 1) * fg, :][(Ellipsis,) + off],
                                axes=([1], [1]))
            out[:, g * fg:(g + 1) * fg] += xp.moveaxis(part, -1, 1)
    return _from_first(xp, out, first)


def _conv_nd_grad_input(xp, dy, w, input_shape, strides, pads, dilations, groups, first):
    n = dy.shape[0]
    input_shape = (n,) + tuple(input_shape[1:])
    _, c, spatial, f, cg, ks, outs = _geometry(input_shape, w.shape, strides, pads, dilations, groups, first)
    dtype = xp.result_type(dy, w)
    dyf = _to_first(xp, dy, first).astype(dtype, copy=False)
    wf = _weight_first(w, first).astype(dtype, copy=False)
    fg = f // groups
    padded = tuple(size + b + a for size, (b, a) in zip(spatial, pads))
    dx = xp.zeros((n, c) + padded, dtype=dtype)
    for off in _offsets(ks):
        view = _window(dx, off, outs, strides, dilations)
        for g in range(groups):
            # (n, fg, *outs) . (fg, cg) -> (n, *outs, cg)
            part = xp.tensordot(dyf[:, g * fg:(g + 1) * fg], wf[g * fg:(g + 1) * fg, :][(Ellipsis,) + off],
                                axes=([1], [0]))
            view[:, g * cg:(g + 1) * cg] += xp.moveaxis(part, -1, 1)
    crop = (slice(None), slice(None)) + tuple(slice(b, b + size) for size, (b, _) in zip(spatial, pads))
    return _from_first(xp, xp.ascontiguousarray(dx[crop]), first)


def _conv_nd_grad_weight(xp, dy, x, weight_shape, strides, pads, dilations, groups, first):
    n, c, spatial, f, cg, ks, outs = _geometry(x.shape, weight_shape, strides, pads, dilations, groups, first)
    dtype = xp.result_type(dy, x)
    xf = _padded(xp, _to_first(xp, x, first).astype(dtype, copy=False), pads)
    dyf = _to_first(xp, dy, first).astype(dtype, copy=False)
    fg = f // groups
    dw = xp.zeros((f, cg) + ks, dtype=dtype)
    axes = [0] + list(range(2, 2 + len(ks)))
    for off in _offsets(ks):
        view = _window(xf, off, outs, strides, dilations)
        for g in range(groups):
            # (n, fg, *outs) . (n, cg, *outs) over n and the outputs -> (fg, cg)
            dw[(slice(g * fg, (g + 1) * fg), slice(None)) + off] = xp.tensordot(
                dyf[:, g * fg:(g + 1) * fg], view[:, g * cg:(g + 1) * cg], axes=(axes, axes))
    return _weight_from_first(xp, dw, first)


# --- public kernels ---------------------------------------------------------------------------------------------
@through_float32  # float16 on the CPU: float32 products, rounded once (kernels/half_products.py)
def conv_nd(xp, x, w, *, strides, pads, dilations, groups=1, data_format):
    """Cross-correlation of 1, 2 or 3 spatial dimensions."""
    nd = spatial_dims(data_format)
    first = channels_first(data_format)
    if nd == 2:
        return nn2d.conv2d(xp, x, w, strides=tuple(strides), pads=tuple(pads), dilations=tuple(dilations),
                           groups=groups, data_format=data_format)
    if nd == 1:
        s, p, d = _pair_attrs(strides, pads, dilations)
        y = nn2d.conv2d(xp, _height_one(x, first), _height_one(w, first), strides=s, pads=p, dilations=d,
                        groups=groups, data_format=_as_2d_format(data_format))
        return xp.ascontiguousarray(y[:, :, 0, :] if first else y[:, 0, :, :])
    return _conv_nd(xp, x, w, strides, pads, dilations, groups, first)


@through_float32  # float16 on the CPU: float32 products, rounded once (kernels/half_products.py)
def conv_nd_grad_input(xp, dy, w, *, input_shape, strides, pads, dilations, groups=1, data_format):
    """d input of `conv_nd`, shaped `input_shape` with dy's batch size."""
    nd = spatial_dims(data_format)
    first = channels_first(data_format)
    if nd == 2:
        return nn2d.conv2d_grad_input(xp, dy, w, input_shape=tuple(input_shape), strides=tuple(strides),
                                      pads=tuple(pads), dilations=tuple(dilations), groups=groups,
                                      data_format=data_format)
    if nd == 1:
        s, p, d = _pair_attrs(strides, pads, dilations)
        shape2 = tuple(input_shape[:2]) + (1, input_shape[2]) if first else \
            (input_shape[0], 1) + tuple(input_shape[1:])
        dx = nn2d.conv2d_grad_input(xp, _height_one(dy, first), _height_one(w, first), input_shape=shape2,
                                    strides=s, pads=p, dilations=d, groups=groups,
                                    data_format=_as_2d_format(data_format))
        return xp.ascontiguousarray(dx[:, :, 0, :] if first else dx[:, 0, :, :])
    return _conv_nd_grad_input(xp, dy, w, input_shape, strides, pads, dilations, groups, first)


@through_float32  # float16 on the CPU: float32 products, rounded once (kernels/half_products.py)
def conv_nd_grad_weight(xp, dy, x, *, weight_shape, strides, pads, dilations, groups=1, data_format):
    """d weight of `conv_nd`, shaped `weight_shape`."""
    nd = spatial_dims(data_format)
    first = channels_first(data_format)
    if nd == 2:
        return nn2d.conv2d_grad_weight(xp, dy, x, weight_shape=tuple(weight_shape), strides=tuple(strides),
                                       pads=tuple(pads), dilations=tuple(dilations), groups=groups,
                                       data_format=data_format)
    if nd == 1:
        s, p, d = _pair_attrs(strides, pads, dilations)
        ws2 = tuple(weight_shape[:2]) + (1, weight_shape[2]) if first else \
            (weight_shape[0], 1) + tuple(weight_shape[1:])
        dw = nn2d.conv2d_grad_weight(xp, _height_one(dy, first), _height_one(x, first), weight_shape=ws2,
                                     strides=s, pads=p, dilations=d, groups=groups,
                                     data_format=_as_2d_format(data_format))
        return xp.ascontiguousarray(dw[:, :, 0, :] if first else dw[:, 0, :, :])
    return _conv_nd_grad_weight(xp, dy, x, weight_shape, strides, pads, dilations, groups, first)

