"""Matrix multiplication (2-D and batched); its gradient is built from matmul itself. The dense layer's fused
kernels (bias and activation epilogue, relu gradient) at the end."""
import numpy

from . import blas, cuda_blas, cuda_nn, dense_jit
from .half_products import all_half, narrow, through_float32, widen

_HALF = numpy.dtype(numpy.float16)


_SMALL_PRODUCT_FLOPS = 1 << 16


def matmul(xp, a, b, *, transpose_a=False, transpose_b=False, alpha=1.0):
    """alpha * op(a) @ op(b), op = transpose of the last two axes when requested.

    Inputs are 2-D, or batched with equal leading dimensions (no broadcasting of
    batch dims, as in the legacy batch_matmul). float16 on the CPU: on float32 copies through the float32 BLAS,
    rounded once (kernels/half_products.py; checked here by dtype identity, not by the generic wrapper, which would
    cost an eager float32 product ~1 µs).
    """
    if a.dtype is _HALF and b.dtype is _HALF and xp is numpy:
        return narrow(matmul(xp, widen(a), widen(b), transpose_a=transpose_a, transpose_b=transpose_b, alpha=alpha))
    if a.ndim == 2 and xp is numpy and b.ndim == 2 and alpha == 1.0:
        op_a, op_b = (a.T if transpose_a else a), (b.T if transpose_b else b)
        if op_a.shape[1] == op_b.shape[0] and 2 * op_a.shape[0] * op_a.shape[1] * op_b.shape[1] < _SMALL_PRODUCT_FLOPS:
            # a small product: numpy's own call, the very product gemm would make here (small products run whole,
            # through np.matmul), without the µs of choosing a path around it (eager ops on small tensors)
            return _small_product(op_a, op_b)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError("matmul: inputs must be at least 2-D, got shapes %s and %s"
                         % (tuple(a.shape), tuple(b.shape)))
    if a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
        raise ValueError("matmul: batch dimensions differ: %s vs %s"
                         % (tuple(a.shape), tuple(b.shape)))
    if transpose_a:
        a = xp.swapaxes(a, -1, -2)
    if transpose_b:
        b = xp.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError("matmul: inner dimensions differ: %s @ %s (after transposes)"
                         % (tuple(a.shape), tuple(b.shape)))
    if xp is numpy and a.ndim == 2:  # through gemm: on the kernels' own threads (kernels/cpu_threads.py)
        return blas.gemm(a, b, numpy.empty((a.shape[0], b.shape[1]), dtype=numpy.result_type(a, b)), alpha=alpha)
    # on a device: through the project's cuBLAS handle (alpha taken by the GEMM), which a CUDA graph can capture
    return cuda_blas.matmul(xp, a, b, alpha=alpha)


def _small_product(a, b):
    """op(a) @ op(b) of 2-D numpy operands: `numpy.dot`, which for 2-D operands makes the very BLAS call
    `numpy.matmul` makes (the same bits: tests/test_kernels_linalg.py) without a ufunc's dispatch (0.4 µs of an 8x8
    product's 0.9)."""
    if a.dtype in _DOT_DTYPES and b.dtype == a.dtype:
        return _DOT(a, b)
    return numpy.matmul(a, b)


# float16 is not among them: numpy has no float16 BLAS (numpy.dot and numpy.matmul loop over float16 in C, summing
# in float32); matmul sends float16 through the float32 BLAS instead (kernels/half_products.py)
_DOT_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))
# numpy.dot's own C function, without the __array_function__ dispatch in front of it (numpy >= 1.25 runs a Python
# dispatcher per call: ~0.4 µs of an 8x8 product's ~1 µs). The planned kernels get plain ndarray pieces, for which
# the dispatch only finds that nothing overrides it: the same call, the same bits
_DOT = getattr(numpy.dot, "_implementation", numpy.dot)


