"""CuPy's host/device rules enforced on numpy, to find device bugs without a GPU.

`StrictArray` stands for a device array. Its data is a numpy array that only this module touches; to everything
else it behaves like a CuPy array:

* no implicit way to the host: `np.asarray(x)`, `np.array(x)`, `float(x)`, `int(x)`, `bool(x)`, `operator.index(x)`,
  `x.item()`, `x.tolist()`, `x.tobytes()` raise TypeError (CuPy refuses the first two; the others would be
  device -> host synchronisations, which a step must not make). `x.get()` and `asnumpy(x)` are the ways down;
* no mixing with host arrays: a numpy ufunc or function, or a function of the fake module, given a StrictArray and a
  numpy array (or a fake-module function given a numpy array alone) raises TypeError, as CuPy does; Python and numpy
  scalars mix freely. Indexing and item assignment accept host values (CuPy copies them up); an integer array
  index out of range wraps around, in `take` too, as in CuPy (numpy would raise: a kernel must check its indices
  itself, kernels/checks.py);
* what CuPy lacks is missing: a ufunc's `at` other than add/subtract/maximum/minimum/bitwise and/or/xor raises
  NotImplementedError (`multiply.at`); a device array's `flags` has no `writeable`; and `add.at`/`subtract.at`
  of floats sum in an order that changes from call to call, as CuPy's atomics do;
* it is not an `np.ndarray` (neither is a CuPy array), so `isinstance(x, np.ndarray)` checks see a device array;
* views are CuPy's: slicing, reshape of a contiguous array, transpose and `lib.stride_tricks.as_strided(x, shape,
  strides)` give arrays over the same memory (writes reach each other, no launch); the module's `lib.stride_tricks`
  has CuPy's functions and signatures only (numpy's `writeable=`/`subok=` are TypeErrors), and an array's
  numpy-only attributes (`ctypes`, `setflags`, `resize`, field access) raise AttributeError, as CuPy's do.

A numpy subclass cannot refuse `np.asarray` (numpy takes a subclass's buffer without asking it), hence a wrapper.

`module()` is the array module: numpy's namespace with every function taking and returning StrictArrays, and
`asarray`/`array` as the way up (host data is copied). `install(monkeypatch, mode)` makes it what "gpu"
placements run on (`devices.array_module("gpu")`), with CUDA reported usable, in a fresh default session.

As a pytest plugin it runs whole test files that way (what the GPU machine's suite stage does for real):
`PYTHONPATH=tests pytest -p strict_device tests/test_x.py` (`STRICT_DEVICE_SYNCS=allow`: implicit
synchronisations allowed, for tests that read device values themselves). Tests that start child processes run
those on the CPU.
"""
import ctypes
import os
import types
import weakref

import numpy as np
import pytest

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array "
            "explicitly.")
SYNC = "implicit device -> host transfer (%s) of a device array: use `.get()` outside the step"
# CuPy's own refusals while the current stream captures (CuPy 14.2: cupy/cuda/memory.pyx `copy_from_host_async`,
# the way of every upload; cupy_backends/cuda/libs/cublas.pyx `setStream`, the way of every cuBLAS call of CuPy's)
H2D_IN_CAPTURE = "the current stream is capturing, so H2D transfers are disallowed"
CUBLAS_IN_CAPTURE = "calling cuBLAS API during stream capture is currently unsupported"
MODULE_NAME = "strict_device"


def _host_array_error(where):
    return TypeError("Unsupported type <class 'numpy.ndarray'> (a host array given to %s)" % where)


def _raw(value, where):
    """The numpy data of device arrays inside `value` (lists, tuples, dicts); host arrays are refused."""
    if isinstance(value, StrictArray):
        return value._data
    if isinstance(value, np.ndarray):
        raise _host_array_error(where)
    if isinstance(value, (list, tuple)):
        return type(value)(_raw(v, where) for v in value)
    if isinstance(value, dict):
        return {k: _raw(v, where) for k, v in value.items()}
    return value


def _lenient_raw(value):
    """As `_raw`, host arrays accepted (the ways up, indices)."""
    if isinstance(value, StrictArray):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_lenient_raw(v) for v in value)
    return value


def _device(value):
    """Results as device arrays: numpy arrays and numpy scalars (CuPy returns 0-d arrays where numpy returns
    scalars)."""
    if isinstance(value, np.ndarray):
        return StrictArray(value)
    if isinstance(value, np.generic):
        return StrictArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_device(v) for v in value)
    if isinstance(value, list):
        return [_device(v) for v in value]
    return value


class Syncs:
    """Whether implicit device -> host synchronisations are refused (the default) or allowed and recorded, as CuPy
    would make them silently; and how many explicit transfers down (`.get()`) were made."""
    allowed = False
    seen = []  # what each allowed implicit synchronisation was, in order
    gets = 0
    at_launch = []  # Launches.count at each synchronisation (explicit or implicit): where in the step it happened

    @classmethod
    def total(cls):
        """Every device -> host synchronisation so far: explicit transfers and the allowed implicit ones."""
        return cls.gets + len(cls.seen)


class Launches:
    """Kernel launches and host -> device copies, counted as CuPy would make them.

    A launch is every operation that writes device memory: a ufunc (operators included), a function or method
    whose result is new memory (not a view of an input: reshape/transpose/basic slicing launch nothing), an
    advanced-indexing read, an item assignment, a raw kernel of `RawModule`. `uploads`: host data copied up
    (`asarray`/`array` of host values, host values assigned into a device array). `by_name`: launches per
    operation name, to see what a step is made of."""
    count = 0
    uploads = 0
    by_name = {}

    by_device = {}  # launches per current GPU, where the fake module has GPUs (`module(gpus=n)`)

    @classmethod
    def reset(cls):
        cls.count, cls.uploads, cls.by_name, cls.by_device = 0, 0, {}, {}

    @classmethod
    def add(cls, name, n=1):
        cls.count += n
        cls.by_name[name] = cls.by_name.get(name, 0) + n
        if _GPUS["cuda"] is not None:
            gpu = _GPUS["cuda"].current
            cls.by_device[gpu] = cls.by_device.get(gpu, 0) + n


