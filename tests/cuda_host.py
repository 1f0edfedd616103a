"""The project's CUDA sources compiled for the host and run thread after thread: their code checked on a CPU.

The sources keep rules that make this exact (kernels/cuda_source.py): grid-stride loops over independent items, no
shared memory, no barriers, only integer atomics. So a launch of grid × block threads equals calling the function
once per (block, thread) with `blockIdx`/`threadIdx` set, in any order. This module wraps a source in a small
header (CUDA's qualifiers made empty, the thread indices made globals, `__umul64hi` from a 128-bit product, the math
functions from <cmath>), adds one `emu_<name>(grid, block, args...)` loop per function, compiles it with the C++
compiler (`-ffp-contract=off`, as the sources are compiled with --fmad=false) and calls it through ctypes.

A cooperative module (its `block` set: reductions whose block of threads sums together through `__shared__`
memory and `__syncthreads`) runs each block's threads as coroutines (ucontext) switched at every barrier, the shared
arrays static (one block runs at a time, so they are the block's), at the full block size it is launched with.

`runner()` is a `strict_device.module(runner=...)` runner: the fake device then runs the real CUDA code instead of
the twins. `available()` says whether a C++ compiler is there (the tests skip without one).
"""
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

_HEADER = r"""
#include <cmath>
#include <cstdint>
#include <climits>
struct emu_dim3 { unsigned int x, y, z; };
static emu_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
using std::exp; using std::log; using std::sqrt; using std::fabs;
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * (unsigned __int128)b) >> 64);
}
static inline int atomicMin(int* p, int v) { int old = *p; if (v < old) *p = v; return old; }
static inline int atomicMax(int* p, int v) { int old = *p; if (v > old) *p = v; return old; }
"""

# a cooperative module's variant: a block's threads are coroutines (ucontext) on this one OS thread, switched at
# each __syncthreads by a round-robin scheduler (a round resumes every thread of the block once: all have reached the
# barrier before any passes it); shared arrays are static (one block runs at a time), the indices set at each switch
_COOPERATIVE_HEADER = _HEADER + r"""
#include <ucontext.h>
#include <functional>
#include <vector>
static ucontext_t emu_scheduler;
static std::vector<ucontext_t> emu_threads;
static unsigned int emu_current = 0;
static std::function<void()> emu_body;
static std::vector<char> emu_done;
static inline void __syncthreads() { swapcontext(&emu_threads[emu_current], &emu_scheduler); }
static void emu_trampoline() { emu_body(); emu_done[emu_current] = 1; }
static void emu_run_blocks(unsigned int grid, unsigned int block) {
    const size_t stack = 64 * 1024;
    std::vector<char> stacks(stack * block);
    emu_threads.assign(block, ucontext_t());
    for (unsigned int b = 0; b < grid; ++b) {
        emu_done.assign(block, 0);
        for (unsigned int t = 0; t < block; ++t) {
            getcontext(&emu_threads[t]);
            emu_threads[t].uc_stack.ss_sp = stacks.data() + t * stack;
            emu_threads[t].uc_stack.ss_size = stack;
            emu_threads[t].uc_link = &emu_scheduler;
            makecontext(&emu_threads[t], emu_trampoline, 0);
        }
        for (bool alive = true; alive;) {
            alive = false;
            for (unsigned int t = 0; t < block; ++t) {
                if (emu_done[t]) continue;
                emu_current = t; blockIdx.x = b; threadIdx.x = t;
                swapcontext(&emu_scheduler, &emu_threads[t]);
                alive = alive || !emu_done[t];
            }
        }
    }
}
#define __shared__ static
"""

_CTYPES = {
    np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double, np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.int64): ctypes.c_int64, np.dtype(np.uint64): ctypes.c_uint64, np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int8): ctypes.c_int8, np.dtype(np.uint8): ctypes.c_uint8, np.dtype(np.bool_): ctypes.c_bool,
}
_C_NAMES = {
    np.dtype(np.float32): "float", np.dtype(np.float64): "double", np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long", np.dtype(np.uint64): "unsigned long long", np.dtype(np.uint32): "unsigned int",
    np.dtype(np.int8): "signed char", np.dtype(np.uint8): "unsigned char", np.dtype(np.bool_): "bool",
}
_BUILD_DIR = os.path.join(tempfile.gettempdir(), "oneflow_compat_cuda_host")
_LIBRARIES = {}


