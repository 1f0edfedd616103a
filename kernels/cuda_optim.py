"""CUDA kernels of the SGD, momentum and Adam updates on a device, each one launch, with their numpy twins
(kernels/cuda_source.py).

The learning rate (Adam: the bias-corrected rate) is read from device memory — a step scalar the runtime uploads
at the start of every call (runtime/step_scalars.py) — never passed by value, so a captured CUDA graph reads each
call's rate. The arithmetic is `kernels/optim.py`'s and `Optimizer.update_scaled`'s, in the same order and with the
same roundings (hyper-parameters rounded to float32 as OneFlow's float attributes, the gradient scale in the
gradient's dtype; compiled with --fmad=false, so float32 results equal numpy's bit for bit):

* `sgd`: `fused` (a gradient the update owns, no weight decay: `update_scaled`'s fused branch)
  `w -= g·(lr·scale)`; else `w -= (wd·w + g·scale)·lr`;
* `momentum`: `fused`: `m = m·β − g·(lr·scale); w += m` (β rounded to float32, then in the dtype of m); else
  `m = m·β − lr·(g·scale); w += m; w −= lr·wd·w_old` (β rounded to float32);
* `adam`: `m = β1·m + (1−β1)·g; v = β2·v + ((1−β2)·g)·g; w −= lr'·(m / (√v + ε) + wd·w)`
  (g scaled first).

A bias's gradient and its SGD step, without CuPy's reductions (each one cost ~50 µs of host time per call on the
first GPU run, 4 per LeNet step): the gradient is the sum of the gradient flowing into bias_add over every axis
but the bias's, which for a C-contiguous (pre, K, post) array (the bias's axis K between the summed ones: NCHW's
conv bias has pre = N, post = H·W; a dense bias pre = N, post = 1) is

* `row_sums` (only where post > 1): `out[r] = Σ_j x[r, j]` over the rows of the (pre·K, post) view;
* `colsum_sgd`: `g[c] = Σ_r x[r, c]` over the (pre, K) array (the row sums, or x itself), then the fused branch of
  `sgd` or `momentum` with that g: `w -= g·(lr·scale)`, or `m = m·β − g·(lr·scale); w += m`.

Both are a block of `LANES` threads per output (the module `REDUCE`, cooperative: kernels/cuda_source.py): lane l
adds items l, l + LANES, ... in double, in index order (a row's consecutive lanes read consecutive addresses), then
a fixed tree over the lanes, the gradient rounded to the array's dtype once — the same bits every run, and the
twins' (`_lane_sums`, the same order): as close to the exact sum as the CPU's pairwise float32 sums, or closer.
(They were a thread per output summing its row serially: LeNet's conv1 bias left an H100 3,200 threads, each 784
dependent reads.) One launch for a dense bias (its sum and update; it was a reduction and an update), two for a
convolution's.
"""
import numpy

from .cuda_source import CudaModule

_HEADER = r"""
#define GRID_LOOP(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)
"""

# The reductions' module is cooperative (kernels/cuda_source.py): LANES threads per block, exactly, summing one
# output together. Lane l adds, in double and in index order, the items l, l + LANES, l + 2·LANES, ... (consecutive
# lanes read consecutive addresses); then a fixed tree over the lanes (lane i += lane i + s for s = LANES/2, ..., 1)
# gives the sum, the same every run, whatever the grid: the twins (`_lane_sums`) add in this order, to the bit.
LANES = 256
_REDUCE_HEADER = r"""
#define LANES %d
// Σ over the block's lanes of `acc` in a fixed tree, for every thread of the block (all must call it: barriers)
__device__ __forceinline__ double block_sum(double* part, double acc) {
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = LANES / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    double total = part[0];
    __syncthreads();  // (part is written again by the next output's call)
    return total;
}
""" % LANES

