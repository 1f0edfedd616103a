"""The project's CUDA C++ sources, declared in one place, each with a numpy twin of every function in it.

A `CudaModule` is one CUDA source (run through `cupy.RawModule`): its `extern "C" __global__` functions, and for
each a host twin — a numpy function taking the same arguments (device arrays as numpy arrays of the same shapes,
scalars as numpy scalars) and making the same writes. The twin is the reference of the function's parity test
(tests/test_cuda_kernels.py: CuPy against the twin where a GPU is present; the source itself compiled for the
host and run thread by thread against the twin where a C++ compiler is), and what the fake device of the tests
(tests/strict_device.py) runs for a launch.

Every module made here is listed in `MODULES`; tests/test_cuda_sources.py compiles each one for sm_90 through NVRTC
(no GPU needed) and fails when any other file of the package builds a RawKernel, RawModule, ElementwiseKernel or
ReductionKernel, so no CUDA code escapes the compile test.

The rules the sources keep (checked by the tests): every function is `extern "C" __global__ void`, its parameters
are pointers to arrays or scalars of the types in `_C_TYPES`, its loop is a grid-stride loop over independent
items, and it uses no shared memory and no barrier, so that a launch equals its threads run one after the other —
which is what makes the host emulation exact. Integer atomics (atomicMin/Max on int) are allowed: their result
does not depend on the order.

The one exception is a *cooperative* module (`block=` given): its functions are reductions where a block of
exactly that many threads sums one output together (static `__shared__` memory, `__syncthreads` in control flow
uniform over the block, a fixed-order tree: the result is the same every run and equals its twin's), the only
way to keep a reduction's threads many and its reads coalesced in one launch (a thread per output summing a long
row serially left an H100 with 3,200 threads, each 784 dependent reads). It is launched with its block size
only; its host emulation (tests/cuda_host.py) runs a block's threads as coroutines switched at each barrier.

Launching (`launch`): the arguments are checked against the C signature (an array's dtype against its pointer
type, C-contiguity; a scalar converted to the parameter's type), so a wrong argument is an error naming the
function and the parameter, on the fake device as on a GPU.
"""
import re

import numpy

MODULES = {}  # name -> CudaModule, in the order they were declared

# C parameter types -> numpy dtype (pointers: the dtype of the array pointed to)
_C_TYPES = {
    "float": numpy.float32, "double": numpy.float64, "int": numpy.int32, "long long": numpy.int64,
    "unsigned long long": numpy.uint64, "unsigned int": numpy.uint32, "signed char": numpy.int8,
    "unsigned char": numpy.uint8, "bool": numpy.bool_,
}
_FUNCTION = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
_PARAM = re.compile(r"^(const\s+)?([a-z ]+?)\s*(\*)?\s*(?:__restrict__\s*)?(\w+)$")

BLOCK = 256  # threads per block
MAX_BLOCKS = 8192  # grid-stride loops: more items than this many blocks cover loop


class Parameter:
    __slots__ = ("name", "dtype", "pointer", "const")

    def __init__(self, name, dtype, pointer, const):
        self.name, self.dtype, self.pointer, self.const = name, numpy.dtype(dtype), pointer, const


def parse_functions(code):
    """{function name: [Parameter]} of the `extern "C" __global__ void` functions of a source."""
    functions = {}
    for name, params in _FUNCTION.findall(code):
        parsed = []
        for text in (p.strip() for p in params.split(",") if p.strip()):
            m = _PARAM.match(" ".join(text.split()))
            if m is None or m.group(2).strip() not in _C_TYPES:
                raise ValueError("CUDA function %s: parameter %r is not one of the types %s (or a pointer to one)"
                                 % (name, text, ", ".join(sorted(_C_TYPES))))
            parsed.append(Parameter(m.group(4), _C_TYPES[m.group(2).strip()], bool(m.group(3)), bool(m.group(1))))
        functions[name] = parsed
    return functions


