"""OneFlow 0.9's products and linear algebra of its API reference (docs/source/oneflow.rst, tensor.rst, linalg.rst
at v0.9.0): `tensordot`, `mv`, `cross` (flow.cross, dim=None: the first dim of size 3) and `linalg.cross`
(dim=-1), `linalg.norm`, `linalg.vector_norm`, `linalg.matrix_norm`, `linalg.diagonal`, `linalg.inv`.

Compositions of registered ops (permute, reshape, matmul, slices, reductions) except the inverse, which is the
`inv` op (ops/linalg_ops.py). Semantics and error texts are OneFlow v0.9.0's: oneflow/core/functional/impl/
math_functor.cpp (VectorNormFunctor, ScalarMatrixNormFunctor, MatrixNormFunctor, NormFunctor, InvFunctor,
TensorDotFunctor), python/oneflow/linalg.py, framework/docstr/{tensordot,inv,linalg}.py.
"""
import builtins
import math

import numpy as np

from oneflow_compat._global import functional as F, shape_extra, tensor_functions as TF
from oneflow_compat._global.dispatch import apply_op
from oneflow_compat._global.tensor import Tensor


# --- tensordot, mv ---------------------------------------------------------------------------------------------------
def tensordot(a, b, dims=2, out=None):
    """The sum of products over dims_a of a and dims_b of b (an int n: a's last n dims with b's first n): a's
    contracted dims permuted last and b's first, both reshaped to matrices, one matmul, reshaped back."""
    if out is not None:
        raise NotImplementedError("tensordot with `out` parameter which is not None is not yet implemented")
    if not isinstance(dims, (Tensor, int, np.integer, list, tuple)):
        raise TypeError("oneflow.tensordot expects dims to be one of oneflow.Tensor, int, Tuple[List[int], List[int]] "
                        "or List[List[int]] containing two lists, but got %s" % type(dims))
    if isinstance(dims, Tensor):  # (read on the host, as OneFlow's `dims.item()` / `tolist()`)
        dims = int(dims.numpy().reshape(-1)[0]) if dims.numel() == 1 else [list(r) for r in dims.numpy().tolist()]
    if isinstance(dims, (int, np.integer)):
        n = int(dims)
        if n < 0:
            raise RuntimeError("tensordot expects dims >= 0, but got dims=%d" % n)
        if n > a.ndim or n > b.ndim:
            raise RuntimeError("tensordot expects dims <= a.ndim which is %d, but got %d"
                               % (builtins.min(a.ndim, b.ndim), n))
        return _tensordot(a, b, list(range(a.ndim - n, a.ndim)), list(range(n)))
    if len(dims) != 2:
        raise AssertionError("The list/tuple of dims must contain two lists, got %d" % len(dims))
    dims_a = [dims[0]] if isinstance(dims[0], (int, np.integer)) else list(dims[0])
    dims_b = [dims[1]] if isinstance(dims[1], (int, np.integer)) else list(dims[1])
    return _tensordot(a, b, dims_a, dims_b)


def _tensordot(a, b, dims_a, dims_b):
    """OneFlow's TensorDot functor: contract a's dims_a with b's dims_b."""
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length, got %d and %d"
                           % (len(dims_a), len(dims_b)))
    dims_a = [TF._dim(d, a.ndim, "tensordot") for d in dims_a]
    dims_b = [TF._dim(d, b.ndim, "tensordot") for d in dims_b]
    for dims_x in (dims_a, dims_b):
        for d in dims_x:
            if dims_x.count(d) > 1:
                raise RuntimeError("dim %d appears multiple times in the list of dims" % d)
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError("contracted dimensions need to match, but first has size %d in dim %d and second has "
                               "size %d in dim %d" % (a.shape[da], da, b.shape[db], db))
    free_a = [i for i in range(a.ndim) if i not in dims_a]
    free_b = [i for i in range(b.ndim) if i not in dims_b]
    k = int(np.prod([a.shape[d] for d in dims_a], dtype=np.int64))
    ma = F.reshape(F.permute(a, free_a + dims_a), (-1, k) if free_a else (1, k))
    mb = F.reshape(F.permute(b, dims_b + free_b), (k, -1) if free_b else (k, 1))
    out_shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    return F.reshape(F.matmul(ma, mb), out_shape)


