"""CUDA kernel of the sparse softmax cross-entropy on a device — loss and probabilities, or loss and gradient (the
fused op of passes/fusion.py) — in one launch, with its numpy twin (kernels/cuda_source.py).

One thread per row: the row's maximum, exp(logit − max), their sum, the probabilities, the loss
-log(max(p[label], 1e-20)), and either the probabilities or (p − onehot(label))·seed. The labels are checked in
the same launch: the thread of row 0 reads them all and writes check = (failed, offending label) — the lowest
label when one is negative, else the highest — for `checks.require`, which reads it with the step's results (no wait
here); the rows themselves read their label clipped into [0, depth), as the numpy path's device branch does.
"""
import numpy

from .cuda_source import CudaModule

_TEMPLATE = r"""
extern "C" __global__ void softmax_xent_{S}_{L}(const {T}* logits, const {I}* labels, {T}* loss, {T}* out,
                                                long long* check, long long rows, long long depth, {T} seed,
                                                int gradient) {
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
         r += (long long)blockDim.x * gridDim.x) {
        if (r == 0) {
            long long low = 0, high = 0;
            for (long long k = 0; k < rows; ++k) {
                long long v = (long long)labels[k];
                if (k == 0 || v < low) low = v;
                if (k == 0 || v > high) high = v;
            }
            check[0] = (low < 0 || high >= depth) ? 1 : 0;
            check[1] = low < 0 ? low : high;
        }
        const {T}* x = logits + r * depth;
        {T}* o = out + r * depth;
        {T} m = x[0];
        for (long long j = 1; j < depth; ++j) m = x[j] > m ? x[j] : m;
        {T} total = 0;
        for (long long j = 0; j < depth; ++j) {
            o[j] = exp(x[j] - m);
            total += o[j];
        }
        for (long long j = 0; j < depth; ++j) o[j] = o[j] / total;
        long long label = (long long)labels[r];
        label = label < 0 ? 0 : (label >= depth ? depth - 1 : label);
        {T} picked = o[label];
        {T} floor_ = ({T})1e-20;
        loss[r] = -log(picked > floor_ ? picked : floor_);
        if (gradient) {
            o[label] = o[label] - ({T})1;
            if (seed != ({T})1)
                for (long long j = 0; j < depth; ++j) o[j] = o[j] * seed;
        }
    }
}
"""

_VARIANTS = [(t, s, i, l) for t, s in (("float", "f32"), ("double", "f64")) for i, l in (("int", "i32"),
                                                                                      ("long long", "i64"))]


def _source():
    return "".join(_TEMPLATE.replace("{T}", t).replace("{S}", s).replace("{I}", i).replace("{L}", l)
                   for t, s, i, l in _VARIANTS)


def _twin(logits, labels, loss, out, check, rows, depth, seed, gradient):
    x = logits.reshape(rows, depth)
    flat = labels.reshape(-1).astype(numpy.int64)
    if rows:
        low, high = flat.min(), flat.max()
        check[0] = 1 if (low < 0 or high >= depth) else 0
        check[1] = low if low < 0 else high
    e = numpy.exp(x - x.max(axis=1, keepdims=True))
    e /= e.sum(axis=1, keepdims=True)
    clipped = numpy.clip(flat, 0, depth - 1)
    picked = e[numpy.arange(rows), clipped]
    loss.reshape(-1)[...] = -numpy.log(numpy.maximum(picked, x.dtype.type(1e-20)))
    if gradient:
        e[numpy.arange(rows), clipped] -= 1
        if seed != 1:
            e *= seed
    out.reshape(rows, depth)[...] = e


MODULE = CudaModule("loss", _source(), {"softmax_xent_%s_%s" % (s, l): _twin for _, s, _, l in _VARIANTS},
                    options=("--std=c++17", "--fmad=false"))

_SUFFIX = {numpy.dtype(numpy.float32): "f32", numpy.dtype(numpy.float64): "f64"}
_LABELS = {numpy.dtype(numpy.int32): "i32", numpy.dtype(numpy.int64): "i64"}


def supported(logits_dtype, labels_dtype):
    return numpy.dtype(logits_dtype) in _SUFFIX and numpy.dtype(labels_dtype) in _LABELS


def softmax_xent(xp, logits, labels, seed, gradient):
    """-> (loss (rows,), probabilities or gradient (rows, depth), check (2,) int64) of C-contiguous logits
    (..., depth) flattened to rows."""
    depth = logits.shape[-1]
    rows = logits.size // max(1, depth)
    loss = xp.empty(rows, dtype=logits.dtype)
    out = xp.empty((rows, depth), dtype=logits.dtype)
    check = xp.empty(2, dtype=numpy.int64)
    name = "softmax_xent_%s_%s" % (_SUFFIX[numpy.dtype(logits.dtype)], _LABELS[numpy.dtype(labels.dtype)])
    MODULE.launch(xp, name, rows, logits, labels, loss, out, check, rows, depth, seed, 1 if gradient else 0)
    return loss, out, check
