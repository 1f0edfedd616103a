"""CUDA kernels of the convolution and pooling ops on a device, each with its numpy twin (kernels/cuda_source.py).

On a device the whole batch is one launch: the CPU's chunking by cache size (kernels/nn.py) is a CPU rule. A
convolution is im2col (patches of the whole batch, channel-major: (N, C·kh·kw, OH·OW)), one batched product, and
the bias/activation epilogue in place; its input gradient is one batched product and col2im; its weight gradient
one launch writing the patches and dy with the batch inside the reduction axis, then one product (G batched for
groups) whose reduction runs over (sample, position). Pooling, forward and backward, is one launch each; the max
pool gradient gathers (a thread per input cell finds the windows whose first maximal cell it is: no atomics), and
so do col2im and the average pool gradient, each cell summing its contributions in the order the numpy path adds
them — so the values are those of the numpy path (kernels/nn.py), bit for bit where no exp/log is involved.

Geometry (all NCHW, explicit pads): kh, kw window; sh, sw strides; dh, dw dilations; top, left pads; (oh, ow) the
output plane. A window cell (i, j) of output (oy, ox) reads input (oy·sh − top + i·dh, ox·sw − left + j·dw);
cells outside the input are padding (zeros for patches and averages; never the maximum).

Compiled with --fmad=false: no multiply-add contraction, so sums and products round as numpy's do.
"""
import numpy

from .cuda_source import CudaModule

_HEADER = r"""
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#define GRID_LOOP(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

// The window geometry along one axis, written once for every kernel below: stride s, dilation d, `before` cells of
// padding, `size` input cells, `o` outputs.
// The input that cell i of output u's window reads, or -1 where that cell is padding.
template <typename I>
__device__ __forceinline__ I window_cell(I u, I i, int s, int d, int before, I size) {
    I t = u * s - before + i * d;
    return t >= 0 && t < size ? t : -1;
}

// The output whose window reads input t through its cell i, or -1 where none does. Strides 1 and 2 (LeNet's
// convolutions and poolings) without a division: the gradient kernels call this kh + kh·kw times per item, and an
// integer division is a routine of ~20 instructions on a GPU (s is the same for every thread: no divergence).
template <typename I>
__device__ __forceinline__ I window_reading(I t, I i, int s, int d, int before, I o) {
    I u = t + before - i * d;
    if (u < 0) return -1;
    if (s == 1) {
    } else if (s == 2) {
        if (u & 1) return -1;
        u >>= 1;
    } else {
        if (u % s) return -1;
        u /= s;
    }
    return u < o ? u : -1;
}

// How many input cells output u's window (k cells, no dilation) covers, padding excluded: the average's divisor.
__device__ __forceinline__ long long window_count(long long u, int k, int s, int before, long long size) {
    long long first = u * s - before;
    return (first + k < size ? first + k : size) - (first > 0 ? first : 0);
}

// Index arithmetic in 32 bits where every index of the launch fits (`narrow`): a GPU has no integer divider, a
// 64-bit division is a software routine (at best, where the compiler bypasses it for operands that fit, a run-time
// check and then the 32-bit routine) and a 64-bit product several instructions, and the kernels below divide their
// flat index 4 to 6 times per item (LeNet's patches: ~18 M items a step, the index arithmetic rather than the
// bytes their bound on an H100: to be measured). A kernel's body is a template on its index type I;
// its extern "C" function runs the int body where `narrow` holds, else the long long one: the same items, the same
// values.
__device__ __forceinline__ bool narrow(long long a, long long b) {
    return a < (1LL << 30) && b < (1LL << 30);
}

#define GRID_LOOP_I(i, n) \
    for (I i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < (n); i += (I)(blockDim.x * gridDim.x))

// The gather of the gradient kernels (a thread per input cell, no atomics): the statement after it runs for every
// output (oy, ox) whose window reads input (y, xx), through its cell (i, j), in (i, j) order — the order in which
// the numpy twins add the contributions. Uses the kernel's kh, kw, sh, sw, top, left, oh, ow.
#define FOR_WINDOWS_READING(y, xx, dh, dw) \
    for (int i = 0; i < kh; ++i) \
        if (I oy = window_reading<I>(y, (I)i, sh, dh, top, oh); oy >= 0) \
            for (int j = 0; j < kw; ++j) \
                if (I ox = window_reading<I>(xx, (I)j, sw, dw, left, ow); ox >= 0)

// The scan of the forward kernels: the statement after it runs for every cell (i, j) of output (oy, ox)'s window
// (no dilation) that lies inside the input, reading input (y, xx), rows top to bottom, each left to right.
#define FOR_WINDOW_CELLS(oy, ox, y, xx) \
    for (int i = 0; i < kh; ++i) \
        if (I y = window_cell<I>(oy, (I)i, sh, 1, top, h); y >= 0) \
            for (int j = 0; j < kw; ++j) \
                if (I xx = window_cell<I>(ox, (I)j, sw, 1, left, w); xx >= 0)
"""