def c_tensordot(a, b, dims_a, dims_b=None):
    """`flow._C.tensordot(a, b, dims)` or `flow._C.tensordot(a, b, dims_a, dims_b)` (functional_api.yaml's two
    signatures)."""
    if dims_b is None:
        return tensordot(a, b, int(dims_a))
    return _tensordot(a, b, list(dims_a), list(dims_b))


def mv(input, vec):  # noqa: A002
    """The product of the matrix input (n, m) and the vector vec (m,): a vector (n,)."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got 1, %d, %d" % (input.ndim, vec.ndim))
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError("size mismatch, got %d, %dx%d,%d" % (input.shape[0], input.shape[0], input.shape[1],
                                                                vec.shape[0]))
    return F.squeeze(F.matmul(input, F.unsqueeze(vec, 1)), 1)


# --- cross -----------------------------------------------------------------------------------------------------------
def _cross(input, other, d):  # noqa: A002
    a, b = TF._broadcast_pair(input, other) if tuple(input.shape) != tuple(other.shape) else (input, other)
    if a.shape[d] != 3:
        raise RuntimeError("linalg.cross: inputs dimension %d must have length 3. Got %d and %d"
                           % (d, input.shape[d], other.shape[d]))

    def part(t, i):
        return TF._slice_along(t, d, i, i + 1)

    a0, a1, a2 = (part(a, i) for i in range(3))
    b0, b1, b2 = (part(b, i) for i in range(3))
    return F.cat([F.sub(F.mul(a1, b2), F.mul(a2, b1)), F.sub(F.mul(a2, b0), F.mul(a0, b2)),
                  F.sub(F.mul(a0, b1), F.mul(a1, b0))], d)


def _cross_check(input, other):  # noqa: A002
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")


def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along `dim` (None: the first dim of size 3, OneFlow's flow.cross)."""
    _cross_check(input, other)
    if dim is None:
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(other.shape)))
        found = [i for i, s in enumerate(shape) if s == 3]
        if not found:
            raise RuntimeError("no dimension of size 3 in input.")
        d = found[0]
    else:
        d = TF._dim(dim, input.ndim, "cross")
    return _cross(input, other, d)


def linalg_cross(input, other, dim=-1):  # noqa: A002
    """flow.linalg.cross: the cross product along `dim` (default the last), inputs broadcast."""
    _cross_check(input, other)
    return _cross(input, other, TF._dim(dim, input.ndim, "linalg.cross"))


# --- norms -----------------------------------------------------------------------------------------------------------
def _floating_check(x, dtype, what, kinds="the float, double, cfloat and cdouble dtypes"):
    from oneflow_compat._global.tensor import as_dtype

    dt = as_dtype(dtype) if dtype is not None else x.dtype
    if not dt.is_floating:
        raise RuntimeError("%s: only supports %s, but got: Int." % (what, kinds))
    return dt


def _dims(dim, ndim):
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    return [TF._dim(int(d), ndim, "norm") for d in dims]