_GPUS = {"cuda": None}  # the fake CUDA runtime of the last module made with gpus


_PINNED = []  # the fake's pinned host allocations (bytearrays)


def _is_pinned(array):
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return any(base is p for p in _PINNED)


class FakeStream:
    """A stream of the fake CUDA runtime: `with stream:` makes it current; `begin_capture()` records every launch
    (the fake cuBLAS's GEMMs included) until `end_capture()`, which returns a FakeGraph replaying them; a sync or a
    read of a device value while capturing raises, as CUDA refuses them, and so do an upload (of pinned memory too)
    and CuPy's own cuBLAS products, as CuPy refuses them."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.ptr = id(self)
        self.pending = []  # asynchronous copies down, landing at the next synchronize()

    def __enter__(self):
        self.cuda._streams.append(self)
        return self

    def __exit__(self, *exc):
        self.cuda._streams.pop()

    def begin_capture(self, mode=None):
        if _CAPTURE["thunks"] is not None:
            raise RuntimeError("a capture is already under way")
        _CAPTURE["thunks"] = []

    def end_capture(self):
        thunks, _CAPTURE["thunks"] = _CAPTURE["thunks"], None
        if thunks is None:
            raise RuntimeError("end_capture without begin_capture")
        self.cuda.captures += 1
        return FakeGraph(self.cuda, thunks)

    def is_capturing(self):
        return _CAPTURE["thunks"] is not None

    def synchronize(self):
        _refuse_in_capture("stream.synchronize()")
        Syncs.gets += 1
        Syncs.at_launch.append(Launches.count)
        pending, self.pending = self.pending, []
        for land in pending:
            land()


class FakeGraph:
    """A captured graph: `launch()` replays the captured launches in order, one launch counted.

    Unlike CUDA, the fake computes while it captures (the code being captured needs its arrays' shapes); so the
    first launch after the capture replays nothing — the capture already made that run — and every later launch
    replays it all, with the captured arguments."""

    def __init__(self, cuda, thunks):
        self.cuda, self.thunks = cuda, thunks
        self.ran_at_capture = True

    def launch(self, stream=None):
        self.cuda.launches += 1
        Launches.add("graph")
        if self.ran_at_capture:
            self.ran_at_capture = False
            return
        for thunk in self.thunks:
            thunk()


class FakeCuda:
    """CuPy's `cuda` calls the runtime makes to pick GPUs: a device count, the current device, `Device(k)` (`use()`,
    or a `with` block). The fake module's launches are counted per current device (`Launches.by_device`)."""

    def __init__(self, count):
        self.count, self.current, self.used, self.synchronized = count, 0, [], []
        self.runtime = types.SimpleNamespace(getDeviceCount=lambda: self.count, getDevice=lambda: self.current,
                                             streamCaptureModeRelaxed=2)
        self._null = FakeStream(self)
        self._streams = [self._null]
        self.captures = 0  # graphs captured
        self.launches = 0  # graph launches

    # --- streams, graphs, pinned memory, pools: what runtime/cuda_graph.py and backend/step_scalars.py call ------
    def Stream(self, non_blocking=False, null=False):  # noqa: N802 - CuPy's name
        return FakeStream(self)

    def get_current_stream(self):
        return self._streams[-1]

    def alloc_pinned_memory(self, nbytes):
        memory = bytearray(nbytes)
        _PINNED.append(memory)
        return memory

    def Event(self, block=False, disable_timing=False, interprocess=False):  # noqa: N802
        return types.SimpleNamespace(record=lambda stream=None: None, synchronize=lambda: None, done=True)

    def MemoryPool(self):  # noqa: N802
        return types.SimpleNamespace(malloc=lambda size: None, used_bytes=lambda: 0, free_all_blocks=lambda: None)

    @staticmethod
    def using_allocator(allocator=None):
        import contextlib

        return contextlib.nullcontext()

    def Device(self, k):  # noqa: N802 - CuPy's name
        cuda = self

        class _Device:
            def use(self):
                cuda.used.append(k)
                cuda.current = k

            def __enter__(self):
                self.previous = cuda.current
                cuda.current = k
                return self

            def __exit__(self, *exc):
                cuda.current = self.previous

            def synchronize(self):  # (nothing runs asynchronously here: which device was waited for is recorded)
                cuda.synchronized.append(k)

        if not 0 <= k < self.count:
            raise ValueError("CUDA device %d of %d" % (k, self.count))
        return _Device()


def _data_of(values):
    """The numpy arrays among `values` (device data already unwrapped), nested lists/tuples/dicts included."""
    if isinstance(values, np.ndarray):
        return [values]
    if isinstance(values, (list, tuple)):
        return [a for v in values for a in _data_of(v)]
    if isinstance(values, dict):
        return [a for v in values.values() for a in _data_of(v)]
    return []


def _count_new(name, result, raw_inputs):
    """One launch for a call whose result is new device memory, none for a view of an input (or a non-array);
    returns whether it launched. A numpy scalar result (a whole-array reduction: `min`, `any`, `argmax`) is new
    memory too: CuPy launches a kernel writing a 0-d array (which a CUDA graph's replay rewrites)."""
    if isinstance(result, np.generic):
        Launches.add(name)
        return True
    outs = _data_of(result)
    if not outs:
        return False
    ins = _data_of(raw_inputs)
    if all(any(np.may_share_memory(o, i) for i in ins) for o in outs if o.size):
        return False
    Launches.add(name)
    return True


