"""Matrix products of device arrays through a cuBLAS handle of the project's own, called through ctypes: the GEMMs of
kernels/linalg.py and kernels/nn.py on CuPy, eager or inside a captured CUDA graph (runtime/cuda_graph.py).

Why not CuPy's matmul: CuPy's cuBLAS wrappers refuse every call while the current stream captures a graph
(cupy_backends/cuda/libs/cublas.pyx, `setStream`, CuPy 14.2: NotImplementedError "calling cuBLAS API during stream
capture is currently unsupported"; `matmul` -> `tensordot_core` -> `gemmEx` -> `_setStream` raises it), though cuBLAS
itself may be captured (the cuBLAS documentation, "CUDA Graphs Support": any GEMM, once the handle has a workspace
set by the user, so that cuBLAS allocates nothing inside the capture). So the products here call the library CuPy
loaded (the same file, found among the process's mapped libraries) with a handle per thread and GPU, bound to the
current stream, with a 32 MiB workspace of its own per stream (the documentation's recommendation for Hopper;
`cublasSetStream` resets the workspace to the default pool, so it is set again after every change of stream). Eager steps use the
same path, so a captured step and an uncaptured one make the very same GEMM calls.

Layout: cuBLAS reads matrices column-major. A C-ordered (m, n) result C read column-major is the (n, m) matrix C^T,
so each product is computed as C^T = op(B^T) op(A^T): an operand whose rows are contiguous (row stride `ld`) read
column-major is already its transpose (op N, leading dimension `ld`); one whose columns are contiguous read
column-major is itself (op T, leading dimension its column stride). Batched operands (batch axes broadcast as
numpy's matmul does) become one strided-batched call where each operand's batch axes flatten to one stride (0 for a
broadcast operand); anything else (negative or irregular strides) is copied contiguous first.

float32 and float64 go through cuBLAS (`cublas[SD]gemm_v2`, `cublas[SD]gemmStridedBatched`, CUBLAS_DEFAULT_MATH:
no TF32, the CPU's values to float32 rounding); other dtypes, and a module without the library, take `xp.matmul`.
A device module whose cuBLAS is not a shared library (the test device of tests/strict_device.py) hands its
functions over with `_use_library`. ONEFLOW_COMPAT_OWN_CUBLAS=0 sends every product through `xp.matmul` (CuPy's own
cuBLAS calls: a captured step then gives its capture up, with CuPy's error in the notice).
"""
import ctypes
import math
import os
import threading

import numpy

# cublasOperation_t
OP_N, OP_T = 0, 1
# cublasPointerMode_t: alpha and beta read from host memory (when the call is made) or device memory (when it runs)
POINTER_HOST, POINTER_DEVICE = 0, 1
ENV = "ONEFLOW_COMPAT_OWN_CUBLAS"  # "0": every product through xp.matmul (CuPy's own cuBLAS calls; no capture)
_INT_MAX = 2 ** 31 - 1
WORKSPACE_BYTES = 32 << 20

_FUNCTIONS = {  # name: argument types after the handle (ctypes), all returning cublasStatus_t
    "cublasCreate_v2": (ctypes.c_void_p,),
    "cublasSetStream_v2": (ctypes.c_void_p, ctypes.c_void_p),
    "cublasSetWorkspace_v2": (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t),
    "cublasSetPointerMode_v2": (ctypes.c_void_p, ctypes.c_int),
}
_GEMM = (ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
         ctypes.c_void_p, ctypes.c_int)
_GEMM_BATCHED = (ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int,
                 ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_int)
for _t in "SD":
    _FUNCTIONS["cublas%sgemm_v2" % _t] = _GEMM
    _FUNCTIONS["cublas%sgemmStridedBatched" % _t] = _GEMM_BATCHED

# per dtype: (the one-matrix function, the strided-batched one, the ctypes scalar type of alpha and beta)
_BY_DTYPE = {numpy.dtype(numpy.float32): ("cublasSgemm_v2", "cublasSgemmStridedBatched", ctypes.c_float),
             numpy.dtype(numpy.float64): ("cublasDgemm_v2", "cublasDgemmStridedBatched", ctypes.c_double)}