def vector_norm(input, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """sum(|x|^ord)^(1/ord) over `dim` (every dim when None); ord inf / -inf the largest / smallest magnitude,
    0 the count of non-zero entries."""
    dt = _floating_check(input, dtype, "linalg.vector_norm()", "floating point and complex dtypes")
    if isinstance(ord, str):
        raise RuntimeError("linalg_vector_norm(): argument 'ord' must be Number, not str.")
    dims = _dims(dim, input.ndim)
    x = input
    o = float(ord)
    if o == 0:
        # OneFlow 0.9 counts with `not_equal_zero`, an op of x's dtype with a zero gradient (VectorNormFunctor,
        # math_functor.cpp@v0.9.0): the count stays connected to x (requires_grad, gradient 0). where() picks 1
        # for a non-zero entry (nan and inf included) and x * 0 = 0 for a zero one
        res = F.sum(F.where(F.ne(x, 0), F.ones_like(x), F.mul(x, 0.0)), dims, keepdim)
    elif o == math.inf:
        res = TF.amax(F.abs(x), dims, keepdim)
    elif o == -math.inf:
        res = TF.amin(F.abs(x), dims, keepdim)
    elif o == 2:
        res = F.sqrt(F.sum(F.square(x), dims, keepdim))
    elif o == 1:
        res = F.sum(F.abs(x), dims, keepdim)
    else:
        res = F.pow(F.sum(F.pow(F.abs(x), o), dims, keepdim), 1.0 / o)
    return res if res.dtype is dt else F.cast(res, dt)


def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):  # noqa: A002
    """The matrix norm over the two dims `dim`: 'fro' (Frobenius), 1 / -1 (the largest / smallest column sum of
    magnitudes), inf / -inf (the largest / smallest row sum). 'nuc' and 2 / -2 are not supported by OneFlow 0.9
    either (the same errors)."""
    dt = _floating_check(input, dtype, "linalg.matrix_norm()")
    dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    if isinstance(ord, str):
        if ord == "nuc":
            raise NotImplementedError("linalg.matrix_norm(): Not support ord is nuc.")
        if ord != "fro":
            raise NotImplementedError("linalg.matrix_norm(): could not convert string to float:%s" % ord)
        res = F.sqrt(F.sum(F.square(input), _dims(dims, input.ndim), keepdim))
        return res if res.dtype is dt else F.cast(res, dt)
    if input.ndim < 2:
        raise RuntimeError("linalg.matrix_norm(): input tensor must be a matrix or batch of matrices")
    if len(dims) != 2 or TF._dim(dims[0], input.ndim, "matrix_norm") == TF._dim(dims[1], input.ndim, "matrix_norm"):
        raise RuntimeError("linalg.matrix_norm(): input_dim must be a 2-tuple of ints with different elements")
    d0, d1 = _dims(dims, input.ndim)
    o = float(ord)
    if o in (math.inf, -math.inf):
        d0, d1 = d1, d0
    elif o not in (1.0, -1.0):
        raise NotImplementedError("linalg.matrix_norm(): Only support INFINITY,-INFINITY,1 or -1 data type.")
    if d1 > d0 and not keepdim:
        d1 -= 1
    res = F.sum(F.abs(input), [d0], keepdim)
    res = TF.amax(res, [d1], keepdim) if o > 0 else TF.amin(res, [d1], keepdim)
    return res if res.dtype is dt else F.cast(res, dt)


def norm(input, ord=None, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """flow.linalg.norm: a vector norm over one dim (or of a 1-D input), a matrix norm over two dims (or of a 2-D
    input when ord is given); without ord and dim the 2-norm of all entries."""
    _floating_check(input, dtype, "linalg.norm()")
    if isinstance(ord, str):
        return matrix_norm(input, ord, dim if dim is not None else list(range(input.ndim)), keepdim, dtype)
    if dim is not None:
        dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
        if len(dims) == 1:
            return vector_norm(input, 2 if ord is None else ord, dims, keepdim, dtype)
        if len(dims) == 2:
            return matrix_norm(input, "fro" if ord is None else ord, dims, keepdim, dtype)
        raise RuntimeError("linalg.norm(): dim must be a 1- or 2-tuple, got %s" % (dims,))
    if ord is None:
        return vector_norm(input, 2, None, keepdim, dtype)
    if input.ndim > 2:
        raise RuntimeError("linalg.norm(): input must be 1-D or 2-D when dim is None and ord is not None")
    if input.ndim == 1:
        return vector_norm(input, ord, None, keepdim, dtype)
    return matrix_norm(input, ord, [0, 1], keepdim, dtype)


# --- linalg.diagonal, linalg.inv ---------------------------------------------------------------------------------------
def linalg_diagonal(A, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    """flow.diagonal with the defaults dim1=-2, dim2=-1 (the matrices of a batch)."""
    return shape_extra.diagonal(A, offset, dim1, dim2)


def inv(A):  # noqa: N803
    """The inverse of each square matrix of A (*, n, n): the `inv` op; a singular matrix is a RuntimeError."""
    if not isinstance(A, Tensor):
        raise TypeError("linalg.inv(): A must be a Tensor, got %s" % type(A).__name__)
    if A.ndim < 2:
        raise RuntimeError("linalg.inv: The input tensor must be at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.inv: A must be batches of square matrices, but they are %d by %d matrices"
                           % (A.shape[-2], A.shape[-1]))
    return apply_op("inv", [A if A.dtype.is_floating else F.cast(A, _float32())])


def _float32():
    from oneflow_compat.ir import dtypes

    return dtypes.float32
