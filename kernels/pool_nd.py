"""Max and average pooling of 1, 2 or 3 spatial dimensions, forward and backward, channels first or last, with
OneFlow 0.9's (PyTorch's) options: dilation (max), count_include_pad and divisor_override (average), ceil_mode.

Two spatial dimensions without those options run on `nn.py`'s 2-D kernels (compiled loops where numba is there),
one dimension as 2-D of height 1; everything else here, one strided view per window offset (the numpy reference
of the 2-D kernels, with the same rules: padded cells never win a maximum; ties go to the first maximal cell in
window order; a ceil_mode window that starts inside the input may reach past the padding).

Average divisor: `divisor_override` when given (> 0); else with count_include_pad the window's cells inside the
padded input (not the ceil_mode extension beyond it), else its cells inside the input (the legacy ops' rule).
"""
import itertools

from . import conv_nd
from . import nn as nn2d


def _tup(v, n):
    return (int(v),) * n if isinstance(v, int) else tuple(int(a) for a in v)


def _geometry(spatial, ksize, strides, pads, dilations, ceil_mode):
    outs = tuple(conv_nd.out_size(n, k, s, p, d, ceil_mode)
                 for n, k, s, p, d in zip(spatial, ksize, strides, pads, dilations))
    # cells a ceil_mode window may reach past the end padding
    extra = tuple(max(0, (o - 1) * s + (k - 1) * d + 1 - (n + b + a))
                  for o, s, k, d, n, (b, a) in zip(outs, strides, ksize, dilations, spatial, pads))
    return outs, extra


def _view(a, off, outs, strides, dilations):
    sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, n, s, d in zip(off, outs, strides, dilations))
    return a[(Ellipsis,) + sl]


def _pad(xp, x, pads, extra, fill):
    width = ((0, 0), (0, 0)) + tuple((b, a + e) for (b, a), e in zip(pads, extra))
    if all(b == 0 and a == 0 for b, a in width):
        return x
    return xp.pad(x, width, constant_values=fill)


def _lowest(xp, dtype):
    return -xp.inf if xp.dtype(dtype).kind == "f" else xp.iinfo(dtype).min


def _fast_2d(nd, dilations, extras_default):
    return nd in (1, 2) and all(d == 1 for d in dilations) and extras_default


def _as_2d(x, first):
    return x[:, :, None, :] if first else x[:, None, :, :]


def _from_2d(xp, y, first):
    return xp.ascontiguousarray(y[:, :, 0, :] if first else y[:, 0, :, :])


def _attrs_2d(nd, ksize, strides, pads, data_format):
    if nd == 2:
        return tuple(ksize), tuple(strides), tuple(tuple(p) for p in pads), data_format
    return (1,) + tuple(ksize), (1,) + tuple(strides), ((0, 0),) + tuple(tuple(p) for p in pads), \
        ("NCHW" if conv_nd.channels_first(data_format) else "NHWC")


@nn2d._memo_geometry  # (each pooling op asks with the same arguments every step)
def _setup(x_shape, ksize, strides, pads, dilations, data_format):
    nd = conv_nd.spatial_dims(data_format)
    first = conv_nd.channels_first(data_format)
    ksize, strides = _tup(ksize, nd), _tup(strides, nd)
    dilations = _tup(dilations if dilations is not None else 1, nd)
    pads = tuple(tuple(int(v) for v in p) for p in pads)
    spatial = tuple(x_shape[2:]) if first else tuple(x_shape[1:-1])
    return nd, first, ksize, strides, pads, dilations, spatial


def _first(xp, x, first):
    return x if first else x.transpose((0, x.ndim - 1) + tuple(range(1, x.ndim - 1)))


def _back(xp, y, first):
    if first:
        return xp.ascontiguousarray(y)
    return xp.ascontiguousarray(y.transpose((0,) + tuple(range(2, y.ndim)) + (1,)))


# --- max ----------------------------------------------------------------------------------------------------------
def max_pool(xp, x, *, ksize, strides, pads, data_format, ceil_mode=False, dilations=None):
    """Window maxima."""
    nd, first, ksize, strides, pads, dilations, spatial = _setup(x.shape, ksize, strides, pads, dilations,
                                                                 data_format)
    if _fast_2d(nd, dilations, True):
        k2, s2, p2, f2 = _attrs_2d(nd, ksize, strides, pads, data_format)
        y = nn2d.max_pool2d(xp, x if nd == 2 else _as_2d(x, first), ksize=k2, strides=s2, pads=p2, data_format=f2,
                            ceil_mode=ceil_mode)
        return y if nd == 2 else _from_2d(xp, y, first)
    outs, extra = _geometry(spatial, ksize, strides, pads, dilations, ceil_mode)
    padded = _pad(xp, _first(xp, x, first), pads, extra, _lowest(xp, x.dtype))
    out = None
    for off in itertools.product(*[range(k) for k in ksize]):
        v = _view(padded, off, outs, strides, dilations)
        out = v.copy() if out is None else xp.maximum(out, v, out=out)
    return _back(xp, out, first)


