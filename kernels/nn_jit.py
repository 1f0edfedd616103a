"""Compiled (numba) loops for the data movement of `nn.py`: the adjoint of patch extraction (col2im), the
convolution's bias/activation epilogue, and the max pooling gradient (with relu_grad fused). Each is the same computation as the numpy path of `nn.py` — which stays the
reference and the fallback — done in one pass over the data instead of one strided numpy operation per window
offset. tests/test_kernels_nn_jit.py checks them against the numpy path.

`AVAILABLE` is False when numba is not installed (it is the optional extra `oneflow_compat[fast]`) or when the
environment sets ONEFLOW_COMPAT_JIT=0; `nn.py` then uses numpy alone. (Patch extraction and the max pooling forward stay numpy: its copy and
maximum loops over strided views beat a compiled element loop there.)

Conventions: arrays are NCHW and C-contiguous; padding is virtual (cells outside the input read as zero for
patches and are skipped by pooling); a patch row is (c, i, j), a patch column (oy, ox).
"""
import os

try:
    if os.environ.get("ONEFLOW_COMPAT_JIT", "1") == "0":
        raise ImportError("disabled by ONEFLOW_COMPAT_JIT=0")
    import numba
except ImportError:
    numba = None

AVAILABLE = numba is not None


def _jit(fn):
    # nogil: kernels of different in-process devices may run in threads; cache: compile once per machine
    return numba.njit(cache=True, nogil=True)(fn) if AVAILABLE else fn


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
