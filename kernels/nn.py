"""2-D convolution and pooling, forward and backward, NCHW or NHWC.

Padding is always explicit: pads = ((top, bottom), (left, right)); the op layer turns
"SAME"/"VALID" into pads with `same_pads`. Pooling works on an NCHW *view* of the
data (a transpose, no copy, for NHWC); every result is made contiguous in the
caller's layout at the end.

Convolution is per-sample im2col + matmul, the patches channel-major or pixel-major by shape, or read in place
by the table-addressed products of `vector_gemm.py` (see the convolution section), the samples spread over the
BLAS's threads. Patch extraction and its adjoint, the conv
epilogues, max pooling and its gradient run as compiled loops from `nn_jit.py` when numba is installed; the numpy
path — one strided-slice operation per window offset — is the reference and the fallback.

On a device (CuPy) the whole batch goes at once through the CUDA kernels of `cuda_nn.py` (im2col, col2im, the
epilogue, pooling forward and backward: one launch each) and batched products; chunking by cache size is a CPU rule.
"""
import functools
import numbers
import threading

import numpy as np

from . import blas, cpu_threads, cuda_blas, cuda_nn, nn_jit, vector_gemm
from .half_products import all_half, through_float32

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
# Sample by sample (a few samples at a time on the numpy path), so that a sample's patch matrix stays in cache: no
# batch-sized workspace, nothing recomputed that a cache-sized chunk could not afford. Two layouts of the patches:
#
# channel-major  cols (C*kh*kw, OH*OW), rows (c, i, j): copied from the NCHW input as it lies (runs of OW values).
#                forward out[n] = W (F, K) @ cols[n]; d input dcols = W^T @ dy[n], then col2im; d weight
#                dW^T += cols[n] @ dy[n]^T. Every case (groups, CuPy); the layout for few input channels (LeNet's
#                conv1, C = 1, whose pixel-major runs would be 5 values long).
# pixel-major    cols (OH*OW, kh*kw*C), columns (i, j, c): copied from the sample turned channels-last, where the
#                kw*C values of a window row lie together: one contiguous copy per pixel and window row (LeNet's
#                conv2: 4x faster than the channel-major copy). forward out[n]^T = cols @ W (K, F), transposed back
#                with the bias and activation while hot; d weight W (F, K) += dy[n] @ cols (the BLAS accumulates:
#                beta = 1); d input dcols = dy[n]^T @ W (F, K), then col2im through a channels-last scratch. These
#                product shapes run at the BLAS's best rate (OpenBLAS: 95-98 GFLOP/s at 196 x 800 x 64, 75 where
#                the patch operand is transposed). Used for numpy arrays, groups == 1 and runs of at least
#                _PIXEL_MAJOR_RUN values.
# implicit       (float32, groups == 1, C a multiple of the vector width (and F for the forward), on hosts where
#                `vector_gemm.FAST`): the pixel-major products with no patch matrix at all: `vector_gemm` reads each patch entry from the
#                channels-last padded sample through offset tables (pixel offset + patch-column offset), and the
#                input gradient adds its patch gradients straight into a channels-last padded gradient (the
#                scatter-add that col2im was). LeNet's conv2: ~105-116 GFLOP/s against OpenBLAS's ~97, and no
#                patch copies (3.6 ms per step) or col2im pass (2.3 ms).
#
# The BLAS runs each product on one thread and the samples are spread over as many threads as it had
# (`cpu_threads.py`): OpenBLAS splitting each small product costs more in hand-offs than it gains, contiguous
# ranges of samples on their own threads scale. The compiled loops (`nn_jit.py`: numba, nogil) and the products
# release the GIL; each thread has its own workspaces.

_CHUNK_BYTES = 1 << 20  # patch matrices per chunk: about L2-sized
_CHUNK_BYTES_NUMPY = 1 << 23  # numpy's col2im pays per call (kh * kw strided adds per chunk): larger chunks
_PIXEL_MAJOR_RUN = 32  # values per contiguous copy (C * kw, C when dilated) from which patches are pixel-major
_VECTOR_LANES = 16  # the implicit path's vector width (AVX-512: 16 floats)

_workspaces = threading.local()


def _workspace(xp, shape, dtype, slot=0):
    """Scratch array reused across calls of the same thread (`slot` tells apart those live at once). Fresh
    buffers cost page faults on every call; these are small (one chunk of patches), reused for every layer.
    The contents never leave the kernel that asked for it. numpy only: CuPy's memory pool already reuses."""
    if xp.__name__ != "numpy":
        return xp.empty(shape, dtype=dtype)
    size = 1
    for dim in shape:
        size *= dim
    dtype = xp.dtype(dtype)
    buffers = getattr(_workspaces, "buffers", None)
    if buffers is None:
        buffers = _workspaces.buffers = {}
    buffer = buffers.get((dtype, slot))
    if buffer is None or buffer.size < size:
        buffer = buffers[(dtype, slot)] = xp.empty(size, dtype=dtype)
    return buffer[:size].reshape(shape)


def _on_device(xp, dtype):
    """Whether the device kernels (`cuda_nn.py`) run this: a device module that builds raw kernels, a float dtype
    they take."""
    return xp is not np and hasattr(xp, "RawModule") and cuda_nn.supported(dtype)