def _max_pool_grad_nd(xp, dy, x, y, ksize, strides, pads, dilations, ceil_mode, first, spatial):
    outs, extra = _geometry(spatial, ksize, strides, pads, dilations, ceil_mode)
    padded = _pad(xp, _first(xp, x, first), pads, extra, _lowest(xp, x.dtype))
    inside = _pad(xp, xp.ones((1, 1) + tuple(spatial), dtype=bool), pads, extra, False)
    yf, dyf = _first(xp, y, first), _first(xp, dy, first)
    dx = xp.zeros(padded.shape, dtype=dy.dtype)
    taken = xp.zeros(yf.shape, dtype=bool)
    for off in itertools.product(*[range(k) for k in ksize]):
        hit = (_view(padded, off, outs, strides, dilations) == yf) & ~taken
        hit &= _view(inside, off, outs, strides, dilations)
        _view(dx, off, outs, strides, dilations)[...] += xp.where(hit, dyf, 0)
        taken |= hit
    crop = (slice(None), slice(None)) + tuple(slice(b, b + n) for n, (b, _) in zip(spatial, pads))
    return _back(xp, dx[crop], first)


def max_pool_grad(xp, dy, x, y, *, ksize, strides, pads, data_format, ceil_mode=False, dilations=None):
    """d input of `max_pool`: each window's dy to its first maximal cell."""
    nd, first, ksize, strides, pads, dilations, spatial = _setup(x.shape, ksize, strides, pads, dilations,
                                                                 data_format)
    if _fast_2d(nd, dilations, True):
        k2, s2, p2, f2 = _attrs_2d(nd, ksize, strides, pads, data_format)
        if nd == 2:
            return nn2d.max_pool2d_grad(xp, dy, x, y, ksize=k2, strides=s2, pads=p2, data_format=f2,
                                        ceil_mode=ceil_mode)
        dx = nn2d.max_pool2d_grad(xp, _as_2d(dy, first), _as_2d(x, first), _as_2d(y, first), ksize=k2, strides=s2,
                                  pads=p2, data_format=f2, ceil_mode=ceil_mode)
        return _from_2d(xp, dx, first)
    return _max_pool_grad_nd(xp, dy, x, y, ksize, strides, pads, dilations, ceil_mode, first, spatial)


def max_pool_relu_grad(xp, dy, x, y, *, ksize, strides, pads, data_format, ceil_mode=False, dilations=None):
    """relu_grad(max_pool_grad(dy, x, y), x): the fused pair `passes/fusion.py` makes of a pool of a relu."""
    nd, first, ksize, strides, pads, dilations, spatial = _setup(x.shape, ksize, strides, pads, dilations,
                                                                 data_format)
    if nd == 2 and all(d == 1 for d in dilations):
        return nn2d.max_pool2d_relu_grad(xp, dy, x, y, ksize=ksize, strides=strides, pads=pads,
                                         data_format=data_format, ceil_mode=ceil_mode)
    return max_pool_grad(xp, dy, x, y, ksize=ksize, strides=strides, pads=pads, data_format=data_format,
                         ceil_mode=ceil_mode, dilations=dilations) * (x > 0)


# --- average --------------------------------------------------------------------------------------------------------
def _divisor(xp, spatial, ksize, strides, pads, outs, count_include_pad, divisor_override, dtype):
    """Per-window divisors, shaped (1, 1, *outs)."""
    if divisor_override:
        return dtype.type(divisor_override)
    total = None
    for n, k, s, (b, a), o in zip(spatial, ksize, strides, pads, outs):
        start = xp.arange(o) * s - b
        if count_include_pad:
            c = xp.minimum(start + k, n + a) - start
        else:
            c = xp.minimum(start + k, n) - xp.maximum(start, 0)
        total = c if total is None else total[..., None] * c
    return total.astype(dtype)[None, None]


def _avg_default(count_include_pad, divisor_override, pads):
    """Whether the divisor is the count of input cells (without padding both counts agree)."""
    return not divisor_override and (not count_include_pad or all(b == 0 and a == 0 for b, a in pads))


