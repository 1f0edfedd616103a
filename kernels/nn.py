"""2-D convolution and pooling, forward and backward, NCHW or NHWC.

Padding is always explicit: pads = ((top, bottom), (left, right)); the op layer turns
"SAME"/"VALID" into pads with `same_pads`. Pooling works on an NCHW *view* of the
data (a transpose, no copy, for NHWC); every result is made contiguous in the
caller's layout at the end.

Convolution is im2col + one batched matmul over the groups, in a channel-major
working layout with the batch innermost or outermost (see the convolution section). Pooling and col2im loop only over the
kh*kw window offsets, each step one strided-slice operation over all windows.
"""
import numbers
import threading

_FORMATS = ("NCHW", "NHWC")


# --- geometry helpers (pure Python, shared with the op layer) ---------------------

def _pair(value, name):
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * 2
    if len(value) != 2:
        raise ValueError("%s should be of length 1 or 2 but was %d" % (name, len(value)))
    return value


def _pads(pads):
    if isinstance(pads, numbers.Integral):
        return ((int(pads), int(pads)), (int(pads), int(pads)))
    (top, bottom), (left, right) = pads
    pads = ((int(top), int(bottom)), (int(left), int(right)))
    if min(top, bottom, left, right) < 0:
        raise ValueError("pads must be non-negative, got %s" % (pads,))
    return pads