_TEMPLATE = r"""

extern "C" __global__ void sgd_{S}({T}* w, const {T}* g, const float* lr, long long n, {T} scale, float wd,
                                   int fused) {
    float rate = lr[0];
    GRID_LOOP(i, n) {
        if (fused) {
            w[i] = w[i] - g[i] * ({T})(rate * (float)scale);
        } else {
            {T} gs = scale != ({T})1 ? g[i] * scale : g[i];
            {T} delta = wd != 0.0f ? ({T})wd * w[i] + gs : gs;
            w[i] = w[i] - delta * ({T})rate;
        }
    }
}

extern "C" __global__ void momentum_{S}({T}* w, {T}* m, const {T}* g, const float* lr, long long n, {T} scale,
                                        {T} beta, float wd, int fused) {
    float rate = lr[0];
    GRID_LOOP(i, n) {
        if (fused) {
            {T} mi = m[i] * beta - g[i] * ({T})(rate * (float)scale);
            m[i] = mi;
            w[i] = w[i] + mi;
        } else {
            {T} gs = scale != ({T})1 ? g[i] * scale : g[i];
            {T} decay = ({T})(rate * wd) * w[i];
            {T} mi = m[i] * ({T})(float)beta - ({T})rate * gs;
            m[i] = mi;
            {T} wi = w[i] + mi;
            w[i] = wd != 0.0f ? wi - decay : wi;
        }
    }
}

extern "C" __global__ void adam_{S}({T}* w, {T}* m, {T}* v, const {T}* g, const float* lr, long long n, {T} scale,
                                    float beta1, float beta2, float epsilon, float wd) {
    float rate = lr[0];
    GRID_LOOP(i, n) {
        {T} gs = scale != ({T})1 ? g[i] * scale : g[i];
        {T} mi = m[i] * ({T})beta1 + ({T})(1.0f - beta1) * gs;
        {T} vi = v[i] * ({T})beta2 + (({T})(1.0f - beta2) * gs) * gs;
        m[i] = mi;
        v[i] = vi;
        {T} delta = mi / (sqrt(vi) + ({T})epsilon);
        if (wd != 0.0f) delta = delta + ({T})wd * w[i];
        w[i] = w[i] - delta * ({T})rate;
    }
}

"""

_REDUCE_TEMPLATE = r"""
extern "C" __global__ void row_sums_{S}(const {T}* x, {T}* out, long long rows, long long length) {
    __shared__ double part[LANES];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {  // a block per row (uniform: barriers are safe)
        const {T}* row = x + r * length;
        double acc = 0.0;
        for (long long j = threadIdx.x; j < length; j += LANES) acc += (double)row[j];
        out[r] = ({T})block_sum(part, acc);
    }
}

extern "C" __global__ void colsum_sgd_{S}({T}* w, {T}* m, const {T}* x, const float* lr, long long rows,
                                          long long cols, {T} scale, {T} beta, int momentum) {
    __shared__ double part[LANES];
    float rate = lr[0];
    for (long long c = blockIdx.x; c < cols; c += gridDim.x) {  // a block per column
        double acc = 0.0;
        for (long long r = threadIdx.x; r < rows; r += LANES) acc += (double)x[r * cols + c];
        {T} g = ({T})block_sum(part, acc);
        if (threadIdx.x == 0) {
            if (momentum) {
                {T} mi = m[c] * beta - g * ({T})(rate * (float)scale);
                m[c] = mi;
                w[c] = w[c] + mi;
            } else {
                w[c] = w[c] - g * ({T})(rate * (float)scale);
            }
        }
    }
}
"""

_SUFFIX = {numpy.dtype(numpy.float32): "f32", numpy.dtype(numpy.float64): "f64"}
_F32 = numpy.float32


_COUNTER = r"""
extern "C" __global__ void increment_i64(long long* step, long long n) {
    GRID_LOOP(i, n) step[i] += 1;
}

extern "C" __global__ void increment_i32(int* step, long long n) {
    GRID_LOOP(i, n) step[i] += 1;
}
"""


def _source(template=_TEMPLATE, header=_HEADER, tail=_COUNTER):
    return header + "".join(template.replace("{T}", t).replace("{S}", s)
                            for t, s in (("float", "f32"), ("double", "f64"))) + tail


def _increment_twin(step, n):
    step.reshape(-1)[:n] += 1