def _specialize_matmul(xp, in_shapes, in_dtypes, transpose_a=False, transpose_b=False, alpha=1.0):
    """The kernel of one planned matmul, chosen once from its pieces' shapes and dtypes (`runtime/plan.device_fn`
    asks a kernel's `specialize` before it binds the kernel's attributes): for a small 2-D float32/float64 product
    on numpy with alpha 1, `numpy.dot` itself (with the transposes as views) — the values of `matmul`'s small path,
    without its checks and choices at every call (an eager op on 8x8 tensors spends more time choosing than
    multiplying). None: `matmul` as it is. A dynamic blob's pieces are never larger than its planned shape, so
    a product planned small stays small."""
    if xp is not numpy or alpha != 1.0 or len(in_shapes) != 2:
        return None
    (sa, sb), (da, db) = in_shapes, in_dtypes
    if len(sa) != 2 or len(sb) != 2 or numpy.dtype(da) not in _DOT_DTYPES or numpy.dtype(db) != numpy.dtype(da):
        return None
    m, k = (sa[1], sa[0]) if transpose_a else (sa[0], sa[1])
    kb, n = (sb[1], sb[0]) if transpose_b else (sb[0], sb[1])
    if k != kb or 2 * m * k * n >= _SMALL_PRODUCT_FLOPS:
        return None
    dot = _DOT
    if not transpose_a and not transpose_b:
        return dot
    if transpose_a and transpose_b:
        return lambda a, b: dot(a.T, b.T)
    if transpose_a:
        return lambda a, b: dot(a.T, b)
    return lambda a, b: dot(a, b.T)


matmul.specialize = _specialize_matmul  # (None for float16: the wrapper's float32 path)


# --- the dense layer's fused kernels (passes/fusion.py) ------------------------------------------------------------
# Where the features outnumber the batch rows, their products are laid out batch-minor: the GEMM computes
# out.T = op(b).T · op(a).T into a C-ordered (features, batch) array and returns its transpose, an F-ordered
# (batch, features) view with the same values. OpenBLAS runs that orientation faster when the batch is the short
# side of the product (-11% at batch 100, -30% at 50 on the MLP's 784 -> 512 layer). Narrow outputs (logits) stay
# C-ordered for the row-wise softmax after them; the relu gradient's product is laid out like its mask, so the
# elementwise pass stays unit-stride.

def _product(xp, a, b, transpose_a, transpose_b, alpha, f_order):
    """alpha·op(a)·op(b) in a new array; column-major when asked (the transpose of op(b).T·op(a).T)."""
    if xp is numpy:  # through gemm: on the kernels' own threads (kernels/cpu_threads.py)
        m, n = (a.shape[1] if transpose_a else a.shape[0]), (b.shape[0] if transpose_b else b.shape[1])
        out = numpy.empty((n, m), dtype=a.dtype).T if f_order else numpy.empty((m, n), dtype=a.dtype)
        return blas.gemm(a, b, out, alpha=alpha, trans_a=transpose_a, trans_b=transpose_b)
    op_a, op_b = (a.T if transpose_a else a), (b.T if transpose_b else b)
    if f_order:
        return cuda_blas.matmul(xp, op_b.T, op_a.T, alpha=alpha).T
    return cuda_blas.matmul(xp, op_a, op_b, alpha=alpha)


def _device_epilogue(xp, a, b, other):
    """Whether the device kernels of kernels/cuda_nn.py take the epilogue: a device module that builds raw kernels,
    operands and the other input of one float dtype."""
    return xp is not numpy and hasattr(xp, "RawModule") and cuda_nn.supported(a.dtype) and \
        a.dtype == b.dtype == other.dtype and a.ndim == 2