# --- stream capture (CUDA graphs): launches recorded while a FakeCuda stream captures, replayed by its graph ------
_CAPTURE = {"thunks": None}


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    return [value]


def _record(recompute, wrapped=None):
    """While capturing: `recompute()` (the launch's computation on the raw arrays) is kept for the graph's replays,
    its results written into the memory of the results this launch made (`wrapped`: what the caller got), as a
    replayed kernel writes into the addresses it was captured with. Values passed by value (Python scalars) are
    replayed as captured — frozen, as in a real graph."""
    thunks = _CAPTURE["thunks"]
    if thunks is None:
        return
    targets = [w._data for w in _flat(wrapped) if isinstance(w, StrictArray)] if wrapped is not None else []

    def replay():
        new = recompute()
        if targets:
            for target, value in zip(targets, _flat(new)):
                if target is not value:
                    target[...] = value
    thunks.append(replay)


def _refuse_in_capture(what):
    if _CAPTURE["thunks"] is not None:
        raise RuntimeError("%s while a stream is capturing (cudaErrorStreamCaptureUnsupported: operation not "
                           "permitted when stream is capturing)" % what)


def _refuse_upload_in_capture(what):
    """CuPy refuses every host -> device copy while the current stream captures, from pinned memory too (its copy
    would be legal CUDA, but CuPy checks first)."""
    if _CAPTURE["thunks"] is not None:
        raise RuntimeError("%s (the fake device: %s)" % (H2D_IN_CAPTURE, what))


def _refuse_cublas_in_capture(name, raw):
    """CuPy's products of floating arrays (matmul and `@`, dot, vdot, inner, tensordot, einsum) call cuBLAS through
    its wrappers, which refuse a capturing stream; its integer products are kernels of its own."""
    if _CAPTURE["thunks"] is not None and name.rpartition(".")[2] in _CUBLAS_FUNCTIONS and \
            any(a.dtype.kind in "fc" for a in _data_of(raw)):
        raise NotImplementedError(CUBLAS_IN_CAPTURE)


_CUBLAS_FUNCTIONS = {"matmul", "dot", "vdot", "inner", "tensordot", "einsum"}


def _refuse(what, convert):
    def refused(self, *args, **kwargs):
        _refuse_in_capture("%s of a device array" % what)
        if not Syncs.allowed:
            raise TypeError(SYNC % what)
        Syncs.seen.append(what)
        Syncs.at_launch.append(Launches.count)
        return convert(self._data, *args, **kwargs)
    return refused


# --- device memory by address, and cuBLAS on it (kernels/cuda_blas.py calls the library through ctypes) -----------
_MEMORY = {}  # address of a numpy array owning its memory -> weak reference to it (registered by `.data`)


class FakeMemoryPointer:
    """CuPy's MemoryPointer as library calls use it: `.ptr`, the address of the array's first element."""
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