class CudaModule:
    """One CUDA source and the twins of its functions; see the module docstring."""

    def __init__(self, name, code, twins, options=("--std=c++17",), block=None):
        if name in MODULES:
            raise ValueError("CUDA module %r is declared twice" % name)
        self.name, self.code, self.options = name, code, tuple(options)
        self.block = block  # a cooperative module's block size (the module docstring), else None
        self.functions = parse_functions(code)
        if not self.functions:
            raise ValueError("CUDA module %r declares no extern \"C\" __global__ function" % name)
        missing, extra = set(self.functions) - set(twins), set(twins) - set(self.functions)
        if missing or extra:
            raise ValueError("CUDA module %r: functions without a twin %s, twins without a function %s"
                             % (name, sorted(missing), sorted(extra)))
        self.twins = dict(twins)
        self._loaded = {}  # (id of array module, device id) -> (array module, RawModule)
        self._functions = {}  # (id of array module, device id, function) -> (kernel, parameters, count, module)
        MODULES[name] = self

    def raw_module(self, xp, device=None):
        """The module as xp's RawModule on xp's current device (compiled by NVRTC on first use, cached; `device`:
        the current device's id, where the caller read it)."""
        key = (id(xp), current_device(xp) if device is None else device)
        found = self._loaded.get(key)
        if found is None:
            # (xp kept with it: its id cannot name another module later, the tests' fakes come and go)
            found = self._loaded[key] = (xp, xp.RawModule(code=self.code, options=self.options))
        return found[1]

    def _function(self, xp, function, device=None):
        """The launcher of `function` on xp's current device (`device`: its id, where the caller read it), cached:
        CuPy's `get_function` asks the driver for the function every time (cuModuleGetFunction), a launch's host
        time, and so would the signature's analysis below."""
        if device is None:
            device = current_device(xp)
        key = (id(xp), device, function)
        found = self._functions.get(key)
        if found is None:
            params = tuple(self.functions[function])
            kernel = self.raw_module(xp, device).get_function(function)
            found = self._functions[key] = _Launcher(self, function, kernel, params, xp)
        return found

    def launch(self, xp, function, items, *args, block=BLOCK):
        """Runs `function` over `items` independent items (its grid-stride loop covers them) on xp's current
        stream; `args` as the C signature says (see the module docstring).

        The host time of a launch is most of a step's on a GPU (the first GPU run: ~29 µs per launch, 23 per LeNet
        step), so the common case is checked with identity tests alone: every array argument of xp's array type
        with exactly the parameter's dtype object and C-contiguous (CuPy's own flag, no `flags` object made), and
        the scalars converted by the parameter's numpy type made once. Anything else takes the full check, which
        raises the errors naming the function and the parameter (and launches what is merely unusual: a dtype
        equal to the parameter's but not the same object)."""
        if self.block is not None and block != self.block:
            raise ValueError("CUDA module %s is cooperative: %s must be launched with block=%d, got %d"
                             % (self.name, function, self.block, block))
        key = id(xp)
        reader = _DEVICE_READERS.get(key)
        if reader is None or reader[0] is not xp:
            reader = _DEVICE_READERS[key] = (xp, _device_reader(xp))
        found = self._functions.get((key, 0 if reader[1] is None else reader[1](), function))
        if found is None:
            found = self._function(xp, function)
        found(items, args, block)

    def _checked(self, function, params, args):
        """`args` checked against the C signature (the errors of the module docstring), scalars converted."""
        if len(args) != len(params):
            raise TypeError("CUDA function %s takes %d arguments (%s), got %d" % (
                function, len(params), ", ".join(p.name for p in params), len(args)))
        converted = []
        host = _HOST_TYPES
        for p, a in zip(params, args):
            if p.pointer:
                if isinstance(a, host) or not hasattr(a, "dtype"):
                    raise TypeError("CUDA function %s: %s must be a device array, got %s" % (
                        function, p.name, type(a).__name__))
                if a.dtype != p.dtype:
                    raise TypeError("CUDA function %s: %s must be a %s array, got %s" % (
                        function, p.name, p.dtype.name, a.dtype.name))
                if not a.flags.c_contiguous:
                    raise ValueError("CUDA function %s: %s must be C-contiguous" % (function, p.name))
                converted.append(a)
            else:
                converted.append(p.dtype.type(a))
        return tuple(converted)


class _Launcher:
    """One function of a module on one device: its kernel, and what its fast check reads (see `CudaModule.launch`):
    the positions of its array parameters with their dtype objects, of its scalars with their numpy types."""
    __slots__ = ("module", "function", "kernel", "params", "count", "arrays", "scalars", "array_type", "contiguous")

    def __init__(self, module, function, kernel, params, xp):
        self.module, self.function, self.kernel, self.params = module, function, kernel, params
        self.count = len(params)
        self.arrays = tuple((i, p.dtype) for i, p in enumerate(params) if p.pointer)
        self.scalars = tuple((i, p.dtype.type) for i, p in enumerate(params) if not p.pointer)
        self.array_type = getattr(xp, "ndarray", None)
        # CuPy's arrays carry their C-contiguity as `_c_contiguous` (the flag `flags` is made from; the strict fake
        # device has it too): read directly, no Flags object per argument. Without it: the full check every time.
        self.contiguous = self.array_type is not None and hasattr(self.array_type, "_c_contiguous")

    def __call__(self, items, args, block):
        fast = self.contiguous and len(args) == self.count
        if fast:
            array_type = self.array_type
            for i, dtype in self.arrays:
                a = args[i]
                if a.__class__ is not array_type or a.dtype is not dtype or not a._c_contiguous:
                    fast = False
                    break
        if fast:
            if self.scalars:
                args = list(args)
                for i, convert in self.scalars:
                    args[i] = convert(args[i])
                args = tuple(args)
        else:
            args = self.module._checked(self.function, self.params, args)
        if items <= 0:
            return
        grid = -(-items // block)
        self.kernel((grid if grid < MAX_BLOCKS else MAX_BLOCKS,), (block,), args)


_HOST_TYPES = (numpy.ndarray, numpy.generic)


def current_device(xp):
    """The id of xp's current device (0 for a module without devices of its own, the tests' fake)."""
    cuda = getattr(xp, "cuda", None)
    return cuda.runtime.getDevice() if cuda is not None else 0


_DEVICE_READERS = {}  # id(array module) -> (the module, `_device_reader(module)`)


def _device_reader(xp):
    """A function giving xp's current device (`CudaModule.launch` keeps it per module): None where that is always
    0 — no devices of its own, or one device visible (the count is fixed for a process's life): no runtime call per
    launch; else the runtime's `getDevice`."""
    cuda = getattr(xp, "cuda", None)
    if cuda is None or cuda.runtime.getDeviceCount() <= 1:
        return None
    return cuda.runtime.getDevice
