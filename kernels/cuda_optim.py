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
"""

_SUFFIX = {numpy.dtype(numpy.float32): "f32", numpy.dtype(numpy.float64): "f64"}
_F32 = numpy.float32


def _source():
    return _HEADER + "".join(_TEMPLATE.replace("{T}", t).replace("{S}", s)
                             for t, s in (("float", "f32"), ("double", "f64")))


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


MODULE = CudaModule("optim", _source(), {"%s_%s" % (name, s): twin for name, twin in
                                          (("sgd", _sgd_twin), ("momentum", _momentum_twin), ("adam", _adam_twin))
                                          for s in ("f32", "f64")},
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