def _memo_geometry(setup):
    """`setup` (a pure function of shapes and geometry attributes) remembered by its arguments: each op calls it
    with the same ones every step, and the parsing and checking cost a step's host time (numpy and CuPy alike).
    The key holds each argument's type beside its value (1 and 1.0 hash alike, but only one is valid);
    unhashable arguments (lists) are not remembered; an argument that raises is never stored."""
    memo = {}

    @functools.wraps(setup)
    def remembered(*args):
        key = args + tuple(map(type, args))
        try:
            found = memo.get(key)
        except TypeError:
            return setup(*args)
        if found is None:
            found = setup(*args)
            if len(memo) > 4096:
                memo.clear()
            memo[key] = found
        return found
    return remembered


@_memo_geometry
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


class _Geometry:
    """One convolution's shapes, its layout of the patches, and the loops over a range of samples."""

    def __init__(self, xp, dtype, x_nchw, w_fchw, strides, pads, dilations, groups, out_hw):
        self.xp, self.dtype = xp, xp.dtype(dtype)
        (self.n, self.c, self.h, self.w), (self.f, cg, self.kh, self.kw) = x_nchw, w_fchw
        self.groups, self.kg, self.fg = groups, cg * self.kh * self.kw, self.f // groups
        self.k = self.c * self.kh * self.kw
        self.strides, self.pads, self.dilations, (self.oh, self.ow) = strides, pads, dilations, out_hw
        self.p = self.oh * self.ow
        self.jit = _use_jit(xp, self.dtype)
        run = self.c * (self.kw if dilations[1] == 1 else 1)
        self.pixel_major = xp.__name__ == "numpy" and groups == 1 and run >= _PIXEL_MAJOR_RUN
        # the gradients' vectors run along the patch columns (C at a time), the forward's along the filters; few
        # channels stay with the BLAS (LeNet's conv1, C = 1, K = 25: 6 x 2 blocks over 25 products ran 1.6x
        # slower than its channel-major product)
        implicit = (self.jit and vector_gemm.FAST and self.dtype == np.float32 and groups == 1
                    and self.c % _VECTOR_LANES == 0)
        self.implicit_forward = implicit and self.f % _VECTOR_LANES == 0
        self.implicit_grads = implicit
        budget = _CHUNK_BYTES if self.jit else _CHUNK_BYTES_NUMPY
        self.chunk = max(1, min(self.n, budget // max(1, self.k * self.p * self.dtype.itemsize)))
        (top, bottom), (left, right) = pads
        self.padded_hw = (self.h + top + bottom, self.w + left + right)

    def chunks(self, n0, n1):
        for c0 in range(n0, n1, self.chunk):
            yield c0, min(n1, c0 + self.chunk)

    def args(self):
        """The compiled loops' geometry arguments: kh, kw, sh, sw, dh, dw, top, left, oh, ow."""
        (kh, kw), (sh, sw), (dh, dw), ((top, _), (left, _)) = (self.kh, self.kw), self.strides, self.dilations, \
            self.pads
        return kh, kw, sh, sw, dh, dw, top, left, self.oh, self.ow

    # channel-major

    def patches(self, padded, n0, n1):
        """Channel-major patch matrices of samples n0:n1 of the padded NCHW batch: (n1 - n0, C * kh * kw, OH * OW),
        in a workspace. One strided numpy copy per chunk: numpy's copy loops move these short rows faster than a
        compiled element loop does."""
        padded = padded[n0:n1]
        cols = _workspace(self.xp, (n1 - n0, self.k, self.p), self.dtype)
        (kh, kw), (sh, sw), (dh, dw) = (self.kh, self.kw), self.strides, self.dilations
        s_n, s_c, s_h, s_w = padded.strides
        view = self.xp.lib.stride_tricks.as_strided(
            padded, shape=(n1 - n0, self.c, kh, kw, self.oh, self.ow),
            strides=(s_n, s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw))
        cols.reshape(view.shape)[...] = view
        return cols

    def col2im(self, dcols, dx):
        """dx (a chunk of samples, NCHW) = the sum of every patch gradient at the cells it was read from."""
        if self.jit:
            nn_jit.col2im(dcols, dx, *self.args())
            return
        (kh, kw), (sh, sw), (dh, dw), ((top, _), (left, _)) = (self.kh, self.kw), self.strides, \
            self.dilations, self.pads
        m = dx.shape[0]
        padded = self.xp.zeros((m, self.c) + self.padded_hw, dtype=dx.dtype)
        d6 = dcols.reshape(m, self.c, kh, kw, self.oh, self.ow)
        for i in range(kh):
            for j in range(kw):
                padded[:, :, i * dh:i * dh + sh * (self.oh - 1) + 1:sh,
                       j * dw:j * dw + sw * (self.ow - 1) + 1:sw] += d6[:, :, i, j]
        dx[...] = padded[:, :, top:top + self.h, left:left + self.w]

    # pixel-major

    def pixel_patches(self, x, n0, n1):
        """Pixel-major patch matrices of samples n0:n1 of the NCHW batch x (numpy path): (n1 - n0, OH * OW,
        kh * kw * C), in a workspace: the chunk channels-last with a zero border, then one strided copy."""
        m, (kh, kw), (sh, sw), (dh, dw), ((top, _), (left, _)) = n1 - n0, (self.kh, self.kw), self.strides, \
            self.dilations, self.pads
        padded = _workspace(self.xp, (m,) + self.padded_hw + (self.c,), self.dtype, slot=2)
        padded[...] = 0
        padded[:, top:top + self.h, left:left + self.w, :] = x[n0:n1].transpose(0, 2, 3, 1)
        cols = _workspace(self.xp, (m, self.p, self.k), self.dtype)
        s_n, s_h, s_w, s_c = padded.strides
        view = self.xp.lib.stride_tricks.as_strided(
            padded, shape=(m, self.oh, self.ow, kh, kw, self.c),
            strides=(s_n, s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c))
        cols.reshape(view.shape)[...] = view
        return cols

    def pixel_col2im(self, dcols, dx):
        """The adjoint of `pixel_patches` (numpy path): dx (a chunk of samples, NCHW) from dcols (m, OH * OW, K)."""
        m, (kh, kw), (sh, sw), (dh, dw), ((top, _), (left, _)) = dx.shape[0], (self.kh, self.kw), self.strides, \
            self.dilations, self.pads
        padded = self.xp.zeros((m,) + self.padded_hw + (self.c,), dtype=dx.dtype)
        d6 = dcols.reshape(m, self.oh, self.ow, kh, kw, self.c)
        for i in range(kh):
            for j in range(kw):
                padded[:, i * dh:i * dh + sh * (self.oh - 1) + 1:sh,
                       j * dw:j * dw + sw * (self.ow - 1) + 1:sw, :] += d6[:, :, :, i, j]
        dx[...] = padded[:, top:top + self.h, left:left + self.w, :].transpose(0, 3, 1, 2)

    def scratch(self):
        """The compiled path's per-thread workspaces of one sample: channels-last padded sample, patches."""
        return (_workspace(self.xp, self.padded_hw + (self.c,), self.dtype, slot=2),
                _workspace(self.xp, (self.p, self.k), self.dtype))

    # implicit

    def implicit_chunks(self, n0, n1, per_sample):
        """Ranges of samples whose channels-last padded samples plus `per_sample` more values fit the budget."""
        size = (self.padded_hw[0] * self.padded_hw[1] * self.c + per_sample) * self.dtype.itemsize
        step = max(1, _CHUNK_BYTES // size)
        for c0 in range(n0, n1, step):
            yield c0, min(n1, c0 + step)

    def tables(self):
        """Offsets into a channels-last padded sample: of each pixel's window origin, of each patch column
        (i, j, c) from it, and of each vector of patch columns (lanes in a row: C is a multiple of the width)."""
        return _implicit_tables(self.c, self.padded_hw[1], self.kh, self.kw, self.strides, self.dilations,
                                self.oh, self.ow, _VECTOR_LANES)

    def channels_last(self, x, c0, c1):
        """Samples c0:c1 of the NCHW batch x, channels-last in a zero border, in a per-thread workspace."""
        padded = _workspace(self.xp, (c1 - c0,) + self.padded_hw + (self.c,), self.dtype, slot=2)
        nn_jit.channels_last_padded(x[c0:c1], padded, self.pads[0][0], self.pads[1][0])
        return padded


_table_cache = {}


def _implicit_tables(c, wp, kh, kw, strides, dilations, oh, ow, lanes):
    key = (c, wp, kh, kw, strides, dilations, oh, ow, lanes)
    found = _table_cache.get(key)
    if found is None:
        (sh, sw), (dh, dw) = strides, dilations
        pixels = ((np.arange(oh) * sh * wp)[:, None] + np.arange(ow) * sw).reshape(-1) * c
        columns = ((np.arange(kh) * dh * wp)[:, None, None] * c + (np.arange(kw) * dw * c)[None, :, None]
                   + np.arange(c)[None, None, :]).reshape(-1)
        found = tuple(np.ascontiguousarray(t, dtype=np.int64) for t in (pixels, columns, columns[::lanes]))
        _table_cache[key] = found
    return found


def _steps(count, step):
    """0, step, 2*step, ...: a table of rows or vectors laid out one after another."""
    return np.arange(count, dtype=np.int64) * step


def _over_samples(xp, n, run):
    """[run(n0, n1)] over ranges of the batch, spread over the BLAS's threads with the BLAS on one thread (numpy;
    CuPy's work is queued on the device, and its current device is per thread: one range, on this thread)."""
    with cpu_threads.blas_on_one_thread() as blas_state:
        return cpu_threads.spread(n, blas_state.threads if xp.__name__ == "numpy" else 1, run)


def _use_jit(xp, dtype):
    return nn_jit.AVAILABLE and xp.__name__ == "numpy" and dtype.kind == "f"


def _nchw_contiguous(xp, a, data_format, dtype=None):
    a = xp.ascontiguousarray(_as_nchw(a, data_format))
    return a if dtype is None else a.astype(dtype, copy=False)


def _weight_groups(xp, w, data_format, groups, dtype):
    """Weight as (groups, F / groups, C / groups * kh * kw), rows (c, i, j) like channel-major patches."""
    w = xp.ascontiguousarray(_weight_as_fchw(w, data_format)).astype(dtype, copy=False)
    return w.reshape(groups, w.shape[0] // groups, -1)


def _weight_pixel_major(xp, w, data_format, dtype):
    """Weight as (F, kh * kw * C), columns (i, j, c) like pixel-major patches."""
    w = _weight_as_fchw(w, data_format).transpose(0, 2, 3, 1)
    return xp.ascontiguousarray(w).astype(dtype, copy=False).reshape(w.shape[0], -1)


def _from_nchw_array(xp, y, data_format):
    return y if data_format == "NCHW" else xp.ascontiguousarray(y.transpose(0, 2, 3, 1))



# --- pointwise convolutions (1 x 1 kernels, no padding, one group) ----------------------------------------------------
# Per sample a 1 x 1 convolution is one matrix product over the channels, NCHW (F, C) @ (C, pixels): OpenBLAS runs
# it at full speed on the arrays as they are, with no patch layout at all (measured at ResNet-50's shapes, batch 8,
# 1 thread: about half the implicit path's time, and below PyTorch's oneDNN convolution). A stride keeps every s-th
# pixel: the product runs on that subsampled copy, and the input gradient lands on those pixels only.
def _pointwise(xp, w_shape, strides, pads, groups, data_format):
    (kh, kw) = (w_shape[2], w_shape[3]) if data_format == "NCHW" else (w_shape[1], w_shape[2])
    return xp.__name__ == "numpy" and kh == kw == 1 and groups == 1 and all(p == 0 for pr in _pads(pads) for p in pr)


def _pointwise_pixels(x, strides, data_format):
    """(n, C, pixels) of the pixels a strided 1 x 1 convolution reads (NCHW), or (n * pixels, C) (NHWC)."""
    sh, sw = _pair(strides, "strides")
    if data_format == "NCHW":
        x = x[:, :, ::sh, ::sw] if (sh, sw) != (1, 1) else x
        return np.ascontiguousarray(x).reshape(x.shape[0], x.shape[1], -1)
    x = x[:, ::sh, ::sw, :] if (sh, sw) != (1, 1) else x
    return np.ascontiguousarray(x).reshape(-1, x.shape[3])


def _pointwise_forward(xp, x, w, b, activation, strides, data_format, dtype):
    x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
    f = w.shape[0]
    w2 = np.ascontiguousarray(w.reshape(f, -1))  # (F, C) in both layouts
    cols = _pointwise_pixels(x, strides, data_format)
    sh, sw = _pair(strides, "strides")
    if data_format == "NCHW":
        n, (oh, ow) = x.shape[0], ((x.shape[2] - 1) // sh + 1, (x.shape[3] - 1) // sw + 1)
        out = np.empty((n, f, oh * ow), dtype=dtype)

        def run(n0, n1):
            np.matmul(w2, cols[n0:n1], out=out[n0:n1])
            if b is not None or activation is not None:
                _epilogue(xp, out[n0:n1], b if b is not None else np.zeros(f, dtype), activation,
                          _use_jit(xp, out.dtype))
        _over_samples(xp, n, run)
        return out.reshape(n, f, oh, ow)
    n, (oh, ow) = x.shape[0], ((x.shape[1] - 1) // sh + 1, (x.shape[2] - 1) // sw + 1)
    out = np.empty((n * oh * ow, f), dtype=dtype)
    blas.gemm(cols, w2, out, trans_b=True)
    if b is not None:
        out += b.astype(dtype, copy=False)
    if activation == "relu":
        np.maximum(out, dtype.type(0), out=out)
    return out.reshape(n, oh, ow, f)


def _pointwise_grad_input(xp, dy, w, input_shape, strides, data_format, dtype):
    f = w.shape[0]
    w2 = np.ascontiguousarray(w.astype(dtype, copy=False).reshape(f, -1))  # (F, C)
    sh, sw = _pair(strides, "strides")
    strided = (sh, sw) != (1, 1)
    if data_format == "NCHW":
        n, c, h, wd = input_shape
        dy3 = np.ascontiguousarray(dy, dtype=dtype).reshape(n, f, -1)
        dx = (np.zeros if strided else np.empty)((n, c, h, wd), dtype=dtype)

        def run(n0, n1):
            if strided:
                dx[n0:n1, :, ::sh, ::sw] = np.matmul(w2.T, dy3[n0:n1]).reshape(
                    (n1 - n0, c) + dx[0, 0, ::sh, ::sw].shape)
            else:
                np.matmul(w2.T, dy3[n0:n1], out=dx[n0:n1].reshape(n1 - n0, c, h * wd))
        _over_samples(xp, n, run)
        return dx
    n, h, wd, c = input_shape
    dy2 = np.ascontiguousarray(dy, dtype=dtype).reshape(-1, f)
    if not strided:
        dx = np.empty((n * h * wd, c), dtype=dtype)
        blas.gemm(dy2, w2, dx)
        return dx.reshape(n, h, wd, c)
    dx = np.zeros((n, h, wd, c), dtype=dtype)
    dx[:, ::sh, ::sw, :] = (dy2 @ w2).reshape(dy.shape[:3] + (c,))
    return dx


def _pointwise_grad_weight(xp, dy, x, weight_shape, strides, data_format, dtype):
    f = weight_shape[0]
    cols = _pointwise_pixels(x.astype(dtype, copy=False), strides, data_format)
    if data_format == "NCHW":
        n = x.shape[0]
        dy3 = np.ascontiguousarray(dy, dtype=dtype).reshape(n, f, -1)

        def run(n0, n1):
            dw = np.zeros((f, cols.shape[1]), dtype=dtype)
            for s in range(n0, n1):  # dW += dy[s] (F, pixels) @ x[s].T (pixels, C)
                blas.gemm(dy3[s], cols[s], dw, beta=1.0, trans_b=True)
            return dw
        parts = _over_samples(xp, n, run)
        total = parts[0]
        for more in parts[1:]:
            total += more
    else:
        dy2 = np.ascontiguousarray(dy, dtype=dtype).reshape(-1, f)
        total = np.empty((f, cols.shape[1]), dtype=dtype)
        blas.gemm(dy2, cols, total, trans_a=True)
    return total.reshape(tuple(weight_shape))


def _conv_forward(xp, x, w, b, activation, strides, pads, dilations, groups, data_format):
    (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, (oh, ow) = _conv_setup(
        x.shape, w.shape, strides, pads, dilations, groups, data_format)
    if activation not in (None, "relu"):
        raise ValueError("conv2d: activation must be None or 'relu', got %r" % (activation,))
    dtype = xp.result_type(x, w)
    if x.size == 0 or w.size == 0:
        # an empty piece (a split axis shorter than the device count) contributes zeros (plus the bias)
        out = xp.zeros((n, f, oh, ow), dtype=dtype)
        if b is not None:
            _epilogue(xp, out.reshape(n, f, oh * ow), b, activation, False)
        return _from_nchw_array(xp, out, data_format)
    if _on_device(xp, dtype):
        # the whole batch: patches (N, G, Kg, P), one batched product by the weight (G, Fg, Kg), the epilogue
        x = _nchw_contiguous(xp, x, data_format, dtype)
        cols = cuda_nn.im2col(xp, x, kh, kw, strides, dilations, pads, (oh, ow))
        w3 = _weight_groups(xp, w, data_format, groups, dtype)
        out = cuda_blas.matmul(xp, w3, cols.reshape(n, groups, cg * kh * kw, oh * ow)).reshape(n, f, oh, ow)
        if b is not None:
            cuda_nn.bias_act(xp, out, b, activation == "relu")
        return _from_nchw_array(xp, out, data_format)
    if _pointwise(xp, w.shape, strides, pads, groups, data_format):
        return _pointwise_forward(xp, x, w, b, activation, strides, data_format, xp.dtype(dtype))
    g = _Geometry(xp, dtype, (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, groups, (oh, ow))
    x = _nchw_contiguous(xp, x, data_format, g.dtype)
    out = xp.empty((n, f, oh, ow), dtype=g.dtype)
    out3 = out.reshape(n, f, g.p)
    if g.implicit_forward:
        w_kf = xp.ascontiguousarray(_weight_pixel_major(xp, w, data_format, g.dtype).T).reshape(-1)
        bias = (b if b is not None else xp.zeros(0)).astype(g.dtype, copy=False)
        pixels, columns, _ = g.tables()
        filters, along_k, by_pixel = _steps(f // _VECTOR_LANES, _VECTOR_LANES), _steps(g.k, f), _steps(g.p, f)
        sample = g.padded_hw[0] * g.padded_hw[1] * g.c

        def run(n0, n1):
            for c0, c1 in g.implicit_chunks(n0, n1, g.p * f):
                padded = g.channels_last(x, c0, c1)
                prod = _workspace(xp, (c1 - c0, g.p, f), g.dtype, slot=1)
                # prod[s, p, :] = sum over patch columns of padded[s][pixel p's window] * W (K, F)
                vector_gemm.gemm(padded.reshape(-1), pixels, columns, w_kf, along_k, filters, prod.reshape(-1),
                                 by_pixel, filters, samples=c1 - c0, strides=(sample, 0, g.p * f),
                                 lanes=_VECTOR_LANES)
                for s in range(c0, c1):
                    nn_jit.pixel_epilogue(prod[s - c0], out3[s], bias, activation == "relu")
    elif g.pixel_major:
        w_kf = xp.ascontiguousarray(_weight_pixel_major(xp, w, data_format, g.dtype).T)
        if g.jit:
            bias = (b if b is not None else xp.zeros(0)).astype(g.dtype, copy=False)

            def run(n0, n1):
                padded, cols = g.scratch()
                prod = _workspace(xp, (g.p, f), g.dtype, slot=1)
                args = g.args()
                for s in range(n0, n1):
                    nn_jit.pixel_patches(x[s], padded, cols, *args)
                    xp.matmul(cols, w_kf, out=prod)
                    nn_jit.pixel_epilogue(prod, out3[s], bias, activation == "relu")
        else:
            def run(n0, n1):
                for c0, c1 in g.chunks(n0, n1):
                    out3[c0:c1] = xp.matmul(g.pixel_patches(x, c0, c1), w_kf).transpose(0, 2, 1)
                    if b is not None:
                        _epilogue(xp, out3[c0:c1], b, activation, False)
    else:
        w3 = _weight_groups(xp, w, data_format, groups, g.dtype)
        padded = _pad_nchw(xp, x, pads, 0)

        def run(n0, n1):
            for c0, c1 in g.chunks(n0, n1):
                cols = g.patches(padded, c0, c1)
                for gi in range(groups):
                    xp.matmul(w3[gi], cols[:, gi * g.kg:(gi + 1) * g.kg],
                              out=out3[c0:c1, gi * g.fg:(gi + 1) * g.fg])
                if b is not None:
                    _epilogue(xp, out3[c0:c1], b, activation, g.jit)
    _over_samples(xp, n, run)
    return _from_nchw_array(xp, out, data_format)


def _epilogue(xp, out3, b, activation, jit):
    """out3 (n, F, pixels) += bias per filter, then the activation, in place: exactly bias_add then relu."""
    if jit:
        nn_jit.bias_act(out3, b.astype(out3.dtype, copy=False), activation == "relu")
        return out3
    out3 += b.reshape(1, -1, 1)
    if activation == "relu":
        xp.maximum(out3, out3.dtype.type(0), out=out3)
    return out3


@through_float32  # float16 on the CPU: float32 GEMMs, rounded once (kernels/half_products.py)
def conv2d(xp, x, w, *, strides=1, pads=((0, 0), (0, 0)), dilations=1, groups=1, data_format="NCHW"):
    """Cross-correlation. Weight layout: NCHW (F, C/groups, kh, kw); NHWC (F, kh, kw, C/groups)."""
    return _conv_forward(xp, x, w, None, None, strides, pads, dilations, groups, data_format)


def conv2d_bias_act(xp, x, w, b, *, activation=None, strides=1, pads=((0, 0), (0, 0)), dilations=1, groups=1,
                    data_format="NCHW"):
    """conv2d, + b per output channel, then `activation` (None | "relu"): the values of conv2d, bias_add and relu
    one after the other, with the bias and the activation applied while each chunk of the output is in cache."""
    if activation in (None, "relu") and all_half(xp, (x, w, b)):
        # float16: the convolution through float32 GEMMs rounded to float16, then bias and relu in float16 — the
        # values of the unfused conv2d, bias_add and relu (each rounds its float16 result)
        y = conv2d(xp, x, w, strides=strides, pads=pads, dilations=dilations, groups=groups, data_format=data_format)
        y += b.reshape((1, -1, 1, 1) if data_format == "NCHW" else (1, 1, 1, -1))
        if activation == "relu":
            xp.maximum(y, y.dtype.type(0), out=y)
        return y
    return _conv_forward(xp, x, w, b, activation, strides, pads, dilations, groups, data_format)


@through_float32  # float16 on the CPU: float32 GEMMs, rounded once (kernels/half_products.py)
def conv2d_grad_weight(xp, dy, x, *, weight_shape, strides=1, pads=((0, 0), (0, 0)), dilations=1,
                       groups=1, data_format="NCHW"):
    """d weight of `conv2d`, in `weight_shape` (the caller's weight layout): patches recomputed chunk by chunk
    (a copy per chunk is cheaper than keeping a batch of them), each thread summing its samples, then the sums."""
    (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, out_hw = _conv_setup(
        x.shape, weight_shape, strides, pads, dilations, groups, data_format)
    if dy.size == 0 or x.size == 0:
        return xp.zeros(tuple(weight_shape), dtype=dy.dtype)
    dtype = xp.result_type(dy, x)
    if _on_device(xp, dtype):
        # dyt (G, Fg, N·P) @ patches^T (G, N·P, Kg): one product whose reduction runs over the whole batch's
        # positions (both operands written by one launch), not a batched product per sample and a sum over the batch
        k, np_ = cg * kh * kw, n * out_hw[0] * out_hw[1]
        cols, dyt = cuda_nn.weight_grad_operands(xp, _nchw_contiguous(xp, x, data_format, dtype),
                                                 _nchw_contiguous(xp, dy, data_format, dtype), kh, kw, strides,
                                                 dilations, pads, out_hw)
        if groups == 1:
            dw = cuda_blas.matmul(xp, dyt, cols.T)
        else:
            dw = cuda_blas.matmul(xp, dyt.reshape(groups, f // groups, np_), cols.reshape(groups, k, np_).transpose(
                0, 2, 1))
        dw = dw.reshape(f, cg, kh, kw)
        return dw if data_format == "NCHW" else xp.ascontiguousarray(dw.transpose(0, 2, 3, 1))
    if _pointwise(xp, weight_shape, strides, pads, groups, data_format):
        return _pointwise_grad_weight(xp, dy, x, weight_shape, strides, data_format, xp.result_type(dy, x))
    g = _Geometry(xp, xp.result_type(dy, x), (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, groups,
                  out_hw)
    x = _nchw_contiguous(xp, x, data_format, g.dtype)
    dy3 = _nchw_contiguous(xp, dy, data_format, g.dtype).reshape(n, f, g.p)
    if g.implicit_grads:
        pixels, _, column_vectors = g.tables()
        by_filter, vectors, along_p = _steps(f, g.p), _steps(g.k // _VECTOR_LANES, _VECTOR_LANES), _steps(g.p, 1)
        sample = g.padded_hw[0] * g.padded_hw[1] * g.c

        def run(n0, n1):
            dw = xp.zeros((f, g.k), dtype=g.dtype)
            for c0, c1 in g.implicit_chunks(n0, n1, f * g.p):
                padded = g.channels_last(x, c0, c1)
                # dW[f, :] += sum over pixels p of dy[s, f, p] * (the patch row of p, read from padded[s])
                vector_gemm.gemm(dy3[c0:c1].reshape(-1), by_filter, along_p, padded.reshape(-1), pixels,
                                 column_vectors, dw.reshape(-1), _steps(f, g.k), vectors, samples=c1 - c0,
                                 strides=(f * g.p, sample, 0), accumulate=True, lanes=_VECTOR_LANES)
            return dw
    elif g.pixel_major:
        def run(n0, n1):
            dw = xp.zeros((f, g.k), dtype=g.dtype)
            if g.jit:
                padded, cols = g.scratch()
                args = g.args()
                for s in range(n0, n1):
                    nn_jit.pixel_patches(x[s], padded, cols, *args)
                    blas.gemm(dy3[s], cols, dw, beta=1.0)
            else:
                for c0, c1 in g.chunks(n0, n1):
                    dw += xp.matmul(dy3[c0:c1], g.pixel_patches(x, c0, c1)).sum(axis=0)
            return dw
    else:
        padded = _pad_nchw(xp, x, pads, 0)

        def run(n0, n1):
            # accumulated transposed, patches @ dy^T: OpenBLAS runs this orientation faster for these shapes
            dw_t = xp.zeros((groups, g.kg, g.fg), dtype=g.dtype)
            part = _workspace(xp, (g.chunk, g.kg, g.fg), g.dtype, slot=1)
            for c0, c1 in g.chunks(n0, n1):
                cols = g.patches(padded, c0, c1)
                for gi in range(groups):
                    prod = part[:c1 - c0]
                    xp.matmul(cols[:, gi * g.kg:(gi + 1) * g.kg],
                              dy3[c0:c1, gi * g.fg:(gi + 1) * g.fg].transpose(0, 2, 1), out=prod)
                    dw_t[gi] += prod[0] if c1 - c0 == 1 else prod.sum(axis=0)
            return dw_t
    parts = _over_samples(xp, n, run)
    total = parts[0]
    for more in parts[1:]:
        total += more
    if g.pixel_major or g.implicit_grads:
        dw = total.reshape(f, kh, kw, c)  # (F, kh, kw, C): NHWC's own layout
        dw = dw.transpose(0, 3, 1, 2) if data_format == "NCHW" else dw
    else:
        dw = total.transpose(0, 2, 1).reshape(f, cg, kh, kw)
        dw = dw if data_format == "NCHW" else dw.transpose(0, 2, 3, 1)
    return xp.ascontiguousarray(dw)


@through_float32  # float16 on the CPU: float32 GEMMs, rounded once (kernels/half_products.py)
def conv2d_grad_input(xp, dy, w, *, input_shape, strides=1, pads=((0, 0), (0, 0)), dilations=1,
                      groups=1, data_format="NCHW"):
    """d input of `conv2d`, in `input_shape` with dy's batch size (a dynamic batch may hold fewer rows than the
    static shape says): per chunk, patch gradients by one product, then col2im adds them back in one pass."""
    input_shape = (dy.shape[0],) + tuple(input_shape[1:])
    (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, out_hw = _conv_setup(
        input_shape, w.shape, strides, pads, dilations, groups, data_format)
    if dy.size == 0 or w.size == 0:
        return xp.zeros(input_shape, dtype=dy.dtype)
    dtype = xp.result_type(dy, w)
    if _on_device(xp, dtype):
        # patch gradients of the whole batch, W^T (G, Kg, Fg) @ dy (N, G, Fg, P) in one batched product, col2im
        k, p = cg * kh * kw, out_hw[0] * out_hw[1]
        dy4 = _nchw_contiguous(xp, dy, data_format, dtype).reshape(n, groups, f // groups, p)
        w3 = _weight_groups(xp, w, data_format, groups, dtype)
        dcols = cuda_blas.matmul(xp, w3.transpose(0, 2, 1), dy4).reshape(n, groups * k, p)
        dx = cuda_nn.col2im(xp, xp.ascontiguousarray(dcols), (n, c, h, wd), kh, kw, strides, dilations, pads,
                            out_hw)
        return _from_nchw_array(xp, dx, data_format)
    if _pointwise(xp, w.shape, strides, pads, groups, data_format):
        return _pointwise_grad_input(xp, dy, w, input_shape, strides, data_format, xp.result_type(dy, w))
    g = _Geometry(xp, xp.result_type(dy, w), (n, c, h, wd), (f, cg, kh, kw), strides, pads, dilations, groups,
                  out_hw)
    dy3 = _nchw_contiguous(xp, dy, data_format, g.dtype).reshape(n, f, g.p)
    dx = xp.empty((n, c, h, wd), dtype=g.dtype)
    if g.implicit_grads:
        w_fk = _weight_pixel_major(xp, w, data_format, g.dtype).reshape(-1)
        pixels, _, column_vectors = g.tables()
        along_f, by_filter = _steps(f, g.p), _steps(f, g.k)
        vectors, along_p = _steps(g.k // _VECTOR_LANES, _VECTOR_LANES), _steps(g.p, 1)
        sample = g.padded_hw[0] * g.padded_hw[1] * g.c
        (top, _), (left, _) = g.pads

        def run(n0, n1):
            for c0, c1 in g.implicit_chunks(n0, n1, f * g.p):
                grad = _workspace(xp, (c1 - c0,) + g.padded_hw + (g.c,), g.dtype, slot=2)
                grad[...] = 0
                # the patch gradient dy[s]^T @ W (F, K), each row added into the cells its patch was read from
                vector_gemm.gemm(dy3[c0:c1].reshape(-1), along_p, along_f, w_fk, by_filter, vectors,
                                 grad.reshape(-1), pixels, column_vectors, samples=c1 - c0,
                                 strides=(f * g.p, 0, sample), accumulate=True, lanes=_VECTOR_LANES)
                nn_jit.channels_last_cropped(grad, dx[c0:c1], top, left)
    elif g.pixel_major:
        w_fk = _weight_pixel_major(xp, w, data_format, g.dtype)

        def run(n0, n1):
            if g.jit:
                padded, dcols = g.scratch()
                args = g.args()
                for s in range(n0, n1):
                    xp.matmul(dy3[s].T, w_fk, out=dcols)
                    nn_jit.pixel_col2im(dcols, padded, dx[s], *args)
            else:
                for c0, c1 in g.chunks(n0, n1):
                    g.pixel_col2im(xp.matmul(dy3[c0:c1].transpose(0, 2, 1), w_fk), dx[c0:c1])
    else:
        w3 = _weight_groups(xp, w, data_format, groups, g.dtype)

        def run(n0, n1):
            for c0, c1 in g.chunks(n0, n1):
                dcols = _workspace(xp, (c1 - c0, g.k, g.p), g.dtype)
                for gi in range(groups):
                    xp.matmul(w3[gi].T, dy3[c0:c1, gi * g.fg:(gi + 1) * g.fg],
                              out=dcols[:, gi * g.kg:(gi + 1) * g.kg])
                g.col2im(dcols, dx[c0:c1])
    _over_samples(xp, n, run)
    return _from_nchw_array(xp, dx, data_format)


# --- pooling -----------------------------------------------------------------------

@_memo_geometry
def _pool_setup(x_shape, ksize, strides, pads, data_format, ceil_mode):
    _check_format(data_format)
    n, c, h, w = _nchw_shape(x_shape, data_format)
    ksize, strides, pads = _pair(ksize, "ksize"), _pair(strides, "strides"), _pads(pads)
    out_hw = conv_out_hw((h, w), ksize, strides, pads, 1, ceil_mode)
    # ceil_mode windows may reach past the bottom/right padding: pad those cells too
    extra = tuple(max(0, (o - 1) * s + k - (size + before + after))
                  for o, s, k, size, (before, after) in zip(out_hw, strides, ksize, (h, w), pads))
    return (h, w), ksize, strides, pads, out_hw, extra


def _spread_batch(n, fn):
    """fn(n0, n1) over ranges of the batch on as many threads as the BLAS runs (the compiled pooling loops)."""
    cpu_threads.spread(n, cpu_threads.threads(), fn)


def _lowest(xp, dtype):
    return -xp.inf if xp.dtype(dtype).kind == "f" else xp.iinfo(dtype).min


def max_pool2d(xp, x, *, ksize, strides, pads=((0, 0), (0, 0)), data_format="NCHW", ceil_mode=False):
    """Window maximum; padded cells hold the lowest value, so they never win."""
    _, ksize, strides, pads, out_hw, extra = _pool_setup(x.shape, ksize, strides, pads, data_format,
                                                         ceil_mode)
    if _on_device(xp, x.dtype) and x.size:
        y = cuda_nn.max_pool(xp, _nchw_contiguous(xp, x, data_format), ksize, strides, pads, out_hw)
        return _from_nchw_array(xp, y, data_format)
    if _use_jit(xp, x.dtype) and x.size:
        xn = _nchw_contiguous(xp, x, data_format)
        y = xp.empty(xn.shape[:2] + tuple(out_hw), dtype=x.dtype)
        _spread_batch(xn.shape[0], lambda n0, n1: nn_jit.max_pool(
            xn[n0:n1], y[n0:n1], ksize[0], ksize[1], strides[0], strides[1], pads[0][0], pads[1][0]))
        return _from_nchw_array(xp, y, data_format)
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
    return _max_pool_grad(xp, dy, x, y, ksize, strides, pads, data_format, ceil_mode, False)


def max_pool2d_relu_grad(xp, dy, x, y, *, ksize, strides, pads=((0, 0), (0, 0)), data_format="NCHW",
                         ceil_mode=False):
    """relu_grad(max_pool2d_grad(dy, x, y), x) in one pass, for a pool whose input x is a relu's output: each
    window's dy goes to its arg-max cell where that cell is positive."""
    return _max_pool_grad(xp, dy, x, y, ksize, strides, pads, data_format, ceil_mode, True)


def _max_pool_grad(xp, dy, x, y, ksize, strides, pads, data_format, ceil_mode, relu):
    hw, ksize, strides, pads, out_hw, extra = _pool_setup(x.shape, ksize, strides, pads, data_format,
                                                          ceil_mode)
    if _on_device(xp, x.dtype) and x.size and dy.dtype == x.dtype == y.dtype:
        xn, yn, dyn = (_nchw_contiguous(xp, a, data_format) for a in (x, y, dy))
        dx = cuda_nn.max_pool_grad(xp, dyn, xn, yn, ksize, strides, pads, relu)
        return _from_nchw_array(xp, dx, data_format)
    if _use_jit(xp, xp.result_type(dy, x)) and x.size:
        xn, yn, dyn = (_nchw_contiguous(xp, a, data_format) for a in (x, y, dy))
        dx = xp.empty(xn.shape, dtype=dy.dtype)
        _spread_batch(xn.shape[0], lambda n0, n1: nn_jit.max_pool_grad(
            dyn[n0:n1], xn[n0:n1], yn[n0:n1], dx[n0:n1], ksize[0], ksize[1], strides[0], strides[1], pads[0][0],
            pads[1][0], relu))
        return _from_nchw_array(xp, dx, data_format)
    dx = _max_pool_grad_numpy(xp, dy, x, y, hw, ksize, strides, pads, out_hw, extra, data_format)
    return dx * (x > 0) if relu else dx  # relu_grad's own formula (kernels/activation.py)


def _max_pool_grad_numpy(xp, dy, x, y, hw, ksize, strides, pads, out_hw, extra, data_format):
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
    if _on_device(xp, x.dtype) and x.size:
        y = cuda_nn.avg_pool(xp, _nchw_contiguous(xp, x, data_format), ksize, strides, pads, out_hw)
        return _from_nchw_array(xp, y, data_format)
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
    if _on_device(xp, dy.dtype) and dy.size:
        n, c = _as_nchw(dy, data_format).shape[:2]  # the batch is dy's
        dx = cuda_nn.avg_pool_grad(xp, _nchw_contiguous(xp, dy, data_format), (n, c) + tuple(hw), ksize, strides,
                                   pads)
        return _from_nchw_array(xp, dx, data_format)
    share = _as_nchw(dy, data_format) / _valid_counts(xp, hw, ksize, strides, pads, out_hw, dy.dtype)
    (top, bottom), (left, right) = pads
    h, w = hw
    n, c = share.shape[:2]
    dx = xp.zeros((n, c, h + top + bottom + extra[0], w + left + right + extra[1]), dtype=dy.dtype)
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            _window(dx, i, j, out_hw, strides)[...] += share
    return _from_nchw(xp, dx[:, :, top:top + h, left:left + w], data_format)
