"""General matrix multiply into a given array: out ← alpha·op(a)·op(b) + beta·out (op: transpose when asked).

numpy's matmul has no beta, so adding a product into an existing array (a bias already broadcast into the output,
a weight updated by its own gradient GEMM) costs it a temporary and one more pass; the BLAS it calls does it in
one. `gemm` calls that very BLAS — the OpenBLAS numpy loaded, found among this process's libraries by threadpoolctl
and called through ctypes (which releases the GIL) — so it shares numpy's thread setting. Elsewhere (another BLAS,
dtypes other than float32/float64, strided operands, CuPy arrays, an output overlapping an input) the same values
come from matmul and in-place arithmetic.
"""
import ctypes

import numpy as np

from . import cpu_threads

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


class _Blas:
    def __init__(self, lib, prefix, suffix, int_type):
        self.fns = {}
        for dtype, letter, real in ((np.dtype(np.float32), "s", ctypes.c_float),
                                    (np.dtype(np.float64), "d", ctypes.c_double)):
            fn = getattr(lib, "%scblas_%sgemm%s" % (prefix, letter, suffix))
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_type, int_type, int_type, real,
                           ctypes.c_void_p, int_type, ctypes.c_void_p, int_type, real, ctypes.c_void_p, int_type]
            fn.restype = None
            self.fns[dtype] = fn


def _find_openblas():
    for lib, prefix, suffix in cpu_threads.loaded_openblas("openblas_get_config", "cblas_sgemm"):
        config = getattr(lib, "%sopenblas_get_config%s" % (prefix, suffix))
        config.restype = ctypes.c_char_p
        # the integer width of the interface is in the build's configuration string, not in the names
        wide = b"USE64BITINT" in (config() or b"")
        blas = _Blas(lib, prefix, suffix, ctypes.c_int64 if wide else ctypes.c_int32)
        if _agrees(blas):
            return blas
    return None


def _agrees(blas):
    """A product through `blas` equals numpy's (a wrongly guessed interface would not)."""
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    b = np.arange(12, dtype=np.float64).reshape(3, 4) - 5
    out = np.ones((2, 4))
    blas.fns[out.dtype](_ROW_MAJOR, _NO_TRANS, _NO_TRANS, 2, 4, 3, 2.0, a.ctypes.data, 3, b.ctypes.data, 4, 1.0,
                        out.ctypes.data, 4)
    return bool(np.array_equal(out, 2 * (a @ b) + 1))


_BLAS = None
_SEARCHED = False


def _blas():
    global _BLAS, _SEARCHED
    if not _SEARCHED:
        _SEARCHED = True
        _BLAS = _find_openblas()
    return _BLAS