def _address(data):
    """The address of numpy array `data`'s first element; the array owning that memory is registered, so that the
    fake cuBLAS finds it again by address."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    if len(_MEMORY) > 512:
        for key in [k for k, ref in _MEMORY.items() if ref() is None]:
            del _MEMORY[key]
    _MEMORY[root.ctypes.data] = weakref.ref(root)
    return data.ctypes.data


def _at(address, dtype, shape, strides, what):
    """A numpy view of the fake's device memory: `shape` with byte `strides` from `address`, inside one registered
    array; a ValueError naming `what` where it would read or write outside every array (on a GPU: other memory, or a
    fault)."""
    dtype = np.dtype(dtype)
    extent = dtype.itemsize + sum((n - 1) * st for n, st in zip(shape, strides)) if all(shape) else 0
    for start, ref in list(_MEMORY.items()):
        root = ref()
        if root is None or not start <= address < start + max(root.nbytes, 1):
            continue
        if address + extent > start + root.nbytes or min(strides, default=0) < 0:
            raise ValueError("cuBLAS %s: %d bytes from 0x%x (strides %s) leave the %d-byte array at 0x%x" % (
                what, extent, address, strides, root.nbytes, start))
        if not (root.flags.c_contiguous or root.flags.f_contiguous):
            raise ValueError("cuBLAS %s: the array at 0x%x does not own contiguous memory" % (what, start))
        flat = root.reshape(-1, order="A").view(np.uint8)
        return np.ndarray(shape, dtype, buffer=flat, offset=address - start, strides=strides)
    raise ValueError("cuBLAS %s: no device array holds address 0x%x" % (what, address))


def _is_device_address(address):
    """Whether `address` lies inside a registered device array of the fake."""
    for start, ref in list(_MEMORY.items()):
        root = ref()
        if root is not None and start <= address < start + max(root.nbytes, 1):
            return True
    return False


class FakeCublas:
    """cuBLAS's C functions that kernels/cuda_blas.py calls, as it calls them through ctypes (addresses as ints, the
    new handle through `ctypes.byref`), on the fake's memory: each GEMM is numpy's product of views made from the
    addresses, operations, leading dimensions and batch strides exactly as cuBLAS reads them (column-major), so a
    wrong one gives wrong numbers or an error here, not first on a GPU. A GEMM is one launch (counted; recorded in a
    capture: the library, unlike CuPy's wrappers of it, may be captured). As the library would misbehave, it refuses
    a GEMM on a handle bound to another stream than the current one, and a captured GEMM whose handle is back on
    cuBLAS's default workspace (`cublasSetStream` puts it there; cuBLAS would then allocate inside the capture).
    Statuses: 0 success, 1 not initialised (an unknown handle), 7 invalid value (a leading dimension too small)."""

    def __init__(self, where):
        self.where = where  # () -> (current GPU, current stream's address)
        self.handles = {}

    def cublasCreate_v2(self, ref):
        handle = len(self.handles) + 1
        self.handles[handle] = {"stream": None, "workspace": None, "pointer_mode": 0}
        ref._obj.value = handle
        return 0

    def cublasSetPointerMode_v2(self, handle, mode):
        """0: alpha and beta are host addresses, read when the GEMM is called; 1: device addresses, read when it
        runs (a captured GEMM's replay reads them again)."""
        if handle not in self.handles:
            return 1
        if mode not in (0, 1):
            return 7
        self.handles[handle]["pointer_mode"] = mode
        return 0

    def cublasSetStream_v2(self, handle, stream):
        if handle not in self.handles:
            return 1
        self.handles[handle].update(stream=stream, workspace=None)
        return 0

    def cublasSetWorkspace_v2(self, handle, address, size):
        if handle not in self.handles:
            return 1
        _at(address, np.uint8, (size,), (1,), "workspace")
        self.handles[handle]["workspace"] = (address, size)
        return 0

    def _gemm(self, name, dtype, ctype, handle, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
              count):
        state = self.handles.get(handle)
        if state is None:
            return 1
        stream = self.where()[1]
        if state["stream"] != stream:
            raise RuntimeError("cuBLAS %s on a handle bound to stream %s while the current stream is %s: the GEMM "
                               "would run out of the current stream's order (and outside its capture)" % (
                                   name, state["stream"], stream))
        if _CAPTURE["thunks"] is not None and state["workspace"] is None:
            raise RuntimeError("cuBLAS %s captured on cuBLAS's default workspace: it would allocate inside the "
                               "capture (cublasSetWorkspace after cublasSetStream)" % name)
        if ta not in (0, 1) or tb not in (0, 1) or min(m, n, k, count) < 0:
            return 7
        rows_a, cols_a = (m, k) if ta == 0 else (k, m)
        rows_b, cols_b = (k, n) if tb == 0 else (n, k)
        if lda < max(1, rows_a) or ldb < max(1, rows_b) or ldc < max(1, m):
            return 7
        if m == 0 or n == 0 or count == 0:
            return 0
        e = np.dtype(dtype).itemsize
        c_view = _at(c, dtype, (count, m, n), (sc * e, e, ldc * e), "%s C" % name)
        on_device = state["pointer_mode"] == 1
        if on_device:  # device memory: read when the GEMM runs (each replay of a capture reads them again)
            alpha_view, beta_view = (_at(p, dtype, (), (), "%s %s" % (name, what))
                                     for p, what in ((alpha, "alpha"), (beta, "beta")))
        else:
            for p, what in ((alpha, "alpha"), (beta, "beta")):
                if _is_device_address(p):
                    raise ValueError("cuBLAS %s: %s is a device address in host pointer mode (cuBLAS would read "
                                     "host memory there)" % (name, what))
            host_al, host_be = ctype.from_address(alpha).value, ctype.from_address(beta).value
        if k:
            a_view = _at(a, dtype, (count, rows_a, cols_a), (sa * e, e, lda * e), "%s A" % name)
            b_view = _at(b, dtype, (count, rows_b, cols_b), (sb * e, e, ldb * e), "%s B" % name)
        dtype = np.dtype(dtype)

        def transposed(view, trans, stride):
            # op(X)^T from the view's transpose, which is row-major (the layout the caller's arrays have): numpy's
            # BLAS takes it, and one matrix where the batch stride is 0 (numpy broadcasts it; on batched strided views
            # or a batch of views of one matrix it may take its slow loop, seconds for a LeNet product)
            rows = np.swapaxes(view[0] if stride == 0 else view, -1, -2)
            return rows if trans == 0 else np.swapaxes(rows, -1, -2)

        def run():  # (the views are read when it runs: a replay reads what the memory holds then)
            # C = alpha op(A) op(B) + beta C, computed as C^T = op(B)^T op(A)^T (the same sums)
            al, be = (alpha_view.item(), beta_view.item()) if on_device else (host_al, host_be)
            if k:
                product = np.swapaxes(np.matmul(transposed(b_view, tb, sb), transposed(a_view, ta, sa)), -1, -2)
            else:
                product = np.zeros(c_view.shape, dtype)
            if al != 1:
                product = product * dtype.type(al)
            if be != 0:
                product = product + dtype.type(be) * c_view
            c_view[...] = product

        Launches.add("cublas:" + name)
        run()
        _record(run)
        return 0

    def cublasSgemm_v2(self, handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        return self._gemm("cublasSgemm_v2", np.float32, ctypes.c_float, handle, ta, tb, m, n, k, alpha, a, lda, 0,
                          b, ldb, 0, beta, c, ldc, 0, 1)

    def cublasDgemm_v2(self, handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        return self._gemm("cublasDgemm_v2", np.float64, ctypes.c_double, handle, ta, tb, m, n, k, alpha, a, lda, 0,
                          b, ldb, 0, beta, c, ldc, 0, 1)

    def cublasSgemmStridedBatched(self, handle, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                                  count):
        return self._gemm("cublasSgemmStridedBatched", np.float32, ctypes.c_float, handle, ta, tb, m, n, k, alpha,
                          a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count)

    def cublasDgemmStridedBatched(self, handle, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                                  count):
        return self._gemm("cublasDgemmStridedBatched", np.float64, ctypes.c_double, handle, ta, tb, m, n, k, alpha,
                          a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count)


class StrictArray(np.lib.mixins.NDArrayOperatorsMixin):
    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = data

    @property
    def data(self):
        """CuPy's MemoryPointer of the first element (`.ptr`): what library calls take (the fake cuBLAS)."""
        return FakeMemoryPointer(_address(self._data))

    # --- the only ways down ---------------------------------------------------------------------------------------
    def get(self, stream=None, out=None, blocking=True):
        """The way down. `blocking=False` with a pinned `out` (CuPy 13+): an asynchronous copy on `stream` (or the
        current one) — no synchronisation here; `out` holds the values once that stream is synchronised (until
        then it keeps what it had, as host memory a copy has not reached yet). Any other call waits: one
        synchronisation."""
        _refuse_in_capture("a device -> host copy")
        if not blocking and out is not None and _is_pinned(out) and _GPUS["cuda"] is not None:
            if out.shape != self._data.shape or out.dtype != self._data.dtype:
                raise ValueError("get(out=): out is %s %s, the array %s %s" % (
                    out.shape, out.dtype, self._data.shape, self._data.dtype))
            on = stream if stream is not None else _GPUS["cuda"].get_current_stream()
            snapshot = self._data.copy()  # (the values at the copy's place in the stream: now, on the fake)
            on.pending.append(lambda: np.copyto(out, snapshot))
            return out
        Syncs.gets += 1
        Syncs.at_launch.append(Launches.count)
        if out is not None:
            out[...] = self._data
            return out
        return np.array(self._data, copy=True)

    def set(self, arr, stream=None):
        """Host data copied into this array (CuPy's `set`; asynchronous with a stream and pinned memory)."""
        if isinstance(arr, StrictArray) or not isinstance(arr, np.ndarray):
            raise TypeError("set() takes a host numpy array, got %s" % type(arr).__name__)
        if arr.shape != self._data.shape or arr.dtype != self._data.dtype:
            raise ValueError("set(): shape/dtype %s %s differ from the array's %s %s" % (
                arr.shape, arr.dtype, self._data.shape, self._data.dtype))
        _refuse_upload_in_capture("set() of %s host memory" % ("pinned" if _is_pinned(arr) else "pageable"))
        Launches.uploads += 1
        self._data[...] = arr

    # --- refused: implicit conversions and synchronisations --------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT)

    __float__ = _refuse("float()", float)
    __int__ = _refuse("int()", int)
    __index__ = _refuse("operator.index()", lambda a: a.__index__())
    __bool__ = _refuse("bool()", bool)
    __complex__ = _refuse("complex()", complex)
    item = _refuse(".item()", np.ndarray.item)
    tolist = _refuse(".tolist()", np.ndarray.tolist)
    tobytes = _refuse(".tobytes()", np.ndarray.tobytes)

    # --- numpy protocols: device in, device out ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        where = "numpy.%s" % ufunc.__name__
        out = kwargs.get("out")
        raw_inputs = _raw(inputs, where)
        raw_kwargs = _raw(kwargs, where)
        _refuse_cublas_in_capture(where, raw_inputs)
        result = getattr(ufunc, method)(*raw_inputs, **raw_kwargs)
        Launches.add(where if method == "__call__" else "%s.%s" % (where, method))
        wrapped = (out[0] if len(out) == 1 else out) if out is not None else _device(result)
        _record(lambda: getattr(ufunc, method)(*raw_inputs, **raw_kwargs), wrapped)
        return wrapped

    def __array_function__(self, func, types_, args, kwargs):
        where = "numpy.%s" % func.__name__
        raw_args, raw_kwargs = _raw(args, where), _raw(kwargs, where)
        _refuse_cublas_in_capture(where, raw_args)
        result = func(*raw_args, **raw_kwargs)
        wrapped = _device(result)
        if _count_new(where, result, (raw_args, raw_kwargs)):
            _record(lambda: func(*raw_args, **raw_kwargs), wrapped)
        return wrapped

    # --- array behaviour ---------------------------------------------------------------------------------------
    def __getitem__(self, index):
        raw_index = _lenient_raw(index)
        if _is_mask(raw_index):
            _size_from_device("boolean-mask indexing")
        data = self._data
        raw_index = _wrapped(raw_index, data.shape)
        result = data[raw_index]
        wrapped = _device(result)
        if _count_new("getitem", result, data):
            _record(lambda: data[raw_index], wrapped)
        return wrapped

    def __setitem__(self, index, value):
        if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and not _contains_device(value)):
            _refuse_upload_in_capture("host data assigned into a device array")
            Launches.uploads += 1
        data, raw_index, raw_value = self._data, _lenient_raw(index), _lenient_raw(value)
        raw_index = _wrapped(raw_index, data.shape)
        data[raw_index] = raw_value
        Launches.add("setitem")
        _record(lambda: data.__setitem__(raw_index, raw_value))

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (_device(row) for row in self._data)

    def __repr__(self):
        return "StrictArray(%r)" % (self._data,)

    def __copy__(self):
        return StrictArray(self._data.copy())

    @property
    def flags(self):
        return StrictFlags(self._data.flags)

    @property
    def _c_contiguous(self):
        """CuPy's readonly attribute (cupy/_core/core.pxd, `_ndarray_base`) that `flags` is made from: what
        kernels/cuda_source.py's launches read without making a Flags object."""
        return self._data.flags.c_contiguous

    def __deepcopy__(self, memo):
        return StrictArray(self._data.copy())

    def __getattr__(self, name):
        if name.startswith("__"):  # __array_interface__, __array_struct__, __dlpack__: host access numpy would take
            raise AttributeError(name)
        if name in _NUMPY_ONLY_ATTRIBUTES:
            raise AttributeError("'cupy.ndarray' object has no attribute '%s'" % name)
        value = getattr(self._data, name)
        if callable(value):
            data = self._data

            def method(*args, **kwargs):
                where = "ndarray.%s" % name
                raw_args, raw_kwargs = _raw(args, where), _raw(kwargs, where)
                _refuse_cublas_in_capture(where, (data, raw_args))
                result = value(*raw_args, **raw_kwargs)
                wrapped = _device(result)
                if result is None:  # in place (fill, sort)
                    Launches.add(where)
                    _record(lambda: value(*raw_args, **raw_kwargs))
                elif _count_new(where, result, data):
                    _record(lambda: value(*raw_args, **raw_kwargs), wrapped)
                return wrapped
            method.__name__ = name
            return method
        return _device(value) if isinstance(value, np.ndarray) else value


# numpy.ndarray's attributes that cupy.ndarray (14.2) lacks: host memory (ctypes), flags set by hand (device memory
# has no read-only flag), in-place reallocation (resize), field access; asking for one is a bug on a GPU
_NUMPY_ONLY_ATTRIBUTES = frozenset(("ctypes", "getfield", "setfield", "resize", "setflags", "to_device"))


def _as_strided(x, shape=None, strides=None):
    """CuPy's `cupy.lib.stride_tricks.as_strided(x, shape=None, strides=None)`: an array over x's memory (a view,
    no launch, no bounds check); numpy's `subok=`/`writeable=` do not exist there (TypeError, as CuPy's signature
    gives). A host array is refused."""
    if not isinstance(x, StrictArray):
        raise _host_array_error("lib.stride_tricks.as_strided") if isinstance(x, np.ndarray) else \
            TypeError("as_strided: expected a device array, got %s" % type(x).__name__)
    return StrictArray(np.lib.stride_tricks.as_strided(x._data, shape, strides))


def _stride_tricks():
    """The fake's `lib.stride_tricks`: what CuPy 14.2's module has (`as_strided`, `sliding_window_view`)."""
    return types.SimpleNamespace(
        __name__=MODULE_NAME + ".lib.stride_tricks", as_strided=_as_strided,
        sliding_window_view=_Function(np.lib.stride_tricks.sliding_window_view,
                                      MODULE_NAME + ".lib.stride_tricks.sliding_window_view"))


class StrictFlags:
    """A device array's `flags` as CuPy 14 has them (cupy/_core/flags.pyx): c_contiguous, f_contiguous, owndata,
    also by their upper-case keys; nothing else: no `writeable`, `aligned`, `writebackifcopy` (device memory is
    always writeable, so code asking a device array must not; `devices.is_writeable`)."""
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")
    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous", "OWNDATA": "owndata"}

    def __init__(self, flags):
        self.c_contiguous, self.f_contiguous, self.owndata = flags.c_contiguous, flags.f_contiguous, flags.owndata

    def __getitem__(self, key):
        if key not in self._KEYS:
            raise KeyError(key)
        return getattr(self, self._KEYS[key])

    def __repr__(self):
        return "  C_CONTIGUOUS : %s\n  F_CONTIGUOUS : %s\n  OWNDATA : %s" % (
            self.c_contiguous, self.f_contiguous, self.owndata)


class _Function:
    """A numpy function (or ufunc) taking and returning device arrays; a ufunc's methods (`at`, `reduce`, ...) too."""

    def __init__(self, fn, name):
        self._fn, self.__name__ = fn, name

    def __call__(self, *args, **kwargs):
        raw_args, raw_kwargs = _raw(args, self.__name__), _raw(kwargs, self.__name__)
        _refuse_cublas_in_capture(self.__name__, raw_args)
        if self.__name__.endswith(".take") and "mode" not in raw_kwargs:
            raw_kwargs["mode"] = "wrap"  # CuPy's take wraps an index out of range around (numpy raises)
        if self.__name__ in _SIZE_FROM_DEVICE or (self.__name__.endswith(".where") and len(raw_args) == 1):
            _size_from_device(self.__name__)
        fn = self._fn
        result = fn(*raw_args, **raw_kwargs)
        wrapped = _device(result)
        if self.__name__ in _NO_KERNEL:
            pass
        elif isinstance(fn, np.ufunc) or result is None:  # a ufunc, or an in-place call (add.at, copyto)
            Launches.add(self.__name__)
            _record(lambda: fn(*raw_args, **raw_kwargs), wrapped if result is not None else None)
        elif _count_new(self.__name__, result, (raw_args, raw_kwargs)):
            _record(lambda: fn(*raw_args, **raw_kwargs), wrapped)
        return wrapped

    def __getattr__(self, name):
        value = getattr(self._fn, name)
        if name == "at" and isinstance(self._fn, np.ufunc) and self._fn.__name__ not in _CUPY_UFUNC_AT:
            return _refused_at(self._fn.__name__)
        if name == "at" and isinstance(self._fn, np.ufunc) and self._fn.__name__ in _ATOMIC_ORDER:
            return _Function(_atomic_at(self._fn), "%s.%s" % (self.__name__, name))
        return _Function(value, "%s.%s" % (self.__name__, name)) if callable(value) else value


def _wrapped(index, shape):
    """`index` (raw: numpy arrays, ints, slices, None, ...) with its integer arrays wrapped into their axes' sizes,
    as CuPy reads and writes them (an out-of-range integer array index wraps around; numpy raises), so that a
    kernel relying on numpy's IndexError instead of its own check fails here as it fails on a GPU."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(isinstance(i, np.ndarray) and i.dtype.kind in "iu" for i in items):
        return index
    consumed = sum(i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else 1
                   for i in items if i is not None and i is not Ellipsis)
    out, axis = [], 0
    for i in items:
        if i is Ellipsis:
            axis += len(shape) - consumed
        elif i is None:
            pass
        elif isinstance(i, np.ndarray) and i.dtype == bool:
            axis += i.ndim
        else:
            if isinstance(i, np.ndarray) and i.dtype.kind in "iu" and axis < len(shape) and shape[axis]:
                i = np.mod(i, shape[axis])
            axis += 1
        out.append(i)
    return tuple(out) if isinstance(index, tuple) else out[0]


# the ufuncs whose `at` CuPy 14 implements (through atomics); every other ufunc's `at` exists and raises
_CUPY_UFUNC_AT = {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"}


# CuPy's add.at / subtract.at add with atomics: a float element's terms are summed in whatever order the threads
# reach it, which changes from launch to launch (the first GPU run: a padding gradient's train and predict jobs
# differed at 1e-16). The fake sums each call's float items in another order, fixed by the call's number (the
# suite's runs repeat), so code that needs equal bits run after run cannot rely on them.
_ATOMIC_ORDER = {"add", "subtract"}
_ATOMIC_CALLS = [0]


def _atomic_at(ufunc):
    def at(a, indices, b):
        if a.dtype.kind not in "fc":
            return ufunc.at(a, indices, b)  # integer sums do not depend on the order
        positions = np.arange(a.size).reshape(a.shape)[indices]  # each item's element, as the ufunc would reach it
        values = np.broadcast_to(np.asarray(b), positions.shape)
        order = np.random.default_rng(_ATOMIC_CALLS[0]).permutation(positions.size)
        _ATOMIC_CALLS[0] += 1
        flat = a.reshape(-1)
        ufunc.at(flat, positions.reshape(-1)[order], values.reshape(-1)[order])
        if not np.shares_memory(flat, a):  # (a strided target: its flat copy written back)
            a[...] = flat.reshape(a.shape)
    at.__name__ = "at"
    return at


def _refused_at(name):
    def at(*args, **kwargs):
        raise NotImplementedError("`cupy_%s.at` is not supported yet" % name)
    return at


def _is_mask(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, np.ndarray) and i.dtype == bool for i in items)


def _contains_device(value):
    return any(isinstance(v, StrictArray) or (isinstance(v, (list, tuple)) and _contains_device(v)) for v in value)


# operations whose result size depends on device values: CuPy reads a count back first (an implicit synchronisation)
_SIZE_FROM_DEVICE = {MODULE_NAME + "." + name for name in (
    "nonzero", "flatnonzero", "argwhere", "unique", "compress", "extract", "count_nonzero_host")}


# allocations without a kernel (CuPy's `empty` takes memory from its pool and writes nothing)
_NO_KERNEL = {MODULE_NAME + "." + name for name in ("empty", "empty_like")}


def _size_from_device(what):
    _refuse_in_capture(what)
    if not Syncs.allowed:
        raise TypeError(SYNC % what)
    Syncs.seen.append(what)
    Syncs.at_launch.append(Launches.count)


def _upload(a, dtype, order):
    """Host data up: one host -> device copy (device values inside lists are taken as they are)."""
    if not (isinstance(a, (list, tuple)) and _contains_device(a)):
        _refuse_upload_in_capture("host data uploaded by asarray/array")
        Launches.uploads += 1
    else:
        Launches.add("array(list of device values)")
    return StrictArray(np.array(_lenient_raw(a), dtype=dtype, order=order, copy=True))


def asarray(a, dtype=None, order=None):
    """Host data up to the device (a copy); a device array of the right dtype as it is."""
    if isinstance(a, StrictArray):
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a
        Launches.add("asarray(astype)")
        out = StrictArray(a._data.astype(dtype))
        data = a._data
        _record(lambda: data.astype(dtype), out)
        return out
    return _upload(a, dtype, order or "K")


def array(a, dtype=None, copy=True, order="K"):
    if isinstance(a, StrictArray):
        Launches.add("array(copy)")
        out = StrictArray(np.array(a._data, dtype=dtype, copy=True, order=order))
        data = a._data
        _record(lambda: np.array(data, dtype=dtype, copy=True, order=order), out)
        return out
    return _upload(a, dtype, order)


def asnumpy(a):
    return a.get() if isinstance(a, StrictArray) else np.asarray(a)


class _Namespace(types.SimpleNamespace):
    """A module of the fake: numpy's attributes, functions wrapped on first use."""

    def __init__(self, module, name, **extra):
        super().__init__(**extra)
        self.__name__ = name
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, types.ModuleType):
            wrapped = _Namespace(value, "%s.%s" % (self.__name__, name))
        elif isinstance(value, type) or not callable(value):
            wrapped = value  # dtypes, classes (iinfo, dtype), constants
        else:
            wrapped = _Function(value, "%s.%s" % (self.__name__, name))
        setattr(self, name, wrapped)
        return wrapped


class _RawFunction:
    """A function of a fake RawModule: a launch runs the function's host twin (kernels/cuda_source.py) on the
    arrays' data, or, with a `runner`, whatever the runner makes of the source (tests/cuda_host.py compiles it for
    the host)."""

    def __init__(self, module, name, runner):
        self.module, self.name, self.runner = module, name, runner

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        if shared_mem:
            raise ValueError("%s: the project's kernels use no dynamic shared memory" % self.name)
        raw = [a._data if isinstance(a, StrictArray) else a for a in args]
        if any(isinstance(a, np.ndarray) and not isinstance(b, StrictArray) for a, b in zip(raw, args)):
            raise TypeError("%s: a host array given to a device kernel" % self.name)
        Launches.add("raw:" + self.name)
        module, name, runner = self.module, self.name, self.runner
        if runner is not None:
            def run():
                runner(module, name, tuple(grid), tuple(block), raw)
        else:
            def run():
                module.twins[name](*raw)
        run()
        _record(run)


class RawModule:
    """cupy.RawModule's calls the project makes (`get_function`), on a CudaModule's twins."""

    runner = None  # set per fake module by `module(runner=...)`

    def __init__(self, code, options=(), name_expressions=None, backend="nvrtc"):
        from oneflow_compat.kernels import cuda_source

        # only the project's declared sources exist here (a fake device runs their twins)
        found = [m for m in cuda_source.MODULES.values() if m.code == code]
        if not found:
            raise KeyError("no CudaModule of kernels/cuda_source.py has this source")
        self.cuda_module = found[0]
        self.options = tuple(options)

    def get_function(self, name):
        if name not in self.cuda_module.functions:
            raise AttributeError("CUDA module %r has no function %r" % (self.cuda_module.name, name))
        return _RawFunction(self.cuda_module, name, type(self).runner)


class DeviceNccl:
    """The fake NCCL (tests/fake_nccl.py) on the fake device's arrays: NCCL reads and writes device memory, which is
    their data here; a host array given to it fails, as NCCL would read a host pointer as a device one."""

    def __init__(self, fake):
        self.fake, self.SUM, self.MAX = fake, fake.SUM, fake.MAX

    def __getattr__(self, name):
        fn = getattr(self.fake, name)

        def call(*args):
            for a in args:
                if isinstance(a, np.ndarray):
                    raise TypeError("NCCL %s was given a host array" % name)
            return fn(*[a._data if isinstance(a, StrictArray) else a for a in args])
        return call


def module(runner=None, gpus=None):
    """A fresh fake device array module (CuPy's rules, numpy's arithmetic). `runner(cuda_module, function, grid,
    block, host arrays and scalars)` runs raw kernels instead of their twins. `gpus`: a fake CUDA runtime with that
    many GPUs (`FakeCuda`; the module's `cuda`), launches counted per GPU.

    Its NCCL (`nccl_binding`, what comm/nccl_comm.py takes in place of CuPy's) is the fake one, which refuses two
    members of a communicator on one GPU as NCCL does: every thread is on GPU 0 of one process unless it says
    otherwise (`nccl_binding.as_process(rank)`), so simulated ranks that reached NCCL would fail here as they fail
    on a GPU."""
    from fake_nccl import FakeNccl

    raw = type("RawModule", (RawModule,), {"runner": staticmethod(runner) if runner is not None else None})
    from oneflow_compat.kernels import cuda_blas

    extra = {}
    _GPUS["cuda"] = None
    _MEMORY.clear()
    if gpus is not None:
        extra["cuda"] = _GPUS["cuda"] = cuda = FakeCuda(gpus)
        where = lambda: (cuda.current, cuda.get_current_stream().ptr)  # noqa: E731
    else:
        where = lambda: (0, 0)  # noqa: E731 - one device, one stream
    lib = _Namespace(np.lib, MODULE_NAME + ".lib", stride_tricks=_stride_tricks())
    fake = _Namespace(np, MODULE_NAME, lib=lib, asarray=asarray, asanyarray=asarray, array=array, asnumpy=asnumpy,
                      ndarray=StrictArray, RawModule=raw, nccl_binding=DeviceNccl(FakeNccl()), **extra)
    cuda_blas._use_library(fake, FakeCublas(where), where)  # its products through cuBLAS by address, as on a GPU
    return fake


def install(monkeypatch, mode="auto", allow_syncs=False, gpus=None, runner=None):
    """Run "gpu" placements on a fresh fake module, CUDA reported usable, under ONEFLOW_COMPAT_DEVICE=`mode`, in a
    new default session; returns the module. `allow_syncs`: record device -> host synchronisations in
    `Syncs.seen` instead of refusing them. `gpus`: give the module a fake CUDA runtime with that many GPUs.
    `runner`: the raw kernels' runner (`module`), e.g. tests/cuda_host.py's: the CUDA sources run on the host."""
    import oneflow_compat as flow
    from oneflow_compat.backend import devices

    fake = module(runner=runner, gpus=gpus)
    monkeypatch.setattr(Syncs, "allowed", allow_syncs)
    monkeypatch.setattr(Syncs, "seen", [])
    monkeypatch.setattr(Syncs, "gets", 0)
    monkeypatch.setattr(Syncs, "at_launch", [])
    Launches.reset()
    monkeypatch.setattr(devices, "mode", lambda: mode)  # not the variable: child processes have no fake device
    monkeypatch.setattr(devices, "_CUDA", True)
    monkeypatch.setattr(devices, "_CUDA_REASON", None)
    monkeypatch.setattr(devices, "array_module", lambda tag: fake if tag == "gpu" else np)
    flow.clear_default_session()
    return fake


# --- as a pytest plugin -----------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def strict_gpu_everywhere(fresh_session, monkeypatch):
    """With `-p strict_device`: every test on the fake device, every placement a "gpu" one. The fake lives in this
    process only, so the child processes a test starts get the CPU explicitly (ONEFLOW_COMPAT_DEVICE=cpu in the
    environment they inherit): run as `ONEFLOW_COMPAT_DEVICE=gpu pytest -p strict_device`, they inherited "gpu"
    without the fake and failed on the machine's unusable CUDA (test_namespace's v0.5 scripts, the MPI ranks of
    test_optim_adaptive). This process reads its mode from the patched `devices.mode`, not the variable."""
    from oneflow_compat.backend import devices

    monkeypatch.setenv(devices.MODE_ENV, "cpu")
    install(monkeypatch, "gpu", allow_syncs=os.environ.get("STRICT_DEVICE_SYNCS") == "allow")


# the tests of the device switch itself (modes, notices, the GPU check's stages): the plugin replaces the switch
_SWITCH_TESTS = ("test_device_switch.py", "test_notices.py", "test_device_gpu_check.py")


def pytest_collection_modifyitems(config, items):
    """With `-p strict_device`: the device switch's own tests are skipped (the plugin fixes the switch)."""
    for item in items:
        if item.path.name in _SWITCH_TESTS:
            item.add_marker(pytest.mark.skip(reason="tests the device switch itself, which the fake device's "
                                                    "plugin replaces"))


def suite_gpu_or_fake(monkeypatch, allow_syncs=False):
    """The device module of "cuda"/"gpu" placements for a test that runs on a real GPU where the suite does: the
    suite's own module where it runs on a usable GPU (ONEFLOW_COMPAT_DEVICE=gpu: CuPy on the GPU run, or this fake
    through the plugin), else this fake device, installed."""
    from oneflow_compat.backend import devices

    if devices.mode() == "gpu" and devices.cuda_usable():
        return devices.array_module("gpu")
    return install(monkeypatch, "gpu", allow_syncs=allow_syncs)