def _sgd_twin(w, g, lr, n, scale, wd, fused):
    rate = _F32(lr.reshape(-1)[0])
    t = w.dtype.type
    if fused:
        w -= g * t(_F32(rate * _F32(scale)))
        return
    gs = g * scale if scale != 1 else g
    delta = t(_F32(wd)) * w + gs if wd != 0 else gs
    w -= delta * t(rate)


def _momentum_twin(w, m, g, lr, n, scale, beta, wd, fused):
    rate = _F32(lr.reshape(-1)[0])
    t = w.dtype.type
    if fused:
        m[...] = m * t(beta) - g * t(_F32(rate * _F32(scale)))
        w += m
        return
    gs = g * scale if scale != 1 else g
    decay = t(_F32(rate * _F32(wd))) * w
    m[...] = m * t(_F32(beta)) - t(rate) * gs
    w += m
    if wd != 0:
        w -= decay


def _adam_twin(w, m, v, g, lr, n, scale, beta1, beta2, epsilon, wd):
    rate = _F32(lr.reshape(-1)[0])
    t = w.dtype.type
    gs = g * scale if scale != 1 else g
    m[...] = m * t(_F32(beta1)) + t(_F32(1) - _F32(beta1)) * gs
    v[...] = v * t(_F32(beta2)) + (t(_F32(1) - _F32(beta2)) * gs) * gs
    delta = m / (numpy.sqrt(v) + t(_F32(epsilon)))
    if wd != 0:
        delta = delta + t(_F32(wd)) * w
    w -= delta * t(rate)