def _storage(x):
    """(transposed, leading dimension) of a 2-D numpy array as BLAS reads it row-major, or None when its rows or its
    columns are not unit-stride."""
    rows, cols = x.shape
    item = x.itemsize
    s0, s1 = x.strides
    if (s1 == item or cols == 1) and s0 % item == 0 and (rows == 1 or s0 // item >= max(1, cols)):
        return False, (s0 // item if rows > 1 else max(1, cols))
    if (s0 == item or rows == 1) and s1 % item == 0 and (cols == 1 or s1 // item >= max(1, rows)):
        return True, (s1 // item if cols > 1 else max(1, rows))
    return None


# Below this many output elements, a direct call costs more (ctypes, three data pointers: ~5 µs) than the pass over
# the output that beta or alpha saves; the product then comes from matmul and in-place arithmetic.
_DIRECT_MIN_OUTPUT = 16384


def adds_in_place(m, n):
    """Whether gemm with beta != 0 adds into an m x n float output in place, in the GEMM itself (else it makes the
    product with matmul and adds it: a kernel that can add its term after the product should then do so)."""
    return _blas() is not None and m * n >= _DIRECT_MIN_OUTPUT


def gemm(a, b, out, alpha=1.0, beta=0.0, trans_a=False, trans_b=False):
    """out ← alpha·op(a)·op(b) + beta·out for 2-D arrays, op(x) = x.T where asked; returns `out`.

    With beta = 0 the former content of `out` is not read (as BLAS: NaNs there do not propagate)."""
    m, n = out.shape
    k = a.shape[0] if trans_a else a.shape[1]
    if (a.shape[1] if trans_a else a.shape[0]) != m or (b.shape[0] if trans_b else b.shape[1]) != n or \
            (b.shape[1] if trans_b else b.shape[0]) != k:
        raise ValueError("gemm: shapes %s%s x %s%s do not give %s" % (
            tuple(a.shape), ".T" if trans_a else "", tuple(b.shape), ".T" if trans_b else "", tuple(out.shape)))
    if type(out) is np.ndarray and cpu_threads.spreading_lately():
        # on the kernels' own threads, the BLAS held at one (kernels/cpu_threads.py: OpenBLAS's, once woken, spin)
        return cpu_threads.product_on_threads(lambda p, q, o: _gemm(p, q, o, alpha, beta, trans_a, trans_b), a, b,
                                              out, trans_a, trans_b)
    return _gemm(a, b, out, alpha, beta, trans_a, trans_b)


def _gemm(a, b, out, alpha, beta, trans_a, trans_b):
    m, n = out.shape
    k = a.shape[0] if trans_a else a.shape[1]
    blas = _blas()
    fn = blas.fns.get(out.dtype) if blas is not None and type(out) is np.ndarray else None
    if fn is None or (beta == 0.0 and alpha == 1.0) or m * n < _DIRECT_MIN_OUTPUT or type(a) is not np.ndarray \
            or type(b) is not np.ndarray or a.dtype != out.dtype or b.dtype != out.dtype or not out.flags.writeable \
            or k == 0 or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return _with_matmul(a, b, out, alpha, beta, trans_a, trans_b)
    sa, sb, so = _storage(a), _storage(b), _storage(out)
    if sa is None or sb is None or so is None:
        return _with_matmul(a, b, out, alpha, beta, trans_a, trans_b)
    ta, tb = trans_a != sa[0], trans_b != sb[0]
    if so[0]:
        # a column-major output: its transpose is row-major, out.T = op(b).T · op(a).T
        fn(_ROW_MAJOR, _NO_TRANS if tb else _TRANS, _NO_TRANS if ta else _TRANS, n, m, k, alpha, b.ctypes.data, sb[1],
           a.ctypes.data, sa[1], beta, out.ctypes.data, so[1])
    else:
        fn(_ROW_MAJOR, _TRANS if ta else _NO_TRANS, _TRANS if tb else _NO_TRANS, m, n, k, alpha, a.ctypes.data, sa[1],
           b.ctypes.data, sb[1], beta, out.ctypes.data, so[1])
    return out


def _with_matmul(a, b, out, alpha, beta, trans_a, trans_b):
    """The same values from matmul: straight into `out` when beta is 0 (into out.T, operands swapped, when `out`
    is column-major, so that matmul writes it through BLAS)."""
    op_a, op_b = (a.T if trans_a else a), (b.T if trans_b else b)
    if beta == 0.0:
        if out.ndim == 2 and not out.flags.c_contiguous and out.flags.f_contiguous:
            _matmul(op_b.T, op_a.T, out.T)
        else:
            _matmul(op_a, op_b, out)
        if alpha != 1.0:
            out *= out.dtype.type(alpha)
        return out
    product = op_a @ op_b
    if alpha != 1.0:
        product *= out.dtype.type(alpha)
    if beta != 1.0:
        out *= out.dtype.type(beta)
    out += product
    return out


def _matmul(a, b, out):
    if type(out) is np.ndarray:
        np.matmul(a, b, out=out)
    else:  # CuPy: its own matmul, through the array's namespace
        out[...] = a @ b
