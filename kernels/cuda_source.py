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

    def __init__(self, name, code, twins, options=("--std=c++17",)):
        if name in MODULES:
            raise ValueError("CUDA module %r is declared twice" % name)
        self.name, self.code, self.options = name, code, tuple(options)
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

    def raw_module(self, xp):
        """The module as xp's RawModule on xp's current device (compiled by NVRTC on first use, cached)."""
        key = (id(xp), current_device(xp))
        found = self._loaded.get(key)
        if found is None:
            # (xp kept with it: its id cannot name another module later, the tests' fakes come and go)
            found = self._loaded[key] = (xp, xp.RawModule(code=self.code, options=self.options))
        return found[1]

    def _function(self, xp, function):
        """(the kernel of `function` in xp's RawModule on xp's current device, its parameters), cached: CuPy's
        `get_function` asks the driver for the function every time (cuModuleGetFunction), a launch's host time."""
        key = (id(xp), current_device(xp), function)
        found = self._functions.get(key)
        if found is None:
            params = self.functions[function]
            kernel = self.raw_module(xp).get_function(function)
            found = self._functions[key] = (kernel, tuple(params), len(params), xp)
        return found

    def launch(self, xp, function, items, *args, block=BLOCK):
        """Runs `function` over `items` independent items (its grid-stride loop covers them) on xp's current
        stream; `args` as the C signature says (see the module docstring)."""
        kernel, params, count, _ = self._function(xp, function)
        if len(args) != count:
            raise TypeError("CUDA function %s takes %d arguments (%s), got %d" % (
                function, count, ", ".join(p.name for p in params), len(args)))
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
        if items <= 0:
            return
        grid = min(MAX_BLOCKS, -(-int(items) // block))
        kernel((grid,), (block,), tuple(converted))


_HOST_TYPES = (numpy.ndarray, numpy.generic)


def current_device(xp):
    """The id of xp's current device (0 for a module without devices of its own, the tests' fake)."""
    cuda = getattr(xp, "cuda", None)
    return cuda.runtime.getDevice() if cuda is not None else 0