class CublasError(RuntimeError):
    """A cuBLAS call returned a status other than CUBLAS_STATUS_SUCCESS."""


class _Library:
    """cuBLAS's functions (a ctypes library, or an object with the same functions), handles per thread and GPU."""

    def __init__(self, functions, xp, where=None):
        self.functions, self.xp = functions, xp
        self.path = None  # the shared library's file, where it is one
        self.where = where if where is not None else _where(xp)
        self.local = threading.local()
        self.scalars = {}  # (ctypes type, value) -> the host scalar alpha or beta points at (kept alive here)
        self.plans = {}  # a product's operand layouts -> _Plan (see `matmul`)
        for name in _BY_DTYPE.values():
            getattr(functions, name[0]), getattr(functions, name[1])  # noqa: B018 - a missing function fails now

    def call(self, name, *args):
        status = getattr(self.functions, name)(*args)
        if status != 0:
            raise CublasError("%s failed: cuBLAS status %d" % (name, status))

    def scalar(self, ctype, value):
        key = (ctype, float(value))
        found = self.scalars.get(key)
        if found is None:
            found = self.scalars[key] = ctype(value)
        return ctypes.addressof(found)

    def handle(self):
        """The handle of this thread and the current GPU, bound to the current stream with its workspace."""
        xp = self.xp
        handles = getattr(self.local, "handles", None)
        if handles is None:
            handles = self.local.handles = {}
        device, stream = self.where()
        found = handles.get(device)
        if found is None:
            h = ctypes.c_void_p()
            self.call("cublasCreate_v2", ctypes.byref(h))
            found = handles[device] = [h.value, None, {}]
        if found[1] != stream:
            # a workspace per stream: GEMMs of two streams (a graph's replay, an eager op) may run at once, and a
            # captured GEMM keeps the workspace it was captured with. setStream puts the handle back on cuBLAS's
            # default workspace: ours is set again after it (else a capture would allocate)
            workspace = found[2].get(stream)
            if workspace is None:
                workspace = found[2][stream] = xp.empty(WORKSPACE_BYTES, dtype=numpy.uint8)
            self.call("cublasSetStream_v2", found[0], stream)
            self.call("cublasSetWorkspace_v2", found[0], workspace.data.ptr, WORKSPACE_BYTES)
            found[1] = stream
        return found[0]


def _where(xp):
    """() -> (the current GPU, the current stream's address) of CuPy: with one GPU visible (the count is fixed for a
    process's life) the GPU is 0 without asking the runtime at every product."""
    cuda = xp.cuda
    if cuda.runtime.getDeviceCount() <= 1:
        return lambda: (0, cuda.get_current_stream().ptr)
    return lambda: (cuda.runtime.getDevice(), cuda.get_current_stream().ptr)


_LIBRARIES = {}  # id(module) -> (module, _Library or None, why none)
_LOCK = threading.Lock()


_GIVEN = set()  # ids of the modules whose library came through _use_library


def _use_library(xp, functions, where=None):  # (the seam the strict fake device gives its cuBLAS through)
    """The products of device module `xp` through `functions` (cuBLAS's functions as attributes, called as ctypes
    calls them: addresses as ints, handles through `ctypes.byref`), None: through `xp.matmul`. `where()`: (the
    current GPU, the current stream's address), by default from `xp.cuda`. One such module at a time: a later call
    forgets the modules given before (a test device is made per test)."""
    for key in _GIVEN:
        _LIBRARIES.pop(key, None)
    _GIVEN.clear()
    _GIVEN.add(id(xp))
    _LIBRARIES[id(xp)] = (xp, _Library(functions, xp, where) if functions is not None else None,
                          None if functions is not None else "no cuBLAS library was given for this module")


