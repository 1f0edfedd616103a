"""Compiled (numba) loops for the data movement of `nn.py`: pixel-major patch extraction and its adjoint, the
channel-major adjoint (col2im), samples to and from channels-last with a zero border (the implicit path's
operands), the convolution's bias/activation epilogues, max pooling and its gradient (with
relu_grad fused). Each is the same computation as the numpy path of `nn.py` — which stays the reference and the
fallback — done in one pass over the data instead of one strided numpy operation per window offset.
tests/test_kernels_nn_jit.py checks them against the numpy path.

`AVAILABLE` is False when numba is not installed (a dependency where its wheels exist; the extra
`oneflow_compat[fast]` asks for it anywhere) or when the environment sets ONEFLOW_COMPAT_JIT=0; `nn.py` then
uses numpy alone. (Channel-major patch extraction stays numpy: its copy loops over strided views beat a compiled
element loop there.) Every kernel is compiled nogil: `nn.py` runs ranges of samples on several threads at once.

Conventions: arrays are NCHW and C-contiguous unless said otherwise; padding is virtual (cells outside the input
read as zero for patches and are skipped by pooling); a channel-major patch row is (c, i, j), its column (oy, ox);
a pixel-major patch row is (oy, ox), its column (i, j, c).
"""

import numpy as np

from .jit import AVAILABLE  # noqa: F401 (read by the kernels that choose a path)
from .jit import compiled as _jit


def _span(size, before, k_offset, stride, out):
    """Output positions o in [lo, hi) whose input cell o * stride - before + k_offset lies in [0, size)."""
    start = before - k_offset  # o * stride >= start
    lo = 0 if start <= 0 else (start + stride - 1) // stride
    end = size + before - k_offset  # o * stride < end
    hi = 0 if end <= 0 else (end + stride - 1) // stride
    return min(lo, out), max(min(hi, out), min(lo, out))


_span = _jit(_span)


@_jit
def col2im(dcols, dx, kh, kw, sh, sw, dh, dw, top, left, oh, ow):
    """The adjoint of patch extraction: dx[n, c, iy, ix] = the sum of the patch entries dcols[n, (c, i, j),
    (oy, ox)] read from that cell (iy = oy*sh - top + i*dh, ix = ox*sw - left + j*dw)."""
    m, c_n, h, w = dx.shape
    p = oh * ow
    flat_dx, flat_dcols = dx.reshape(-1), dcols.reshape(-1)
    flat_dx[:] = 0
    for n in range(m):
        for c in range(c_n):
            plane = (n * c_n + c) * h * w
            for i in range(kh):
                y_lo, y_hi = _span(h, top, i * dh, sh, oh)
                for j in range(kw):
                    row = ((n * c_n + c) * kh * kw + i * kw + j) * p
                    x_lo, x_hi = _span(w, left, j * dw, sw, ow)
                    length = x_hi - x_lo
                    ix0 = x_lo * sw - left + j * dw
                    for oy in range(y_lo, y_hi):
                        d = plane + (oy * sh - top + i * dh) * w + ix0
                        # row views: LLVM vectorizes a loop over views, not one over offsets into the whole array
                        src = flat_dcols[row + oy * ow + x_lo:row + oy * ow + x_hi]
                        if sw == 1:
                            dst = flat_dx[d:d + length]
                            for k in range(length):
                                dst[k] += src[k]
                        else:
                            for k in range(length):
                                flat_dx[d + k * sw] += src[k]


@_jit
def channels_last_padded(x, padded, top, left):
    """padded[n] (Hp, Wp, C) = sample x[n] (C, H, W) channels-last, at (top, left) inside a zero border."""
    m, c_n, h, w = x.shape
    hp, wp = padded.shape[1], padded.shape[2]
    zero = padded.dtype.type(0)
    for n in range(m):
        for y in range(hp):
            iy = y - top
            for xx in range(wp):
                ix = xx - left
                cell = padded[n, y, xx]
                if 0 <= iy < h and 0 <= ix < w:
                    for c in range(c_n):
                        cell[c] = x[n, c, iy, ix]
                else:
                    for c in range(c_n):
                        cell[c] = zero


@_jit
def channels_last_cropped(padded, dx, top, left):
    """dx[n] (C, H, W) = the cells of padded[n] (Hp, Wp, C) at (top, left) onwards, back to channels-first."""
    m, c_n, h, w = dx.shape
    for n in range(m):
        for c in range(c_n):
            for iy in range(h):
                row = dx[n, c, iy]
                for ix in range(w):
                    row[ix] = padded[n, iy + top, ix + left, c]