def same_pads(in_hw, kernel_hw, strides, dilations=1, lower=True):
    """Explicit pads for "SAME" padding: out = ceil(in / stride),
    need = max(0, (out - 1) * stride + (k - 1) * d + 1 - in).

    SAME_LOWER (lower=True, the legacy meaning of "SAME") puts ceil(need / 2) before
    and floor(need / 2) after; SAME_UPPER (TF's "SAME") the opposite.
    Returns ((top, bottom), (left, right)).
    """
    pads = []
    for size, k, s, d in zip(_pair(in_hw, "in_hw"), _pair(kernel_hw, "kernel_hw"),
                             _pair(strides, "strides"), _pair(dilations, "dilations")):
        out = -(-size // s)
        need = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = need // 2, need - need // 2
        pads.append((large, small) if lower else (small, large))
    return tuple(pads)


def conv_out_hw(in_hw, kernel_hw, strides, pads, dilations=1, ceil_mode=False):
    """Output (height, width) of a window op over explicitly padded input.

    floor((in + pads - ((k - 1) * d + 1)) / s) + 1, or with ceil_mode the ceiling,
    dropping a last window that would start inside the bottom/right padding (the
    PyTorch rule), so every window overlaps the input.
    """
    out = []
    for size, k, s, d, (before, after) in zip(_pair(in_hw, "in_hw"), _pair(kernel_hw, "kernel_hw"),
                                             _pair(strides, "strides"), _pair(dilations, "dilations"),
                                             _pads(pads)):
        span = size + before + after - ((k - 1) * d + 1)
        if span < 0:
            raise ValueError("window %d (dilation %d) larger than padded input %d"
                             % (k, d, size + before + after))
        if ceil_mode:
            n = -(-span // s) + 1
            if (n - 1) * s >= size + before:
                n -= 1
        else:
            n = span // s + 1
        out.append(n)
    return tuple(out)


# --- layout helpers ----------------------------------------------------------------

def _check_format(data_format):
    if data_format not in _FORMATS:
        raise ValueError("data_format must be 'NCHW' or 'NHWC', got %r" % (data_format,))


def _as_nchw(x, data_format):
    return x if data_format == "NCHW" else x.transpose(0, 3, 1, 2)


def _nchw_shape(shape, data_format):
    n, a, b, c = shape
    return (n, a, b, c) if data_format == "NCHW" else (n, c, a, b)


def _from_nchw(xp, y, data_format):
    return xp.ascontiguousarray(y if data_format == "NCHW" else y.transpose(0, 2, 3, 1))


def _weight_as_fchw(w, data_format):
    return w if data_format == "NCHW" else w.transpose(0, 3, 1, 2)


def _pad_nchw(xp, x, pads, fill, extra=(0, 0)):
    """Spatially padded copy of an NCHW(-view) array; `extra` adds cells at the
    bottom/right (ceil_mode windows). Returns x itself when nothing is padded."""
    (top, bottom), (left, right) = pads
    bottom += extra[0]
    right += extra[1]
    if top == bottom == left == right == 0:
        return x
    n, c, h, w = x.shape
    out = xp.full((n, c, h + top + bottom, w + left + right), fill, dtype=x.dtype)
    out[:, :, top:top + h, left:left + w] = x
    return out


def _window(a, i, j, out_hw, strides):
    """The cells at offset (i, j) of every window: a strided slice of the last 2 axes."""
    (oh, ow), (sh, sw) = out_hw, strides
    return a[..., i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]


# --- convolution -------------------------------------------------------------------
#
# The kernels work in one of two layouts, both channel-major so that the patch matrix
# rows (c, i, j) match the weight's:
#   batch inner (C, H, W, N): a window offset (i, j) selects, per channel, rows of
#     OW * N contiguous elements (stride 1), so im2col and col2im move long runs;
#     but the output and dy need a costly transpose with the batch innermost.
#   batch outer (C, N, H, W): runs of only OW elements, but cheap transposes.
# The copy/add work of im2col/col2im grows with C * kh * kw, the transposes do not,
# so layers with many patch rows use batch inner and thin ones (e.g. a first layer
# with one input channel) batch outer. Patch columns follow the layout: (oh, ow, n)
# or (n, oh, ow).

_BATCH_INNER_MIN_PATCH_ROWS = 128

_workspaces = threading.local()


def _workspace(xp, shape, dtype):
    """Scratch array for patch matrices, reused across calls of the same thread.

    Freshly allocated buffers of this size (tens of MB) cost as much in page faults
    as the copy into them; reusing one per thread (grown on demand) avoids that.
    The contents never leave the kernel that asked for it. numpy only: CuPy's
    memory pool already reuses device memory.
    """
    if xp.__name__ != "numpy":
        return xp.empty(shape, dtype=dtype)
    size = 1
    for dim in shape:
        size *= dim
    dtype = xp.dtype(dtype)
    buffers = getattr(_workspaces, "buffers", None)
    if buffers is None:
        buffers = _workspaces.buffers = {}
    buffer = buffers.get(dtype)
    if buffer is None or buffer.size < size:
        buffer = buffers[dtype] = xp.empty(size, dtype=dtype)
    return buffer[:size].reshape(shape)


def _conv_setup(x_shape, w_shape, strides, pads, dilations, groups, data_format):
    _check_format(data_format)
    n, c, h, w = _nchw_shape(x_shape, data_format)
    f, cg, kh, kw = w_shape if data_format == "NCHW" else (w_shape[0], w_shape[3], w_shape[1], w_shape[2])
    if groups < 1 or c != cg * groups or f % groups:
        raise ValueError("conv2d: %d input channels, weight of %d filters x %d channels and groups=%d "
                         "do not fit" % (c, f, cg, groups))
    strides, dilations, pads = _pair(strides, "strides"), _pair(dilations, "dilations"), _pads(pads)
    out_hw = conv_out_hw((h, w), (kh, kw), strides, pads, dilations)
    return (n, c, h, w), (f, cg, kh, kw), strides, pads, dilations, out_hw


class _Layout:
    """Axis bookkeeping of a working layout (see the section comment)."""

    def __init__(self, batch_inner):
        self.batch_inner = batch_inner
        # NCHW -> working, and working -> NCHW / NHWC
        self.from_nchw = (1, 2, 3, 0) if batch_inner else (1, 0, 2, 3)
        self.to_nchw = (3, 0, 1, 2) if batch_inner else (1, 0, 2, 3)
        self.to_nhwc = (3, 1, 2, 0) if batch_inner else (1, 2, 3, 0)

    def shape(self, c, n, h, w):
        return (c, h, w, n) if self.batch_inner else (c, n, h, w)

    def spatial(self, rows, cols):
        """Index selecting `rows` x `cols` of the spatial axes of a working array."""
        return (slice(None), rows, cols, slice(None)) if self.batch_inner else (slice(None), slice(None), rows, cols)

    def to_working(self, a, data_format):
        """Caller-layout array -> working-layout view."""
        return _as_nchw(a, data_format).transpose(self.from_nchw)

    def to_caller(self, xp, a, data_format):
        """Working-layout array -> caller's layout, contiguous."""
        return xp.ascontiguousarray(a.transpose(self.to_nchw if data_format == "NCHW" else self.to_nhwc))


def _layout_for(c, kh, kw):
    return _Layout(c * kh * kw >= _BATCH_INNER_MIN_PATCH_ROWS)


def _im2col(xp, x, data_format, layout, kernel_hw, strides, pads, dilations, out_hw):
    """Patch matrix (C * kh * kw, OH * OW * N) in a workspace; rows (c, i, j)."""
    n, c, h, w = _nchw_shape(x.shape, data_format)
    (top, bottom), (left, right) = pads
    padded = xp.zeros(layout.shape(c, n, h + top + bottom, w + left + right), dtype=x.dtype)
    padded[layout.spatial(slice(top, top + h), slice(left, left + w))] = layout.to_working(x, data_format)
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel_hw, strides, dilations, out_hw
    if layout.batch_inner:
        s_c, s_h, s_w, s_n = padded.strides
        shape, strides_ = (c, kh, kw, oh, ow, n), (s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw, s_n)
    else:
        s_c, s_n, s_h, s_w = padded.strides
        shape, strides_ = (c, kh, kw, n, oh, ow), (s_c, s_h * dh, s_w * dw, s_n, s_h * sh, s_w * sw)
    patches = xp.lib.stride_tricks.as_strided(padded, shape=shape, strides=strides_)
    cols = _workspace(xp, shape, x.dtype)
    cols[...] = patches
    return cols.reshape(c * kh * kw, oh * ow * n)


def _weight_groups(w, data_format, groups):
    """Weight as (groups, F / groups, C / groups * kh * kw), rows (c, i, j) like the patches."""
    f = w.shape[0]
    return _weight_as_fchw(w, data_format).reshape(groups, f // groups, -1)


def conv2d(xp, x, w, *, strides=1, pads=((0, 0), (0, 0)), dilations=1, groups=1, data_format="NCHW"):
    """Cross-correlation. Weight layout: NCHW (F, C/groups, kh, kw); NHWC (F, kh, kw, C/groups)."""
    (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, (oh, ow) = _conv_setup(
        x.shape, w.shape, strides, pads, dilations, groups, data_format)
    if x.size == 0 or w.size == 0:
        # an empty piece (a split axis shorter than the device count) contributes zeros
        return xp.zeros((n, f, oh, ow) if data_format == "NCHW" else (n, oh, ow, f), dtype=x.dtype)
    layout = _layout_for(c, kh, kw)
    cols = _im2col(xp, x, data_format, layout, (kh, kw), strides, pads, dilations, (oh, ow))
    out = _group_matmul(xp, _weight_groups(w, data_format, groups), cols.reshape(groups, cg * kh * kw, -1))
    return layout.to_caller(xp, out.reshape(layout.shape(f, n, oh, ow)), data_format)


def _dy_groups(xp, dy, data_format, layout, groups):
    """dy -> (groups, F / groups, OH * OW * N), the layout conv2d's matmul produced."""
    dy_work = xp.ascontiguousarray(layout.to_working(dy, data_format))
    return dy_work.reshape(groups, dy_work.shape[0] // groups, -1)


def _group_matmul(xp, a, b, out=None):
    """Per-group matrix products of (g, m, k) and (g, k, n). numpy runs a stacked `matmul` of shapes like
    (1, 25, 78400) x (1, 78400, 32) through its own loops (seconds, not milliseconds): one 2-D BLAS product per
    group instead."""
    g = a.shape[0]
    if out is None:
        out = xp.empty((g, a.shape[1], b.shape[2]), dtype=xp.result_type(a, b))
    for i in range(g):
        xp.matmul(_blas_ready(xp, a[i]), _blas_ready(xp, b[i]), out=out[i])
    return out


def _blas_ready(xp, m):
    """A 2-D operand BLAS takes as is (C or Fortran order); anything else is copied once, since numpy's fallback
    loop for other strides is orders of magnitude slower."""
    return m if (m.flags.c_contiguous or m.flags.f_contiguous) else xp.ascontiguousarray(m)


def conv2d_grad_weight(xp, dy, x, *, weight_shape, strides=1, pads=((0, 0), (0, 0)), dilations=1,
                       groups=1, data_format="NCHW"):
    """d weight of `conv2d`, in `weight_shape` (the caller's weight layout)."""
    (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, out_hw = _conv_setup(
        x.shape, weight_shape, strides, pads, dilations, groups, data_format)
    if dy.size == 0 or x.size == 0:
        return xp.zeros(tuple(weight_shape), dtype=dy.dtype)
    layout = _layout_for(c, kh, kw)
    cols = _im2col(xp, x, data_format, layout, (kh, kw), strides, pads, dilations, out_hw)
    cols = cols.reshape(groups, cg * kh * kw, -1)
    # computed transposed, patches @ dy^T: OpenBLAS runs this orientation markedly
    # faster than dy @ patches^T for these shapes (long reduction over pixels)
    dw_t = _group_matmul(xp, cols, _dy_groups(xp, dy, data_format, layout, groups).transpose(0, 2, 1))
    dw = dw_t.transpose(0, 2, 1).reshape(f, cg, kh, kw)
    return xp.ascontiguousarray(dw if data_format == "NCHW" else dw.transpose(0, 2, 3, 1))


def conv2d_grad_input(xp, dy, w, *, input_shape, strides=1, pads=((0, 0), (0, 0)), dilations=1,
                      groups=1, data_format="NCHW"):
    """d input of `conv2d`, in `input_shape` with dy's batch size (a dynamic batch may hold fewer rows than the
    static shape says): patch gradients by one matmul, then col2im adds them back, one strided-slice add per
    kernel offset."""
    input_shape = (dy.shape[0],) + tuple(input_shape[1:])
    (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, (oh, ow) = _conv_setup(
        input_shape, w.shape, strides, pads, dilations, groups, data_format)
    if dy.size == 0 or w.size == 0:
        return xp.zeros(input_shape, dtype=dy.dtype)
    layout = _layout_for(c, kh, kw)
    dcols = _workspace(xp, (groups, cg * kh * kw, oh * ow * n), dy.dtype)
    _group_matmul(xp, _weight_groups(w, data_format, groups).transpose(0, 2, 1),
                  _dy_groups(xp, dy, data_format, layout, groups), out=dcols)
    dcols = dcols.reshape((c, kh, kw) + layout.shape(1, n, oh, ow)[1:])
    (top, bottom), (left, right) = pads
    (sh, sw), (dh, dw) = strides, dilations
    dx = xp.zeros(layout.shape(c, n, h + top + bottom, wd + left + right), dtype=dy.dtype)
    for i in range(kh):
        for j in range(kw):
            window = layout.spatial(slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                                    slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))
            dx[window] += dcols[:, i, j]
    return layout.to_caller(xp, dx[layout.spatial(slice(top, top + h), slice(left, left + wd))], data_format)


# --- pooling -----------------------------------------------------------------------

def _pool_setup(x_shape, ksize, strides, pads, data_format, ceil_mode):
    _check_format(data_format)
    n, c, h, w = _nchw_shape(x_shape, data_format)
    ksize, strides, pads = _pair(ksize, "ksize"), _pair(strides, "strides"), _pads(pads)
    out_hw = conv_out_hw((h, w), ksize, strides, pads, 1, ceil_mode)
    # ceil_mode windows may reach past the bottom/right padding: pad those cells too
    extra = tuple(max(0, (o - 1) * s + k - (size + before + after))
                  for o, s, k, size, (before, after) in zip(out_hw, strides, ksize, (h, w), pads))
    return (h, w), ksize, strides, pads, out_hw, extra


def _lowest(xp, dtype):
    return -xp.inf if xp.dtype(dtype).kind == "f" else xp.iinfo(dtype).min


def max_pool2d(xp, x, *, ksize, strides, pads=((0, 0), (0, 0)), data_format="NCHW", ceil_mode=False):
    """Window maximum; padded cells hold the lowest value, so they never win."""
    _, ksize, strides, pads, out_hw, extra = _pool_setup(x.shape, ksize, strides, pads, data_format,
                                                         ceil_mode)
    padded = _pad_nchw(xp, _as_nchw(x, data_format), pads, _lowest(xp, x.dtype), extra)
    out = _window(padded, 0, 0, out_hw, strides).copy()
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            if i or j:
                xp.maximum(out, _window(padded, i, j, out_hw, strides), out=out)
    return _from_nchw(xp, out, data_format)


def _valid_cells(xp, hw, pads, extra):
    """Bool (Hp, Wp) map of the padded plane: True on real input cells."""
    (h, w), ((top, bottom), (left, right)) = hw, pads
    valid = xp.zeros((h + top + bottom + extra[0], w + left + right + extra[1]), dtype=bool)
    valid[top:top + h, left:left + w] = True
    return valid


def max_pool2d_grad(xp, dy, x, y, *, ksize, strides, pads=((0, 0), (0, 0)), data_format="NCHW",
                    ceil_mode=False):
    """d input of `max_pool2d`: each window's dy goes to its arg-max cell.

    On ties the first maximal cell in window order (row-major over the window:
    top row first, left to right) gets all of dy. `y` is the forward output.
    """
    hw, ksize, strides, pads, out_hw, extra = _pool_setup(x.shape, ksize, strides, pads, data_format,
                                                          ceil_mode)
    if (tuple(ksize) == tuple(strides) and pads == ((0, 0), (0, 0)) and tuple(extra) == (0, 0)
            and hw[0] % ksize[0] == 0 and hw[1] % ksize[1] == 0):
        return _max_pool2d_grad_tiled(xp, dy, x, y, ksize, data_format)
    padded = _pad_nchw(xp, _as_nchw(x, data_format), pads, _lowest(xp, x.dtype), extra)
    valid = _valid_cells(xp, hw, pads, extra)
    y_nchw, dy_nchw = _as_nchw(y, data_format), _as_nchw(dy, data_format)
    dx = xp.zeros(padded.shape, dtype=dy.dtype)
    taken = xp.zeros(y_nchw.shape, dtype=bool)
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            hit = (_window(padded, i, j, out_hw, strides) == y_nchw) & ~taken
            hit &= _window(valid, i, j, out_hw, strides)
            _window(dx, i, j, out_hw, strides)[...] += xp.where(hit, dy_nchw, 0)
            taken |= hit
    (top, _), (left, _) = pads
    h, w = hw
    return _from_nchw(xp, dx[:, :, top:top + h, left:left + w], data_format)


def _max_pool2d_grad_tiled(xp, dy, x, y, ksize, data_format):
    """Windows that tile the input exactly (k == stride, no padding, the usual 2x2/2): the kernel offsets are
    plain views of the input and of dx, so no padded copy and no validity mask; same first-maximum rule."""
    xn, yn, dyn = _as_nchw(x, data_format), _as_nchw(y, data_format), _as_nchw(dy, data_format)
    n, c, h, w = xn.shape
    (kh, kw), (oh, ow) = ksize, (h // ksize[0], w // ksize[1])
    xr = xn.reshape(n, c, oh, kh, ow, kw)
    dx = xp.zeros((n, c, oh, kh, ow, kw), dtype=dy.dtype)
    taken = xp.zeros(yn.shape, dtype=bool)
    hit = xp.empty(yn.shape, dtype=bool)
    for i in range(kh):
        for j in range(kw):
            xp.equal(xr[:, :, :, i, :, j], yn, out=hit)
            hit &= ~taken
            xp.multiply(dyn, hit, out=dx[:, :, :, i, :, j])
            taken |= hit
    return _from_nchw(xp, dx.reshape(n, c, h, w), data_format)


def _valid_counts(xp, hw, ksize, strides, pads, out_hw, dtype):
    """(OH, OW) number of real input cells under each window."""
    counts = []
    for size, k, s, (before, _), o in zip(hw, ksize, strides, pads, out_hw):
        start = xp.arange(o) * s - before
        counts.append(xp.minimum(start + k, size) - xp.maximum(start, 0))
    return (counts[0][:, None] * counts[1][None, :]).astype(dtype)


def avg_pool2d(xp, x, *, ksize, strides, pads=((0, 0), (0, 0)), data_format="NCHW", ceil_mode=False):
    """Window mean over the real (unpadded) cells only: divisor = their count."""
    hw, ksize, strides, pads, out_hw, extra = _pool_setup(x.shape, ksize, strides, pads, data_format,
                                                          ceil_mode)
    padded = _pad_nchw(xp, _as_nchw(x, data_format), pads, 0, extra)
    total = _window(padded, 0, 0, out_hw, strides).copy()
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            if i or j:
                total += _window(padded, i, j, out_hw, strides)
    total /= _valid_counts(xp, hw, ksize, strides, pads, out_hw, x.dtype)
    return _from_nchw(xp, total, data_format)


def avg_pool2d_grad(xp, dy, *, input_shape, ksize, strides, pads=((0, 0), (0, 0)), data_format="NCHW",
                    ceil_mode=False):
    """d input of `avg_pool2d`: dy / count spread over each window's real cells. The batch size is dy's; only
    the spatial size is read from `input_shape`."""
    hw, ksize, strides, pads, out_hw, extra = _pool_setup(input_shape, ksize, strides, pads,
                                                          data_format, ceil_mode)
    share = _as_nchw(dy, data_format) / _valid_counts(xp, hw, ksize, strides, pads, out_hw, dy.dtype)
    (top, bottom), (left, right) = pads
    h, w = hw
    n, c = share.shape[:2]
    dx = xp.zeros((n, c, h + top + bottom + extra[0], w + left + right + extra[1]), dtype=dy.dtype)
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            _window(dx, i, j, out_hw, strides)[...] += share
    return _from_nchw(xp, dx[:, :, top:top + h, left:left + w], data_format)
