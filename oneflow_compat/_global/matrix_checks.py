"""`flow.mm`, `flow.bmm`, `flow.dot` (and their Tensor methods) as OneFlow 0.9 has them: two matrices, batches
of matrices, two vectors, checked with its words (`mm`:
core/functional/impl/nn_functor.cpp MatMulNoBroadCastFunctor), then the matmul."""
from oneflow_compat._global import functional as F


def mm(input, mat2):  # noqa: A002
    a, b = F._check(input, "mm"), F._check(mat2, "mm")
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                           % (a.shape[0], a.shape[1], b.shape[0], b.shape[1]))
    return F.matmul(a, b)


_DATA_TYPE_NAMES = {"float32": "kFloat", "float64": "kDouble", "float16": "kFloat16", "bfloat16": "kBFloat16",
                    "int8": "kInt8", "int32": "kInt32", "int64": "kInt64", "uint8": "kUInt8", "bool": "kBool"}


def dot(input, other):  # noqa: A002
    """`flow.dot`: two 1-D tensors of one size and dtype (OneFlow 0.9's checks, in its order and words:
    user/ops/dot_op.cpp)."""
    a, b = F._check(input, "dot"), F._check(other, "dot")
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError("inconsistent tensor size, expected tensor to have the same number of elements, but got "
                           "%d and %d elements respectively" % (a.numel(), b.numel()))
    if a.ndim != 1:
        raise RuntimeError("1D tensors expected, but got %dD tensors" % a.ndim)
    if a.dtype is not b.dtype:
        raise RuntimeError("expected both vectors to have same dtype, but found %s and %s"
                           % (_DATA_TYPE_NAMES.get(a.dtype.name, a.dtype.name),
                              _DATA_TYPE_NAMES.get(b.dtype.name, b.dtype.name)))
    return F.sum(F.mul(a, b))


def bmm(input, mat2):  # noqa: A002
    """`flow.bmm`: batches of matrices, 3-D each (OneFlow 0.9's checks and words: core/functional/impl/
    nn_functor.cpp BatchMatMulFunctor)."""
    a, b = F._check(input, "bmm"), F._check(mat2, "bmm")
    if a.ndim != 3:
        raise RuntimeError("Expected 3-dimensional tensor, but got %d-dimensional tensor for argument #1" % a.ndim)
    if b.ndim != 3:
        raise RuntimeError("Expected 3-dimensional tensor, but got %d-dimensional tensor for argument #2" % b.ndim)
    if a.shape[0] != b.shape[0]:
        raise RuntimeError("Batch dim not match, please check input!")
    if a.shape[2] != b.shape[1]:
        raise RuntimeError("Matmul dim not match, got %d of mat1 and %d of mat2, please check input!"
                           % (a.shape[2], b.shape[1]))
    return F.matmul(a, b)
