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

* `row_sums` (only where post > 1): `out[r] = Σ_j x[r, j]` over the rows of the (pre·K, post) view, one thread per
  row, summing its contiguous row in order;
* `colsum_sgd`: `g[c] = Σ_r x[r, c]` over the (pre, K) array (the row sums, or x itself), one thread per column
  (the threads of a warp read adjacent columns), then the fused branch of `sgd` or `momentum` with that g:
  `w -= g·(lr·scale)`, or `m = m·β − g·(lr·scale); w += m`.

Both accumulate in double in index order (the twins too, so their bits are equal), the gradient rounded to the
array's dtype once: as close to the exact sum as the CPU's pairwise float32 sums, or closer. One launch for a dense
bias (its sum and update; it was a reduction and an update), two for a convolution's.
"""
import numpy

from .cuda_source import CudaModule

_HEADER = r"""
#define GRID_LOOP(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)
"""

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

extern "C" __global__ void row_sums_{S}(const {T}* x, {T}* out, long long rows, long long length) {
    GRID_LOOP(r, rows) {
        const {T}* row = x + r * length;
        double acc = 0.0;
        for (long long j = 0; j < length; ++j) acc += (double)row[j];
        out[r] = ({T})acc;
    }
}

extern "C" __global__ void colsum_sgd_{S}({T}* w, {T}* m, const {T}* x, const float* lr, long long rows,
                                          long long cols, {T} scale, {T} beta, int momentum) {
    float rate = lr[0];
    GRID_LOOP(c, cols) {
        double acc = 0.0;
        for (long long r = 0; r < rows; ++r) acc += (double)x[r * cols + c];
        {T} g = ({T})acc;
        if (momentum) {
            {T} mi = m[c] * beta - g * ({T})(rate * (float)scale);
            m[c] = mi;
            w[c] = w[c] + mi;
        } else {
            w[c] = w[c] - g * ({T})(rate * (float)scale);
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


def _source():
    return _HEADER + "".join(_TEMPLATE.replace("{T}", t).replace("{S}", s)
                             for t, s in (("float", "f32"), ("double", "f64"))) + _COUNTER


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


def _ordered_sums(view, axis):
    """Σ of `view` along `axis` in float64, in index order (the kernels' per-thread order): numpy's accumulate is
    sequential (its reductions are pairwise), so the last of the running sums is that sum."""
    if view.shape[axis] == 0:
        return numpy.zeros(view.shape[1 - axis])
    return numpy.cumsum(view, axis=axis, dtype=numpy.float64).take(-1, axis=axis)


def _row_sums_twin(x, out, rows, length):
    view = x.reshape(-1)[:rows * length].reshape(rows, length)
    out.reshape(-1)[:rows] = _ordered_sums(view, 1).astype(out.dtype)


def _colsum_sgd_twin(w, m, x, lr, rows, cols, scale, beta, momentum):
    rate = _F32(lr.reshape(-1)[0])
    view = x.reshape(-1)[:rows * cols].reshape(rows, cols)
    t = w.dtype.type
    g = _ordered_sums(view, 0).astype(w.dtype)
    c = t(_F32(rate * _F32(scale)))
    w1, m1 = w.reshape(-1)[:cols], m.reshape(-1)[:cols]
    if momentum:
        m1[...] = m1 * t(beta) - g * c
        w1 += m1
    else:
        w1 -= g * c


_TWINS = {"increment_i64": _increment_twin, "increment_i32": _increment_twin}
MODULE = CudaModule("optim", _source(), {**_TWINS, **{"%s_%s" % (name, s): twin for name, twin in
                                          (("sgd", _sgd_twin), ("momentum", _momentum_twin), ("adam", _adam_twin),
                                           ("row_sums", _row_sums_twin), ("colsum_sgd", _colsum_sgd_twin))
                                          for s in ("f32", "f64")}},
                    options=("--std=c++17", "--fmad=false"))


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
        MODULE.launch(xp, _name("row_sums", x.dtype), pre * k, x, sums, pre * k, post)
        x = sums
    momentum = m is not None and beta != 0
    MODULE.launch(xp, _name("colsum_sgd", w.dtype), k, w, m if momentum else w, x, lr, pre, k, scale,
                  float(numpy.float32(beta)) if momentum else 0.0, 1 if momentum else 0)


_COUNTERS = {numpy.dtype(numpy.int64): "increment_i64", numpy.dtype(numpy.int32): "increment_i32"}


def increment(xp, step):
    """The train-step counter one more, in place: one raw launch on a device (a CuPy ufunc with a scalar costs
    several times its host time), kernels/optim.py's `step += 1` otherwise."""
    name = _COUNTERS.get(step.dtype) if hasattr(xp, "RawModule") else None
    if name is None or not step.flags.c_contiguous:
        step += 1
        return
    MODULE.launch(xp, name, step.size, step, step.size)