def _lane_sums(view):
    """Σ along axis 1 of the 2-D `view` in float64, in the reductions' order (`LANES`): lane l adds items l,
    l + LANES, ... in index order (numpy's accumulate is sequential: the last running sum is that sum), then the
    lanes' tree. Padding adds +0.0, which changes no sum that starts from +0.0."""
    outputs, length = view.shape
    chunks = max(1, -(-length // LANES))
    lanes = numpy.zeros((outputs, chunks * LANES))
    lanes[:, :length] = view
    part = numpy.cumsum(lanes.reshape(outputs, chunks, LANES), axis=1).take(-1, axis=1)
    s = LANES // 2
    while s:
        part[:, :s] += part[:, s:2 * s]
        s //= 2
    return part[:, 0]


def _row_sums_twin(x, out, rows, length):
    view = x.reshape(-1)[:rows * length].reshape(rows, length)
    out.reshape(-1)[:rows] = _lane_sums(view).astype(out.dtype)


def _colsum_sgd_twin(w, m, x, lr, rows, cols, scale, beta, momentum):
    rate = _F32(lr.reshape(-1)[0])
    view = x.reshape(-1)[:rows * cols].reshape(rows, cols)
    t = w.dtype.type
    g = _lane_sums(view.T).astype(w.dtype)
    c = t(_F32(rate * _F32(scale)))
    w1, m1 = w.reshape(-1)[:cols], m.reshape(-1)[:cols]
    if momentum:
        m1[...] = m1 * t(beta) - g * c
        w1 += m1
    else:
        w1 -= g * c


_TWINS = {"increment_i64": _increment_twin, "increment_i32": _increment_twin}
MODULE = CudaModule("optim", _source(), {**_TWINS, **{"%s_%s" % (name, s): twin for name, twin in
                                          (("sgd", _sgd_twin), ("momentum", _momentum_twin), ("adam", _adam_twin))
                                          for s in ("f32", "f64")}},
                    options=("--std=c++17", "--fmad=false"))
REDUCE = CudaModule("optim_reduce", _source(_REDUCE_TEMPLATE, _HEADER + _REDUCE_HEADER, ""),
                    {"%s_%s" % (name, s): twin for name, twin in
                     (("row_sums", _row_sums_twin), ("colsum_sgd", _colsum_sgd_twin)) for s in ("f32", "f64")},
                    options=("--std=c++17", "--fmad=false"), block=LANES)


def supported(*arrays):
    """Whether the device updates take these arrays: float32 or float64, one dtype, C-contiguous."""
    dtype = arrays[0].dtype
    return numpy.dtype(dtype) in _SUFFIX and all(a.dtype == dtype and a.flags.c_contiguous for a in arrays)


def _name(base, dtype):
    return "%s_%s" % (base, _SUFFIX[numpy.dtype(dtype)])


def sgd(xp, w, g, lr, *, scale=1.0, weight_decay=0.0, fused=False):
    """In place; `lr` a float32 device scalar (0-d or (1,))."""
    MODULE.launch(xp, _name("sgd", w.dtype), w.size, w, g, lr, w.size, scale, weight_decay, 1 if fused else 0)


def momentum(xp, w, m, g, lr, *, beta, scale=1.0, weight_decay=0.0, fused=False):
    # β rounded to float32 on both branches (OneFlow's `beta` is a float attribute): the fused branch multiplies by
    # it in m's dtype, which must not make a float64 job's numbers depend on whether the gradient was owned (one
    # device) or shared by replicas (several: the first GPU run's 2 devices != 1 at 2e-8)
    beta = float(numpy.float32(beta))
    MODULE.launch(xp, _name("momentum", w.dtype), w.size, w, m, g, lr, w.size, scale, beta, weight_decay,
                  1 if fused else 0)


def adam(xp, w, m, v, g, lr, *, beta1, beta2, epsilon, scale=1.0, weight_decay=0.0):
    """`lr` is the rate the step uses: the bias-corrected one when Adam corrects."""
    MODULE.launch(xp, _name("adam", w.dtype), w.size, w, m, v, g, lr, w.size, scale, beta1, beta2, epsilon,
                  weight_decay)


_LAYOUTS = {}  # (shape, axis, dtype) -> bias_layout's answer (a step asks the same few every call)


def bias_layout(x, axis):
    """(pre, K, post) when summing C-contiguous `x` over `axis` keeps one contiguous run of axes (K elements, `pre`
    before it, `post` after it: a bias gradient's layout), else None."""
    key = (x.shape, tuple(axis), x.dtype)
    found = _LAYOUTS.get(key, False)
    if found is False:
        if len(_LAYOUTS) > 256:
            _LAYOUTS.clear()
        found = _LAYOUTS[key] = _bias_layout(x, axis)
    return found


def _bias_layout(x, axis):
    nd = x.ndim
    kept = [i for i in range(nd) if i not in set(axis)]
    if not kept or kept != list(range(kept[0], kept[-1] + 1)) or numpy.dtype(x.dtype) not in _SUFFIX:
        return None
    shape = x.shape
    pre = post = k = 1
    for i in range(kept[0]):
        pre *= shape[i]
    for i in kept:
        k *= shape[i]
    for i in range(kept[-1] + 1, nd):
        post *= shape[i]
    return pre, k, post


def bias_sgd(xp, w, m, x, lr, layout, *, scale=1.0, beta=0.0):
    """The fused SGD step (momentum with `m` and β > 0) of bias `w` by the sum of `x` over every axis but its run
    of K (`layout` = (pre, K, post) from `bias_layout`): `row_sums` first where post > 1, then `colsum_sgd`. In
    place; `lr` a float32 device scalar. β is rounded to float32 (as `momentum`)."""
    pre, k, post = layout
    if post > 1:
        sums = xp.empty(pre * k, dtype=x.dtype)
        REDUCE.launch(xp, _name("row_sums", x.dtype), pre * k * LANES, x, sums, pre * k, post, block=LANES)
        x = sums
    momentum = m is not None and beta != 0
    REDUCE.launch(xp, _name("colsum_sgd", w.dtype), k * LANES, w, m if momentum else w, x, lr, pre, k, scale,
                  float(numpy.float32(beta)) if momentum else 0.0, 1 if momentum else 0, block=LANES)


_COUNTERS = {numpy.dtype(numpy.int64): "increment_i64", numpy.dtype(numpy.int32): "increment_i32"}


def increment(xp, step):
    """The train-step counter one more, in place: one raw launch on a device (a CuPy ufunc with a scalar costs
    several times its host time), kernels/optim.py's `step += 1` otherwise."""
    name = _COUNTERS.get(step.dtype) if hasattr(xp, "RawModule") else None
    if name is None or not step.flags.c_contiguous:
        step += 1
        return
    MODULE.launch(xp, name, step.size, step, step.size)