def compiler():
    return shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++") or shutil.which("clang++")


def available():
    return compiler() is not None


def _wrappers(module):
    out = []
    for name, params in module.functions.items():
        decl = ", ".join("%s%s%s %s" % ("const " if p.const and p.pointer else "", _C_NAMES[p.dtype],
                                       "*" if p.pointer else "", p.name) for p in params)
        call = ", ".join(p.name for p in params)
        if module.block is not None:
            out.append('extern "C" void emu_%s(unsigned int emu_grid, unsigned int emu_block%s) {\n'
                       '    gridDim.x = emu_grid; blockDim.x = emu_block;\n'
                       '    emu_body = [=]() { %s(%s); };\n'
                       '    emu_run_blocks(emu_grid, emu_block);\n}\n'
                       % (name, ", " + decl if decl else "", name, call))
            continue
        out.append('extern "C" void emu_%s(unsigned int emu_grid, unsigned int emu_block%s) {\n'
                   '    gridDim.x = emu_grid; blockDim.x = emu_block;\n'
                   '    for (unsigned int emu_b = 0; emu_b < emu_grid; ++emu_b)\n'
                   '        for (unsigned int emu_t = 0; emu_t < emu_block; ++emu_t) {\n'
                   '        blockIdx.x = emu_b; threadIdx.x = emu_t; %s(%s);\n    }\n}\n'
                   % (name, ", " + decl if decl else "", name, call))
    return "\n".join(out)


def library(module):
    """The module's source compiled for the host (cached by its text), as a ctypes library."""
    header = _HEADER if module.block is None else _COOPERATIVE_HEADER
    source = header + module.code + "\n" + _wrappers(module)
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    lib = _LIBRARIES.get(digest)
    if lib is not None:
        return lib
    os.makedirs(_BUILD_DIR, exist_ok=True)
    path = os.path.join(_BUILD_DIR, "%s_%s.so" % (module.name, digest))
    if not os.path.exists(path):
        src = path[:-3] + ".cpp"
        with open(src, "w") as f:
            f.write(source)
        tmp = path + ".%d.tmp" % os.getpid()
        result = subprocess.run([compiler(), "-std=c++17", "-O1", "-ffp-contract=off", "-fno-fast-math", "-shared",
                                 "-fPIC", "-w", src, "-o", tmp], capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError("host compile of CUDA module %r failed:\n%s" % (module.name, result.stderr[-4000:]))
        os.replace(tmp, path)
    lib = _LIBRARIES[digest] = ctypes.CDLL(path)
    for name, params in module.functions.items():
        fn = getattr(lib, "emu_" + name)
        fn.argtypes = [ctypes.c_uint, ctypes.c_uint] + [ctypes.c_void_p if p.pointer else _CTYPES[p.dtype]
                                                        for p in params]
        fn.restype = None
    return lib


def run(module, function, grid, block, args):
    """A launch of `function` on host arrays (contiguous numpy arrays for the pointers)."""
    lib = library(module)
    converted = []
    for p, a in zip(module.functions[function], args):
        if p.pointer:
            if not (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.dtype == p.dtype):
                raise TypeError("%s: %s must be a C-contiguous %s array" % (function, p.name, p.dtype.name))
            converted.append(a.ctypes.data)
        else:
            converted.append(a.item() if hasattr(a, "item") else a)
    # the emulation runs every thread of the grid: a smaller grid (the loops stride over the rest) is the same; a
    # cooperative module's block keeps its size (its reductions are written for it)
    block = int(block[0]) if module.block is not None else min(int(block[0]), 64)
    getattr(lib, "emu_" + function)(min(int(grid[0]), 4), block, *converted)


def runner():
    return run