def matmul_bias_act(xp, a, b, bias, *, transpose_a=False, transpose_b=False, alpha=1.0, activation=None):
    """matmul (2-D), + bias along the last axis, then `activation` (None | "relu"): the values of matmul, bias_add
    and relu one after the other. Where BLAS can add in place, the bias is broadcast into the output first and the
    GEMM adds the product onto it (beta = 1); relu is applied in place."""
    if activation not in (None, "relu"):
        raise ValueError("matmul_bias_act: activation must be None or 'relu', got %r" % (activation,))
    if all_half(xp, (a, b, bias)):
        # the product through float32 BLAS rounded to float16, then bias and relu in float16: the values of the
        # unfused matmul, bias_add and relu (each rounds its float16 result)
        out = matmul(xp, a, b, transpose_a=transpose_a, transpose_b=transpose_b, alpha=alpha)
        out += bias
        if activation == "relu":
            xp.maximum(out, out.dtype.type(0), out=out)
        return out
    m = a.shape[1] if transpose_a else a.shape[0]
    n = b.shape[0] if transpose_b else b.shape[1]
    if _device_epilogue(xp, a, b, bias):
        # on a device: the product, then one launch adding the bias (and relu) in place (kernels/cuda_nn.py)
        out = _product(xp, a, b, transpose_a, transpose_b, alpha, False)
        return cuda_nn.bias_act(xp, out, bias, activation == "relu")
    if xp is numpy and blas.adds_in_place(m, n):
        out = numpy.empty((n, m), dtype=a.dtype).T if n > m else numpy.empty((m, n), dtype=a.dtype)
        out[...] = bias
        blas.gemm(a, b, out, alpha=alpha, beta=1.0, trans_a=transpose_a, trans_b=transpose_b)
    else:
        out = _product(xp, a, b, transpose_a, transpose_b, alpha, n > m)
        out += bias
    if activation == "relu":
        xp.maximum(out, out.dtype.type(0), out=out)
    return out


@through_float32  # the mask is exact: widening the product only removes its float16 sums
def matmul_relu_grad(xp, a, b, y, *, transpose_a=False, transpose_b=False, alpha=1.0):
    """relu_grad(matmul(a, b), y): the product where the relu's output y is positive, else 0 — the gradient
    reaching a dense layer's relu, masked in place on the product (laid out like y)."""
    f_order = not y.flags.c_contiguous and y.flags.f_contiguous
    if _device_epilogue(xp, a, b, y) and y.flags.c_contiguous:
        return cuda_nn.relu_mask(xp, _product(xp, a, b, transpose_a, transpose_b, alpha, False), y)
    out = _product(xp, a, b, transpose_a, transpose_b, alpha, f_order)
    if xp is numpy and dense_jit.AVAILABLE and out.dtype == y.dtype and out.dtype.kind == "f" and \
            (out.flags.f_contiguous if f_order else out.flags.c_contiguous):
        dense_jit.keep_where_positive(out.T if f_order else out, y.T if f_order else y)  # rows contiguous
    else:
        out *= y > 0
    return out


# --- broadcast_matmul (OneFlow v0.4.0 user/ops/matmul_op.cpp; the model zoo's GPT) ------------------------------------
@through_float32
def broadcast_matmul(xp, a, b, *, transpose_b=False, alpha=1.0):
    """alpha * a @ op(b) for a of any rank >= 3 and a 2-D b: every leading row of a times b."""
    lead = a.shape[:-1]
    out = matmul(xp, xp.ascontiguousarray(a).reshape(-1, a.shape[-1]), b, transpose_b=transpose_b, alpha=alpha)
    return out.reshape(lead + (out.shape[-1],))


@through_float32
def broadcast_matmul_grad_b(xp, a, b, *, alpha=1.0):
    """alpha * a.T @ b over the flattened leading axes of a (.., k) and b (.., n): the (k, n) weight gradient."""
    a2 = xp.ascontiguousarray(a).reshape(-1, a.shape[-1])
    b2 = xp.ascontiguousarray(b).reshape(-1, b.shape[-1])
    return matmul(xp, a2, b2, transpose_a=True, alpha=alpha)


# --- the matrix inverse (OneFlow 0.9's `inv` user op, flow.linalg.inv) ----------------------------------------------
def inv(xp, x):
    """The inverse of each square matrix of x (..., n, n). A singular matrix is an error naming the op, as OneFlow's
    `linalg.inv` raises a RuntimeError (docstr/inv.py, v0.9.0), not numpy's LinAlgError."""
    try:
        return xp.linalg.inv(x).astype(x.dtype, copy=False)
    except numpy.linalg.LinAlgError as e:
        raise RuntimeError("linalg.inv: the input matrix (or a matrix of the batch) is not invertible (%s)" % e) \
            from None