def avg_pool(xp, x, *, ksize, strides, pads, data_format, ceil_mode=False, count_include_pad=False,
             divisor_override=0):
    """Window means (see the module docstring for the divisor)."""
    nd, first, ksize, strides, pads, _, spatial = _setup(x.shape, ksize, strides, pads, None, data_format)
    if _fast_2d(nd, (1,), _avg_default(count_include_pad, divisor_override, pads)):
        k2, s2, p2, f2 = _attrs_2d(nd, ksize, strides, pads, data_format)
        y = nn2d.avg_pool2d(xp, x if nd == 2 else _as_2d(x, first), ksize=k2, strides=s2, pads=p2, data_format=f2,
                            ceil_mode=ceil_mode)
        return y if nd == 2 else _from_2d(xp, y, first)
    ones = (1,) * nd
    outs, extra = _geometry(spatial, ksize, strides, pads, ones, ceil_mode)
    padded = _pad(xp, _first(xp, x, first), pads, extra, 0)
    total = None
    for off in itertools.product(*[range(k) for k in ksize]):
        v = _view(padded, off, outs, strides, ones)
        total = v.copy() if total is None else xp.add(total, v, out=total)
    total = total / _divisor(xp, spatial, ksize, strides, pads, outs, count_include_pad, divisor_override,
                             xp.dtype(x.dtype))
    return _back(xp, total.astype(x.dtype, copy=False), first)


def avg_pool_grad(xp, dy, *, input_shape, ksize, strides, pads, data_format, ceil_mode=False,
                  count_include_pad=False, divisor_override=0):
    """d input of `avg_pool` (the batch size is dy's)."""
    input_shape = (dy.shape[0],) + tuple(input_shape[1:])
    nd, first, ksize, strides, pads, _, spatial = _setup(input_shape, ksize, strides, pads, None, data_format)
    if _fast_2d(nd, (1,), _avg_default(count_include_pad, divisor_override, pads)):
        k2, s2, p2, f2 = _attrs_2d(nd, ksize, strides, pads, data_format)
        if nd == 2:
            return nn2d.avg_pool2d_grad(xp, dy, input_shape=input_shape, ksize=k2, strides=s2, pads=p2,
                                        data_format=f2, ceil_mode=ceil_mode)
        shape2 = tuple(input_shape[:2]) + (1, input_shape[2]) if first else (input_shape[0], 1) + \
            tuple(input_shape[1:])
        dx = nn2d.avg_pool2d_grad(xp, _as_2d(dy, first), input_shape=shape2, ksize=k2, strides=s2, pads=p2,
                                  data_format=f2, ceil_mode=ceil_mode)
        return _from_2d(xp, dx, first)
    ones = (1,) * nd
    outs, extra = _geometry(spatial, ksize, strides, pads, ones, ceil_mode)
    dyf = _first(xp, dy, first)
    share = dyf / _divisor(xp, spatial, ksize, strides, pads, outs, count_include_pad, divisor_override,
                           xp.dtype(dy.dtype))
    c = dyf.shape[1]
    dx = xp.zeros((dyf.shape[0], c) + tuple(n + b + a + e for n, (b, a), e in zip(spatial, pads, extra)),
                  dtype=dy.dtype)
    for off in itertools.product(*[range(k) for k in ksize]):
        _view(dx, off, outs, strides, ones)[...] += share
    crop = (slice(None), slice(None)) + tuple(slice(b, b + n) for n, (b, _) in zip(spatial, pads))
    return _back(xp, dx[crop], first)


# --- adaptive average (OneFlow 0.9's adaptive_avg_pool1d/2d/3d) -------------------------------------------------
def _bins(size, out):
    """PyTorch's adaptive windows: [floor(i size / out), ceil((i + 1) size / out))."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def adaptive_avg_pool(xp, x, *, output_size, data_format):
    nd = conv_nd.spatial_dims(data_format)
    first = conv_nd.channels_first(data_format)
    xf = _first(xp, x, first)
    spatial = xf.shape[2:]
    out = xp.empty(xf.shape[:2] + tuple(output_size), dtype=x.dtype)
    for idx in itertools.product(*[range(o) for o in output_size]):
        sl = tuple(slice(*_bins(n, o)[i]) for n, o, i in zip(spatial, output_size, idx))
        out[(Ellipsis,) + idx] = xf[(Ellipsis,) + sl].mean(axis=tuple(range(2, 2 + nd)))
    return _back(xp, out, first)


def adaptive_avg_pool_grad(xp, dy, *, input_shape, output_size, data_format):
    nd = conv_nd.spatial_dims(data_format)
    first = conv_nd.channels_first(data_format)
    dyf = _first(xp, dy, first)
    spatial = tuple(input_shape[2:]) if first else tuple(input_shape[1:-1])
    dx = xp.zeros(dyf.shape[:2] + spatial, dtype=dy.dtype)
    for idx in itertools.product(*[range(o) for o in output_size]):
        bins = [_bins(n, o)[i] for n, o, i in zip(spatial, output_size, idx)]
        count = 1
        for a, b in bins:
            count *= b - a
        sl = tuple(slice(a, b) for a, b in bins)
        dx[(Ellipsis,) + sl] += (dyf[(Ellipsis,) + idx] / dy.dtype.type(count))[(Ellipsis,) + (None,) * nd]
    return _back(xp, dx, first)