@_jit
def _window_runs(flat, cols, c_n, wp, kh, kw, sh, sw, dh, dw, oh, ow, gather):
    """Between the channels-last padded sample `flat` and the pixel-major patches `cols`, one contiguous run per
    pixel and window row (kw * C values; C each when dilated): copied into cols when `gather`, else added from
    cols into flat (the adjoint)."""
    run, step = (kw * c_n, kw) if dw == 1 else (c_n, 1)
    for oy in range(oh):
        for ox in range(ow):
            patch = cols[oy * ow + ox]
            for i in range(kh):
                for j in range(0, kw, step):
                    s = ((oy * sh + i * dh) * wp + ox * sw + j * dw) * c_n
                    d = (i * kw + j) * c_n
                    cells, row = flat[s:s + run], patch[d:d + run]
                    if gather:
                        for k in range(run):
                            row[k] = cells[k]
                    else:
                        for k in range(run):
                            cells[k] += row[k]


@_jit
def pixel_patches(x, padded, cols, kh, kw, sh, sw, dh, dw, top, left, oh, ow):
    """One sample's pixel-major patch matrix: cols[oy * ow + ox, (i * kw + j) * C + c] = x[c, oy*sh - top + i*dh,
    ox*sw - left + j*dw], 0 outside x. Through `padded` (Hp, Wp, C): the sample channels-last with a zero border,
    where one window row's kw * C values lie together (C each when dilated), so each is one contiguous copy."""
    channels_last_padded(x.reshape((1,) + x.shape), padded.reshape((1,) + padded.shape), top, left)
    _window_runs(padded.reshape(-1), cols, x.shape[0], padded.shape[1], kh, kw, sh, sw, dh, dw, oh, ow, True)


@_jit
def pixel_col2im(dcols, padded, dx, kh, kw, sh, sw, dh, dw, top, left, oh, ow):
    """The adjoint of `pixel_patches`: dx[c, iy, ix] = the sum of the entries of dcols read from that cell, added
    up in the channels-last scratch `padded` (one contiguous run per pixel and window row), then transposed out."""
    flat = padded.reshape(-1)
    flat[:] = 0
    _window_runs(flat, dcols, dx.shape[0], padded.shape[1], kh, kw, sh, sw, dh, dw, oh, ow, False)
    channels_last_cropped(padded.reshape((1,) + padded.shape), dx.reshape((1,) + dx.shape), top, left)


@_jit
def pixel_epilogue(prod, out, b, relu):
    """out[f, p] = prod[p, f] (+ b[f] when b is not empty, then max(., 0) when `relu`): one sample's pixel-major
    product back to the NCHW layout, with the bias and activation, 16 pixels at a time (a tile in L1)."""
    p_n, f_n = prod.shape
    zero = out.dtype.type(0)
    bias = b.shape[0] > 0
    for p0 in range(0, p_n, 16):
        p1 = min(p_n, p0 + 16)
        for f in range(f_n):
            bf = b[f] if bias else zero
            row = out[f]
            for p in range(p0, p1):
                v = prod[p, f] + bf if bias else prod[p, f]
                row[p] = zero if relu and v < zero else v


@_jit
def bias_act(out, b, relu):
    """out[n, f, :] += b[f], then max(., 0) when `relu` — the convolution's epilogue on a cache-hot chunk."""
    m, f_n, p = out.shape
    zero = out.dtype.type(0)
    for n in range(m):
        for f in range(f_n):
            bf = b[f]
            if relu:
                for k in range(p):
                    v = out[n, f, k] + bf
                    # as numpy's maximum(v, 0): NaN and -0.0 stay
                    out[n, f, k] = zero if v < zero else v
            else:
                for k in range(p):
                    out[n, f, k] += bf


@_jit
def _max(m, v):
    """numpy's maximum(m, v): m if m >= v or m is NaN, else v (a NaN v wins)."""
    return v if (v > m or v != v) else m