def _mapped(fragment):
    """The path of a shared library mapped into this process whose file name starts with `fragment`."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1] if line.count(" ") >= 5 else ""
                if path.rpartition("/")[2].startswith(fragment):
                    return path
    except OSError:
        pass
    return None


def _load_cupy_library(xp):
    """(the _Library of CuPy's own cuBLAS, why not) for CuPy itself."""
    import sys

    if sys.modules.get("cupy") is not xp:
        return None, "the device module is not CuPy"
    try:
        from cupy_backends.cuda.libs import cublas  # noqa: F401 - maps the library CuPy was built against

        path = _mapped("libcublas.so")
        if path is None:
            path = "libcublas.so.%d" % (xp.cuda.runtime.runtimeGetVersion() // 1000)
        lib = ctypes.CDLL(path)
        for name, argtypes in _FUNCTIONS.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = list(argtypes), ctypes.c_int
        found = _Library(lib, xp)
        found.path = path
        return found, None
    except Exception as e:  # noqa: BLE001 - no library: products through CuPy (and no capture of them)
        return None, "%s: %s" % (type(e).__name__, e)


def _own_cublas_off():
    """Whether ONEFLOW_COMPAT_OWN_CUBLAS is "0", read at every product (a test or a user may change it between
    calls): on POSIX from os.environ's own dict of bytes, one dict lookup instead of `os.environ.get`'s key
    encoding (a few hundred ns per product, 11 products a LeNet step)."""
    data = _ENVIRON_BYTES
    value = data.get(_ENV_BYTES) if data is not None else os.environ.get(ENV)
    return value is not None and value.strip() in (b"0", "0")


_ENV_BYTES = ENV.encode()
_ENVIRON_BYTES = getattr(os.environ, "_data", None) if os.name == "posix" else None
if not (isinstance(_ENVIRON_BYTES, dict) and all(isinstance(k, bytes) for k in list(_ENVIRON_BYTES)[:1])):
    _ENVIRON_BYTES = None


def library(xp):
    """The _Library of device module `xp`, or None (numpy; a module without cuBLAS; ONEFLOW_COMPAT_OWN_CUBLAS=0)."""
    if _own_cublas_off():
        return None
    found = _LIBRARIES.get(id(xp))
    if found is not None and found[0] is xp:
        return found[1]
    if xp is numpy or getattr(xp, "cuda", None) is None:
        lib, why = None, "not a CUDA device module"
    else:
        with _LOCK:
            lib, why = _load_cupy_library(xp)
    _LIBRARIES[id(xp)] = (xp, lib, why)
    return lib


def unavailable_reason(xp):
    """Why the products of `xp` cannot go through the project's cuBLAS handle (None where they can)."""
    if library(xp) is None and _own_cublas_off():
        return "%s=0" % ENV
    return _LIBRARIES[id(xp)][2]


def prepare(xp):
    """Creates (or rebinds) this thread's handle for the current GPU and stream: a capture about to begin on the
    current stream then changes no handle inside it."""
    lib = library(xp)
    if lib is not None:
        lib.handle()


# --- operands -------------------------------------------------------------------------------------------------
def _matrix(rows, cols, row_stride, col_stride, itemsize):
    """(op, ld) reading the row-major (rows, cols) matrix column-major as its transpose (op N: its rows are
    contiguous), or as itself then transposed (op T: its columns are); None for any other layout."""
    if (cols == 1 or col_stride == itemsize) and \
            (rows == 1 or (row_stride > 0 and row_stride % itemsize == 0 and row_stride // itemsize >= cols)):
        return OP_N, max(1, row_stride // itemsize if rows > 1 else cols)
    if (rows == 1 or row_stride == itemsize) and \
            (cols == 1 or (col_stride > 0 and col_stride % itemsize == 0 and col_stride // itemsize >= rows)):
        return OP_T, max(1, col_stride // itemsize if cols > 1 else rows)
    return None


def _batch_stride(shape, strides, batch, itemsize):
    """One stride in elements over the flattened batch axes `batch` of an operand (its own batch axes broadcast to
    them: 0 where broadcast), or None where they do not flatten to one."""
    lead = len(batch) - len(shape)
    axes = []
    for i, extent in enumerate(batch):
        j = i - lead
        own = shape[j] if j >= 0 else 1
        if extent > 1:
            axes.append(strides[j] if j >= 0 and own != 1 else 0)
    if not axes or all(s == 0 for s in axes):
        return 0
    extents = [e for e in batch if e > 1]
    for i in range(len(axes) - 1):
        if axes[i] != axes[i + 1] * extents[i + 1]:
            return None
    if axes[-1] <= 0 or axes[-1] % itemsize:
        return None
    return axes[-1] // itemsize


def _operand(xp, x, batch):
    """(the array the call reads, op, ld, batch stride) of operand x for the products of batch axes `batch`: x, or
    a contiguous copy of it (broadcast first where needed) when its layout takes no single strided call (the caller
    holds the copy until the call is made)."""
    for attempt in range(3):
        shape, strides, itemsize = x.shape, x.strides, x.itemsize
        layout = _matrix(shape[-2], shape[-1], strides[-2], strides[-1], itemsize)
        stride = _batch_stride(shape[:-2], strides[:-2], batch, itemsize)
        if layout is not None and stride is not None:
            return x, layout[0], layout[1], stride
        x = xp.ascontiguousarray(x) if attempt == 0 else \
            xp.ascontiguousarray(xp.broadcast_to(x, tuple(batch) + tuple(shape[-2:])))
    raise AssertionError("a contiguous operand always takes a strided call")


def _batch_shape(a, b):
    if a.ndim == 2 and b.ndim == 2:  # (most products: without broadcast_shapes' few µs)
        return ()
    try:
        return tuple(numpy.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    except ValueError:
        return None


class _Plan:
    """One product's cuBLAS call for operands of given shapes, strides and dtype, used as they are (no copy): the
    function, its operations, sizes, leading dimensions and batch strides, and the result's shape. Kept per library
    by the operands' layouts, so that a step's products skip the layout analysis (`_operand`, `_batch_stride`:
    ~10 µs of host time per product on the first GPU run) after their first call."""
    __slots__ = ("shape", "function", "name", "fixed_head", "fixed_mid", "fixed_tail", "batched")

    def __init__(self, shape, function, name, head, mid, tail, batched):
        self.shape, self.function, self.name = shape, function, name
        self.fixed_head, self.fixed_mid, self.fixed_tail, self.batched = head, mid, tail, batched

    def run(self, handle, a, b, c):
        if self.batched:
            ld_b, stride_b, ld_a, stride_a = self.fixed_mid
            status = self.function(handle, *self.fixed_head, b.data.ptr, ld_b, stride_b, a.data.ptr, ld_a, stride_a,
                                   self.fixed_tail[0], c.data.ptr, *self.fixed_tail[1:])
        else:
            ld_b, ld_a = self.fixed_mid
            status = self.function(handle, *self.fixed_head, b.data.ptr, ld_b, a.data.ptr, ld_a, self.fixed_tail[0],
                                   c.data.ptr, *self.fixed_tail[1:])
        if status != 0:
            raise CublasError("%s failed: cuBLAS status %d" % (self.name, status))


_MAX_PLANS = 512


def matmul(xp, a, b, out=None, alpha=1.0):
    """alpha * `xp.matmul(a, b)` (operands of 2 or more axes, batch axes broadcast), into `out` where given (a new
    C-ordered array otherwise): through the project's cuBLAS handle for float32/float64 operands of one dtype (see
    the module docstring), else through `xp.matmul`."""
    lib = library(xp) if xp is not numpy else None
    if lib is not None and out is None:
        plan = lib.plans.get((a.shape, a.strides, b.shape, b.strides, a.dtype, b.dtype, alpha))
        if plan is not None:
            c = xp.empty(plan.shape, dtype=a.dtype)
            plan.run(lib.handle(), a, b, c)
            return c
    names = _BY_DTYPE.get(a.dtype) if lib is not None else None
    batch = _batch_shape(a, b) if names is not None and a.ndim >= 2 and b.ndim >= 2 else None
    if names is None or batch is None or b.dtype != a.dtype or a.shape[-1] != b.shape[-2]:
        result = xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)
        if alpha != 1.0:
            result *= result.dtype.type(alpha)
        return result
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    shape = batch + (m, n)
    if out is not None and (tuple(out.shape) != shape or out.dtype != a.dtype or not out.flags.c_contiguous):
        out[...] = matmul(xp, a, b, alpha=alpha)
        return out
    c = out if out is not None else xp.empty(shape, dtype=a.dtype)
    count = math.prod(batch)
    if c.size == 0:
        return c
    if k == 0:
        c.fill(0)
        return c
    key = (a.shape, a.strides, b.shape, b.strides, a.dtype, b.dtype, alpha)
    a0, b0 = a, b
    a, op_a, ld_a, stride_a = _operand(xp, a, batch)
    b, op_b, ld_b, stride_b = _operand(xp, b, batch)
    if max(m, n, k, count, ld_a, ld_b) > _INT_MAX:  # beyond cuBLAS's 32-bit sizes: CuPy's matmul (its _64 calls)
        c[...] = xp.matmul(a, b)
        if alpha != 1.0:
            c *= c.dtype.type(alpha)
        return c
    one, batched, ctype = names
    alpha_p, beta_p = lib.scalar(ctype, alpha), lib.scalar(ctype, 0.0)
    # C^T (n, m) = op(B^T) (n, k) . op(A^T) (k, m), column-major with ldc = n
    head = (op_b, op_a, n, m, k, alpha_p)
    if count == 1:
        plan = _Plan(shape, getattr(lib.functions, one), one, head, (ld_b, ld_a), (beta_p, n), False)
    else:
        plan = _Plan(shape, getattr(lib.functions, batched), batched, head, (ld_b, stride_b, ld_a, stride_a),
                     (beta_p, n, m * n, count), True)
    plan.run(lib.handle(), a, b, c)
    if a is a0 and b is b0:  # (the operands were used as they are: the same layouts take the same call)
        if len(lib.plans) >= _MAX_PLANS:
            lib.plans.clear()
        lib.plans[key] = plan
    return c


def _span(x):
    """[first, last) byte addresses an array's elements occupy."""
    lo = hi = x.data.ptr
    for extent, stride in zip(x.shape, x.strides):
        if stride < 0:
            lo += (extent - 1) * stride
        else:
            hi += (extent - 1) * stride
    return lo, hi + x.itemsize


def _overlap(x, y):
    (x0, x1), (y0, y1) = _span(x), _span(y)
    return x0 < y1 and y0 < x1


def gemm_update(xp, a, b, c, alpha, beta):
    """c ← alpha·(a @ b) + beta·c in place, for 2-D float32/float64 operands of c's dtype and C-contiguous c, with
    `alpha` and `beta` 0-d device arrays of c's dtype read by the GEMM when it runs (cuBLAS's device pointer mode:
    per-call values such as the learning rate, captured into a CUDA graph by address). Returns False, doing
    nothing, where it cannot (no own cuBLAS, other dtypes or layouts): the caller computes otherwise."""
    lib = library(xp) if xp is not numpy else None
    names = _BY_DTYPE.get(c.dtype) if lib is not None else None
    if names is None or a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or not a.dtype == b.dtype == c.dtype == \
            alpha.dtype == beta.dtype or alpha.size != 1 or beta.size != 1 or not c.flags.c_contiguous:
        return False
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    if b.shape[0] != k or tuple(c.shape) != (m, n) or m == 0 or n == 0 or k == 0 or _overlap(c, a) or \
            _overlap(c, b):
        return False  # (an operand in c's memory: the GEMM would read what it writes)
    a, op_a, ld_a, _ = _operand(xp, a, ())
    b, op_b, ld_b, _ = _operand(xp, b, ())
    if max(m, n, k, ld_a, ld_b) > _INT_MAX:
        return False
    handle = lib.handle()
    lib.call("cublasSetPointerMode_v2", handle, POINTER_DEVICE)
    try:
        # C^T (n, m) = alpha op(B^T) (n, k) . op(A^T) (k, m) + beta C^T, column-major with ldc = n
        lib.call(names[0], handle, op_b, op_a, n, m, k, alpha.data.ptr, b.data.ptr, ld_b, a.data.ptr, ld_a,
                 beta.data.ptr, c.data.ptr, n)
    finally:
        lib.call("cublasSetPointerMode_v2", handle, POINTER_HOST)
    return True