_TEMPLATE = r"""

template <typename I>
__device__ __forceinline__ void im2col_body_{S}(const {T}* x, {T}* cols, I n, I c, I h, I w, int kh, int kw, int sh,
                                                int sw, int dh, int dw, int top, int left, I oh, I ow) {
    GRID_LOOP_I(idx, n * c * kh * kw * oh * ow) {
        I q = idx;
        I ox = q % ow; q /= ow;
        I oy = q % oh; q /= oh;
        I j = q % kw; q /= kw;
        I i = q % kh; q /= kh;
        I ch = q % c;
        I s = q / c;
        I y = window_cell<I>(oy, i, sh, dh, top, h), xx = window_cell<I>(ox, j, sw, dw, left, w);
        cols[idx] = (y >= 0 && xx >= 0) ? x[((s * c + ch) * h + y) * w + xx] : ({T})0;
    }
}

extern "C" __global__ void im2col_{S}(const {T}* x, {T}* cols, long long n, long long c, long long h, long long w,
                                      int kh, int kw, int sh, int sw, int dh, int dw, int top, int left,
                                      long long oh, long long ow) {
    if (narrow(n * c * kh * kw * oh * ow, n * c * h * w))
        im2col_body_{S}<int>(x, cols, (int)n, (int)c, (int)h, (int)w, kh, kw, sh, sw, dh, dw, top, left, (int)oh,
                             (int)ow);
    else
        im2col_body_{S}<long long>(x, cols, n, c, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow);
}

template <typename I>
__device__ __forceinline__ void weight_grad_operands_body_{S}(const {T}* x, const {T}* dy, {T}* cols, {T}* dyt, I n,
                                                              I c, I h, I w, int kh, int kw, int sh, int sw, int dh,
                                                              int dw, int top, int left, I oh, I ow, I f) {
    I p = oh * ow, patches = c * kh * kw * n * p;
    GRID_LOOP_I(idx, patches + f * n * p) {
        if (idx < patches) {
            I q = idx;
            I ox = q % ow; q /= ow;
            I oy = q % oh; q /= oh;
            I s = q % n; q /= n;
            I j = q % kw; q /= kw;
            I i = q % kh;
            I ch = q / kh;
            I y = window_cell<I>(oy, i, sh, dh, top, h), xx = window_cell<I>(ox, j, sw, dw, left, w);
            cols[idx] = (y >= 0 && xx >= 0) ? x[((s * c + ch) * h + y) * w + xx] : ({T})0;
        } else {
            I q = idx - patches;
            I pos = q % p; q /= p;
            I s = q % n;
            I fi = q / n;
            dyt[idx - patches] = dy[(s * f + fi) * p + pos];
        }
    }
}

// The two operands of the convolution's weight gradient as one product over the (sample, position) axis, in one
// launch: items [0, c·kh·kw·n·oh·ow) write the patches reduction-last, cols[(ch, i, j), (s, oy, ox)]; the next
// f·n·oh·ow items write dy (n, f, oh·ow) as dyt[f, (s, oy, ox)]. Then dW = dyt @ cols^T sums the batch inside the
// product (no batched product followed by a sum over the batch)
extern "C" __global__ void weight_grad_operands_{S}(const {T}* x, const {T}* dy, {T}* cols, {T}* dyt, long long n,
                                                    long long c, long long h, long long w, int kh, int kw, int sh,
                                                    int sw, int dh, int dw, int top, int left, long long oh,
                                                    long long ow, long long f) {
    if (narrow(c * kh * kw * n * oh * ow + f * n * oh * ow, n * c * h * w))
        weight_grad_operands_body_{S}<int>(x, dy, cols, dyt, (int)n, (int)c, (int)h, (int)w, kh, kw, sh, sw, dh,
                                           dw, top, left, (int)oh, (int)ow, (int)f);
    else
        weight_grad_operands_body_{S}<long long>(x, dy, cols, dyt, n, c, h, w, kh, kw, sh, sw, dh, dw, top, left,
                                                 oh, ow, f);
}

template <typename I>
__device__ __forceinline__ void col2im_body_{S}(const {T}* dcols, {T}* dx, I n, I c, I h, I w, int kh, int kw,
                                                int sh, int sw, int dh, int dw, int top, int left, I oh, I ow) {
    GRID_LOOP_I(idx, n * c * h * w) {
        I q = idx;
        I xx = q % w; q /= w;
        I y = q % h; q /= h;
        I ch = q % c;
        I s = q / c;
        {T} acc = 0;
        FOR_WINDOWS_READING(y, xx, dh, dw)
            acc += dcols[(((s * c + ch) * kh + i) * kw + j) * oh * ow + oy * ow + ox];
        dx[idx] = acc;
    }
}

// dx[s, ch, y, x] = sum over the window cells (i, j) that read (y, x) of dcols[s, (ch, i, j), (oy, ox)], added in
// (i, j) order onto 0, as the numpy col2im adds its strided slices
extern "C" __global__ void col2im_{S}(const {T}* dcols, {T}* dx, long long n, long long c, long long h, long long w,
                                      int kh, int kw, int sh, int sw, int dh, int dw, int top, int left,
                                      long long oh, long long ow) {
    if (narrow(n * c * kh * kw * oh * ow, n * c * h * w))
        col2im_body_{S}<int>(dcols, dx, (int)n, (int)c, (int)h, (int)w, kh, kw, sh, sw, dh, dw, top, left, (int)oh,
                             (int)ow);
    else
        col2im_body_{S}<long long>(dcols, dx, n, c, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow);
}

template <typename I>
__device__ __forceinline__ void bias_act_body_{S}({T}* y, const {T}* b, I rows, I f, I p, int relu) {
    GRID_LOOP_I(idx, rows * f * p) {
        {T} v = y[idx] + b[(idx / p) % f];
        y[idx] = (relu && !(v > ({T})0)) ? (v != v ? v : ({T})0) : v;
    }
}

// y[s, f, p] = act(y[s, f, p] + b[f]) in place over (rows, f, p): the convolution's (p = OH·OW) and the dense
// layer's (p = 1) epilogue
extern "C" __global__ void bias_act_{S}({T}* y, const {T}* b, long long rows, long long f, long long p, int relu) {
    if (narrow(rows * f * p, 0))
        bias_act_body_{S}<int>(y, b, (int)rows, (int)f, (int)p, relu);
    else
        bias_act_body_{S}<long long>(y, b, rows, f, p, relu);
}

// g = g * (y > 0) in place (relu_grad's formula: a product with the mask)
extern "C" __global__ void relu_mask_{S}({T}* g, const {T}* y, long long n) {
    GRID_LOOP(idx, n) {
        g[idx] = g[idx] * ({T})(y[idx] > ({T})0);
    }
}

// dx = dy * (y > 0) into a new array (relu_grad's formula, one launch: the op's gradient where no product
// precedes it to mask in place)
extern "C" __global__ void relu_grad_{S}(const {T}* dy, const {T}* y, {T}* dx, long long n) {
    GRID_LOOP(idx, n) {
        dx[idx] = dy[idx] * ({T})(y[idx] > ({T})0);
    }
}

template <typename I>
__device__ __forceinline__ void max_pool_body_{S}(const {T}* x, {T}* out, I n, I c, I h, I w, int kh, int kw,
                                                  int sh, int sw, int top, int left, I oh, I ow) {
    GRID_LOOP_I(idx, n * c * oh * ow) {
        I q = idx;
        I ox = q % ow; q /= ow;
        I oy = q % oh; q /= oh;
        const {T}* plane = x + q * h * w;
        {T} best = -({T})INFINITY;
        bool nan = false;
        FOR_WINDOW_CELLS(oy, ox, y, xx) {
            {T} v = plane[y * w + xx];
            if (v != v) nan = true;
            else if (v > best) best = v;
        }
        out[idx] = nan ? ({T})NAN : best;
    }
}

extern "C" __global__ void max_pool_{S}(const {T}* x, {T}* out, long long n, long long c, long long h, long long w,
                                        int kh, int kw, int sh, int sw, int top, int left, long long oh,
                                        long long ow) {
    if (narrow(n * c * oh * ow, n * c * h * w))
        max_pool_body_{S}<int>(x, out, (int)n, (int)c, (int)h, (int)w, kh, kw, sh, sw, top, left, (int)oh, (int)ow);
    else
        max_pool_body_{S}<long long>(x, out, n, c, h, w, kh, kw, sh, sw, top, left, oh, ow);
}

template <typename I>
__device__ __forceinline__ void max_pool_grad_body_{S}(const {T}* dy, const {T}* x, const {T}* out, {T}* dx, I n,
                                                       I c, I h, I w, int kh, int kw, int sh, int sw, int top,
                                                       int left, I oh, I ow, int relu) {
    GRID_LOOP_I(idx, n * c * h * w) {
        I q = idx;
        I xx = q % w; q /= w;
        I y = q % h; q /= h;
        const {T}* plane = x + q * h * w;
        {T} acc = 0;
        FOR_WINDOWS_READING(y, xx, 1, 1) {
            I o = q * oh * ow + oy * ow + ox;
            {T} m = out[o];
            // the window's first cell equal to its maximum (padding never is)
            int first_i = -1, first_j = -1;
            for (int a = 0; a < kh && first_i < 0; ++a) {
                I yy = window_cell<I>(oy, (I)a, sh, 1, top, h);
                if (yy < 0) continue;
                for (int b = 0; b < kw; ++b) {
                    I xb = window_cell<I>(ox, (I)b, sw, 1, left, w);
                    if (xb >= 0 && plane[yy * w + xb] == m) { first_i = a; first_j = b; break; }
                }
            }
            if (first_i == i && first_j == j) acc += dy[o];
        }
        if (relu) acc = acc * ({T})(plane[y * w + xx] > ({T})0);
        dx[idx] = acc;
    }
}

// dx[s, ch, y, x] = the sum of dy over the windows whose first maximal cell (window order: rows top to bottom,
// each left to right) is (y, x); with relu, 0 where x <= 0
extern "C" __global__ void max_pool_grad_{S}(const {T}* dy, const {T}* x, const {T}* out, {T}* dx, long long n,
                                             long long c, long long h, long long w, int kh, int kw, int sh, int sw,
                                             int top, int left, long long oh, long long ow, int relu) {
    if (narrow(n * c * h * w, n * c * oh * ow))
        max_pool_grad_body_{S}<int>(dy, x, out, dx, (int)n, (int)c, (int)h, (int)w, kh, kw, sh, sw, top, left,
                                    (int)oh, (int)ow, relu);
    else
        max_pool_grad_body_{S}<long long>(dy, x, out, dx, n, c, h, w, kh, kw, sh, sw, top, left, oh, ow, relu);
}

// window sums of the input cells (padding adds nothing), divided by the count of input cells
extern "C" __global__ void avg_pool_{S}(const {T}* x, {T}* out, long long n, long long c, long long h, long long w,
                                        int kh, int kw, int sh, int sw, int top, int left, long long oh,
                                        long long ow) {
    typedef long long I;
    GRID_LOOP(idx, n * c * oh * ow) {
        long long q = idx;
        long long ox = q % ow; q /= ow;
        long long oy = q % oh; q /= oh;
        const {T}* plane = x + q * h * w;
        {T} total = 0;
        FOR_WINDOW_CELLS(oy, ox, y, xx)
            total += plane[y * w + xx];
        out[idx] = total / ({T})(window_count(oy, kh, sh, top, h) * window_count(ox, kw, sw, left, w));
    }
}

// dx[s, ch, y, x] = sum over the windows holding (y, x) of dy / count, in (i, j) order as the numpy path adds them
extern "C" __global__ void avg_pool_grad_{S}(const {T}* dy, {T}* dx, long long n, long long c, long long h,
                                             long long w, int kh, int kw, int sh, int sw, int top, int left,
                                             long long oh, long long ow) {
    typedef long long I;
    GRID_LOOP(idx, n * c * h * w) {
        long long q = idx;
        long long xx = q % w; q /= w;
        long long y = q % h; q /= h;
        {T} acc = 0;
        FOR_WINDOWS_READING(y, xx, 1, 1)
            acc += dy[q * oh * ow + oy * ow + ox] /
                   ({T})(window_count(oy, kh, sh, top, h) * window_count(ox, kw, sw, left, w));
        dx[idx] = acc;
    }
}
"""