@_jit
def max_pool(x, y, kh, kw, sh, sw, top, left):
    """y: each window's maximum over its real cells, as numpy's maximum folds them in window order (NaN wins);
    -inf for a window of padding only."""
    m, c_n, h, w = x.shape
    oh, ow = y.shape[2], y.shape[3]
    pairs = kh == sh == 2 and kw == sw == 2 and top == 0 and left == 0 and 2 * oh <= h and 2 * ow <= w
    for n in range(m):
        for c in range(c_n):
            xs, ys = x[n, c], y[n, c]
            if pairs:
                # LeNet's 2x2 / 2: straight-line code over two input rows
                for oy in range(oh):
                    r0, r1, out = xs[2 * oy], xs[2 * oy + 1], ys[oy]
                    for ox in range(ow):
                        out[ox] = _max(_max(_max(r0[2 * ox], r0[2 * ox + 1]), r1[2 * ox]), r1[2 * ox + 1])
                continue
            for oy in range(oh):
                y0 = oy * sh - top
                for ox in range(ow):
                    x0 = ox * sw - left
                    best = xs.dtype.type(-np.inf)
                    for i in range(max(0, -y0), min(kh, h - y0)):
                        row = xs[y0 + i]
                        for j in range(max(0, -x0), min(kw, w - x0)):
                            best = _max(best, row[x0 + j])
                    ys[oy, ox] = best


@_jit
def _max_pool_grad_pairs(xs, ys, dys, dxs, relu):
    """The 2x2 / 2 windows tiling one plane exactly: which cell is the first maximum is worked out without
    branches (a branch per window mispredicts on real data and cost twice the time)."""
    zero = xs.dtype.type(0)
    for oy in range(ys.shape[0]):
        r0, r1, t_row, g_row = xs[2 * oy], xs[2 * oy + 1], ys[oy], dys[oy]
        d0, d1 = dxs[2 * oy], dxs[2 * oy + 1]
        for ox in range(ys.shape[1]):
            t, g = t_row[ox], g_row[ox]
            a, b, c, d = r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]
            ea, eb, ec, ed = np.int32(a == t), np.int32(b == t), np.int32(c == t), np.int32(d == t)
            ha, hb, hc, hd = ea, eb & (1 - ea), ec & (1 - (ea | eb)), ed & (1 - (ea | eb | ec))
            if relu:
                ha &= np.int32(a > zero)
                hb &= np.int32(b > zero)
                hc &= np.int32(c > zero)
                hd &= np.int32(d > zero)
            d0[2 * ox] = g if ha else zero
            d0[2 * ox + 1] = g if hb else zero
            d1[2 * ox] = g if hc else zero
            d1[2 * ox + 1] = g if hd else zero


@_jit
def max_pool_grad(dy, x, y, dx, kh, kw, sh, sw, top, left, relu):
    """dx: each window's dy to its first real cell (window order) equal to the window's maximum y; with `relu`,
    only where that cell is positive (relu_grad of the pool's input, fused)."""
    m, c_n, h, w = x.shape
    oh, ow = y.shape[2], y.shape[3]
    zero = x.dtype.type(0)
    tiled = kh == sh and kw == sw and top == 0 and left == 0 and oh * kh == h and ow * kw == w
    for n in range(m):
        for c in range(c_n):
            xs, ys, dys, dxs = x[n, c], y[n, c], dy[n, c], dx[n, c]
            if tiled and kh == kw == 2:
                _max_pool_grad_pairs(xs, ys, dys, dxs, relu)
                continue
            if tiled:
                # windows cover every cell once: each cell is written once, no zeroing pass, no accumulation
                for oy in range(oh):
                    for ox in range(ow):
                        target, g = ys[oy, ox], dys[oy, ox]
                        hit = False
                        for i in range(kh):
                            row, out = xs[oy * kh + i], dxs[oy * kh + i]
                            for j in range(kw):
                                v = row[ox * kw + j]
                                if not hit and v == target:
                                    hit = True
                                    out[ox * kw + j] = g if (not relu or v > zero) else zero
                                else:
                                    out[ox * kw + j] = zero
                continue
            dxs[:, :] = 0
            for oy in range(oh):
                y0 = oy * sh - top
                for ox in range(ow):
                    x0 = ox * sw - left
                    target = ys[oy, ox]
                    hit = False
                    for i in range(max(0, -y0), min(kh, h - y0)):
                        row = xs[y0 + i]
                        for j in range(max(0, -x0), min(kw, w - x0)):
                            v = row[x0 + j]
                            if v == target:
                                if not relu or v > zero:
                                    dxs[y0 + i, x0 + j] += dys[oy, ox]
                                hit = True
                                break
                        if hit:
                            break