_SUFFIX = {numpy.dtype(numpy.float32): "f32", numpy.dtype(numpy.float64): "f64"}


def _source():
    return _HEADER + "".join(_TEMPLATE.replace("{T}", t).replace("{S}", s)
                             for t, s in (("float", "f32"), ("double", "f64")))


# --- the twins: numpy, same arguments, same writes ----------------------------------------------------------------
def _padded(x, n, c, h, w, top, left, kh, kw, sh, sw, dh, dw, oh, ow, fill):
    """x (n, c, h, w) padded so that every window cell of every output lies inside; padding = fill."""
    hp = max(h + top, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(w + left, (ow - 1) * sw + (kw - 1) * dw + 1)
    out = numpy.full((n, c, hp, wp), fill, dtype=x.dtype)
    out[:, :, top:top + h, left:left + w] = x.reshape(n, c, h, w)[:, :, :hp - top, :wp - left]
    return out


def _im2col_twin(x, cols, n, c, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow):
    p = _padded(x, n, c, h, w, top, left, kh, kw, sh, sw, dh, dw, oh, ow, 0)
    s_n, s_c, s_h, s_w = p.strides
    view = numpy.lib.stride_tricks.as_strided(p, shape=(n, c, kh, kw, oh, ow),
                                              strides=(s_n, s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw))
    cols.reshape(view.shape)[...] = view


def _weight_grad_operands_twin(x, dy, cols, dyt, n, c, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow, f):
    patches = numpy.empty((n, c, kh, kw, oh, ow), dtype=cols.dtype)
    _im2col_twin(x, patches, n, c, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow)
    cols.reshape(c, kh, kw, n, oh, ow)[...] = patches.transpose(1, 2, 3, 0, 4, 5)
    dyt.reshape(f, n, oh * ow)[...] = dy.reshape(n, f, oh * ow).transpose(1, 0, 2)


def _col2im_twin(dcols, dx, n, c, h, w, kh, kw, sh, sw, dh, dw, top, left, oh, ow):
    p = _padded(numpy.zeros((n, c, h, w), dx.dtype), n, c, h, w, top, left, kh, kw, sh, sw, dh, dw, oh, ow, 0)
    d6 = dcols.reshape(n, c, kh, kw, oh, ow)
    for i in range(kh):
        for j in range(kw):
            p[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw] += d6[:, :, i, j]
    dx.reshape(n, c, h, w)[...] = p[:, :, top:top + h, left:left + w]


def _bias_act_twin(y, b, rows, f, p, relu):
    y3 = y.reshape(rows, f, p)
    y3 += b.reshape(1, f, 1)
    if relu:
        numpy.maximum(y3, y3.dtype.type(0), out=y3)


def _relu_mask_twin(g, y, n):
    g *= y > 0


def _relu_grad_twin(dy, y, dx, n):
    numpy.multiply(dy, y > 0, out=dx)


def _windows(padded, oh, ow, sh, sw):
    for i in range(padded.shape[2] - (oh - 1) * sh):
        for j in range(padded.shape[3] - (ow - 1) * sw):
            yield i, j, padded[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]


def _max_pool_twin(x, out, n, c, h, w, kh, kw, sh, sw, top, left, oh, ow):
    p = _padded(x, n, c, h, w, top, left, kh, kw, sh, sw, 1, 1, oh, ow, -numpy.inf)
    o = out.reshape(n, c, oh, ow)
    o[...] = -numpy.inf
    nan = numpy.zeros(o.shape, bool)
    for i in range(kh):
        for j in range(kw):
            v = p[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            nan |= v != v
            numpy.fmax(o, v, out=o)
    o[nan] = numpy.nan


def _max_pool_grad_twin(dy, x, out, dx, n, c, h, w, kh, kw, sh, sw, top, left, oh, ow, relu):
    p = _padded(x, n, c, h, w, top, left, kh, kw, sh, sw, 1, 1, oh, ow, numpy.nan)  # padding never equals
    g = numpy.zeros(p.shape, dtype=dx.dtype)
    y4, dy4 = out.reshape(n, c, oh, ow), dy.reshape(n, c, oh, ow)
    taken = numpy.zeros(y4.shape, bool)
    for i in range(kh):
        for j in range(kw):
            hit = (p[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] == y4) & ~taken
            g[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] += numpy.where(hit, dy4, 0)
            taken |= hit
    d = dx.reshape(n, c, h, w)
    d[...] = g[:, :, top:top + h, left:left + w]
    if relu:
        d *= x.reshape(n, c, h, w) > 0


def _counts(h, w, kh, kw, sh, sw, top, left, oh, ow):
    def along(size, k, s, before, o):
        start = numpy.arange(o) * s - before
        return numpy.minimum(start + k, size) - numpy.maximum(start, 0)
    return along(h, kh, sh, top, oh)[:, None] * along(w, kw, sw, left, ow)[None, :]


def _avg_pool_twin(x, out, n, c, h, w, kh, kw, sh, sw, top, left, oh, ow):
    p = _padded(x, n, c, h, w, top, left, kh, kw, sh, sw, 1, 1, oh, ow, 0)
    total = numpy.zeros((n, c, oh, ow), dtype=out.dtype)
    for i in range(kh):
        for j in range(kw):
            total += p[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
    out.reshape(n, c, oh, ow)[...] = total / _counts(h, w, kh, kw, sh, sw, top, left, oh, ow).astype(out.dtype)


def _avg_pool_grad_twin(dy, dx, n, c, h, w, kh, kw, sh, sw, top, left, oh, ow):
    share = dy.reshape(n, c, oh, ow) / _counts(h, w, kh, kw, sh, sw, top, left, oh, ow).astype(dx.dtype)
    p = _padded(numpy.zeros((n, c, h, w), dx.dtype), n, c, h, w, top, left, kh, kw, sh, sw, 1, 1, oh, ow, 0)
    for i in range(kh):
        for j in range(kw):
            p[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] += share
    dx.reshape(n, c, h, w)[...] = p[:, :, top:top + h, left:left + w]


_TWINS = {"im2col": _im2col_twin, "col2im": _col2im_twin,
          "weight_grad_operands": _weight_grad_operands_twin, "bias_act": _bias_act_twin, "relu_mask": _relu_mask_twin,
          "relu_grad": _relu_grad_twin,           "max_pool": _max_pool_twin, "max_pool_grad": _max_pool_grad_twin, "avg_pool": _avg_pool_twin,
          "avg_pool_grad": _avg_pool_grad_twin}

MODULE = CudaModule("nn", _source(), {"%s_%s" % (name, s): twin for name, twin in _TWINS.items()
                                       for s in ("f32", "f64")},
                    options=("--std=c++17", "--fmad=false"))


def supported(dtype):
    """Whether the device kernels take arrays of `dtype` (float32, float64)."""
    return numpy.dtype(dtype) in _SUFFIX


def _name(base, dtype):
    return "%s_%s" % (base, _SUFFIX[numpy.dtype(dtype)])


# --- the device operations (xp: CuPy or the tests' fake; arrays C-contiguous NCHW) ------------------------------
def _geometry(input_shape, window, strides, pads, out_hw, dilations=None):
    """The arguments every kernel above takes after its arrays, in their order: n, c, h, w, kh, kw, sh, sw, then
    dh, dw for the convolution's kernels (`dilations` given), then top, left, oh, ow."""
    n, c, h, w = input_shape
    (kh, kw), (sh, sw), ((top, _), (left, _)), (oh, ow) = window, strides, pads, out_hw
    return (n, c, h, w, kh, kw, sh, sw) + (tuple(dilations) if dilations is not None else ()) + (top, left, oh, ow)


def im2col(xp, x, kh, kw, strides, dilations, pads, out_hw):
    """(N, C·kh·kw, OH·OW) channel-major patches of the whole batch x (N, C, H, W)."""
    n, c = x.shape[:2]
    cols = xp.empty((n, c * kh * kw, out_hw[0] * out_hw[1]), dtype=x.dtype)
    MODULE.launch(xp, _name("im2col", x.dtype), cols.size, x, cols,
                  *_geometry(x.shape, (kh, kw), strides, pads, out_hw, dilations))
    return cols


def weight_grad_operands(xp, x, dy, kh, kw, strides, dilations, pads, out_hw):
    """(cols (C·kh·kw, N·OH·OW), dyt (F, N·OH·OW)) of x (N, C, H, W) and dy (N, F, OH, OW), in one launch: the
    weight gradient's operands with the batch inside the product's reduction axis."""
    n, c = x.shape[:2]
    f, p = dy.shape[1], out_hw[0] * out_hw[1]
    cols = xp.empty((c * kh * kw, n * p), dtype=x.dtype)
    dyt = xp.empty((f, n * p), dtype=x.dtype)
    MODULE.launch(xp, _name("weight_grad_operands", x.dtype), cols.size + dyt.size, x, dy, cols, dyt,
                  *_geometry(x.shape, (kh, kw), strides, pads, out_hw, dilations), f)
    return cols, dyt


def col2im(xp, dcols, input_shape, kh, kw, strides, dilations, pads, out_hw):
    """dx (N, C, H, W) from the patch gradients dcols (N, C·kh·kw, OH·OW)."""
    dx = xp.empty(tuple(input_shape), dtype=dcols.dtype)
    MODULE.launch(xp, _name("col2im", dx.dtype), dx.size, dcols, dx,
                  *_geometry(input_shape, (kh, kw), strides, pads, out_hw, dilations))
    return dx


def bias_act(xp, y, b, relu):
    """In place: y (rows, F, ...) += b per F, then relu when asked."""
    rows, f = y.shape[0], y.shape[1]
    p = y.size // max(1, rows * f)
    # (b may be a view of a cuda tensor, strided: the kernel reads it as C-contiguous, so a strided one is copied;
    # a contiguous one of y's dtype is taken as it is)
    MODULE.launch(xp, _name("bias_act", y.dtype), y.size, y, xp.ascontiguousarray(b, dtype=y.dtype), rows, f, p,
                  1 if relu else 0)
    return y


def relu_mask(xp, g, y):
    """In place: g *= (y > 0)."""
    MODULE.launch(xp, _name("relu_mask", g.dtype), g.size, g, y, g.size)
    return g


def relu_grad(xp, dy, y):
    """dy * (y > 0) into a new array (dy, y: C-contiguous, one shape and dtype)."""
    dx = xp.empty(dy.shape, dtype=dy.dtype)
    MODULE.launch(xp, _name("relu_grad", dy.dtype), dx.size, dy, y, dx, dx.size)
    return dx


def max_pool(xp, x, ksize, strides, pads, out_hw):
    out = xp.empty(tuple(x.shape[:2]) + tuple(out_hw), dtype=x.dtype)
    MODULE.launch(xp, _name("max_pool", x.dtype), out.size, x, out, *_geometry(x.shape, ksize, strides, pads, out_hw))
    return out


def max_pool_grad(xp, dy, x, y, ksize, strides, pads, relu):
    dx = xp.empty(x.shape, dtype=x.dtype)
    MODULE.launch(xp, _name("max_pool_grad", x.dtype), dx.size, dy, x, y, dx,
                  *_geometry(x.shape, ksize, strides, pads, y.shape[2:]), 1 if relu else 0)
    return dx


def avg_pool(xp, x, ksize, strides, pads, out_hw):
    out = xp.empty(tuple(x.shape[:2]) + tuple(out_hw), dtype=x.dtype)
    MODULE.launch(xp, _name("avg_pool", x.dtype), out.size, x, out, *_geometry(x.shape, ksize, strides, pads, out_hw))
    return out


def avg_pool_grad(xp, dy, input_shape, ksize, strides, pads):
    dx = xp.empty(tuple(input_shape), dtype=dy.dtype)
    MODULE.launch(xp, _name("avg_pool_grad", dy.dtype), dx.size, dy, dx,
                  *_geometry(input_shape, ksize, strides, pads, dy.shape[2:]))
    return dx
